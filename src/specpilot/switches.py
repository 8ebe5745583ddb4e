"""Kernel and model switches: the process-wide knobs (UPPER_CASE integer or boolean attributes of
specpilot's modules, e.g. kernels.w12_tc.VERIFY) that `--switch MODULE.NAME=INT` sets on the
command line (`generate`, `serve`) and in the benchmark scripts (bench/engine_speed.py).

A switch changes how the engine computes, never what it emits: every one is a mechanism whose
tokens are the target's own argmax (the tests hold each against transformers' greedy outputs).
They are module globals read when kernels launch or graphs are captured, so they hold for the
whole process: set them before the engine is built. A switch's own rule (a module's
SWITCH_RULES entry: (check, what it must be)) is applied when it is parsed, so that a bad value
fails before any model loads.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from specpilot.errors import ConfigError


def parse(text: str) -> tuple[str, str, int]:
    """ "MODULE.NAME=INT" -> (module path under specpilot, name, value), checked against the
    module: an existing UPPER_CASE integer or boolean switch, 0 or 1 for a boolean, and within
    the module's SWITCH_RULES rule where it has one. ConfigError otherwise."""
    target, sep, value = text.partition("=")
    path, _, name = target.rpartition(".")
    try:
        module = importlib.import_module(f"specpilot.{path}") if sep and path else None
        number = int(value)
    except (ImportError, ValueError):
        module = None
    now = getattr(module, name, None) if module and name.isupper() else None
    if not isinstance(now, int):
        raise ConfigError(
            f"--switch wants MODULE.NAME=INT, an integer switch of specpilot.MODULE (for "
            f"example kernels.w12_tc.VERIFY=0): {text!r}"
        )
    if isinstance(now, bool) and number not in (0, 1):
        raise ConfigError(f"--switch {target} is a boolean: 0 or 1, got {value}")
    ok, rule = getattr(module, "SWITCH_RULES", {}).get(name, (None, ""))
    if ok is not None and not ok(number):
        raise ConfigError(f"--switch {target} must be {rule}, got {value}")
    return path, name, number


def values(switches: list[tuple[str, str, int]]) -> dict[tuple[ModuleType, str], int]:
    """parse()'s triples -> {(module, name): the value as the switch's own type (bool or
    int)}, for apply()."""
    out: dict = {}
    for path, name, value in switches:
        module = importlib.import_module(f"specpilot.{path}")
        out[module, name] = type(getattr(module, name))(value)
    return out


def apply(switches: dict[tuple[ModuleType, str], object]) -> None:
    """Sets each (module, name) to its value."""
    for (module, name), value in switches.items():
        setattr(module, name, value)


def from_texts(texts: list[str] | tuple[str, ...]) -> dict[str, int]:
    """Parses and applies "MODULE.NAME=INT" texts (the command line's --switch); returns them
    as {"module.NAME": value} for the command's JSON line. ConfigError on a bad one, before any
    is applied."""
    parsed = [parse(t) for t in texts]
    apply(values(parsed))
    return {f"{path}.{name}": value for path, name, value in parsed}
