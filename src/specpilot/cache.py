"""Where SpecPilot keeps files between runs: $SPECPILOT_CACHE, else ~/.cache/specpilot.

The one place the variable is read; a value that cannot be a cache directory fails loudly.
"""

from __future__ import annotations

import os
from pathlib import Path

from specpilot.errors import ConfigError

CACHE_ENV = "SPECPILOT_CACHE"


def cache_dir() -> Path:
    """The cache root (not created here)."""
    value = os.environ.get(CACHE_ENV)
    if value is None:
        return Path.home() / ".cache" / "specpilot"
    path = Path(value).expanduser()
    if not value.strip() or (path.exists() and not path.is_dir()):
        raise ConfigError(f"{CACHE_ENV}={value!r} is not a directory")
    return path
