"""A hub id whose snapshot is in the local Hugging Face cache loads offline, pinned or not."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specpilot.cli import main

REPO = "specpilot-tests/tiny-qwen3"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
ARGS = ["--prompt-ids", "1,2,3", "--max-new-tokens", "5", "--json", "--ignore-eos"]
ARGS += ["--device", "cpu"]


def build_cache(cache: Path, repo: str, commit: str, checkpoint: Path) -> Path:
    """The layout huggingface_hub writes: blobs/<sha256>, snapshots/<commit>/<file> -> blob,
    refs/main holding the commit."""
    org, name = repo.split("/")
    root = cache / f"models--{org}--{name}"
    (root / "blobs").mkdir(parents=True)
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text(commit)
    snapshot = root / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for file in sorted(checkpoint.iterdir()):
        data = file.read_bytes()
        blob = root / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (snapshot / file.name).symlink_to(os.path.relpath(blob, snapshot))
    return snapshot


@pytest.fixture(scope="module")
def hub_cache(tmp_path_factory, qwen_dir) -> Path:
    home = tmp_path_factory.mktemp("hf-home")
    snapshot = build_cache(home / "hub", REPO, COMMIT, qwen_dir)
    assert (snapshot / "config.json").is_file() and (snapshot / "model.safetensors").is_file()
    return home


@pytest.fixture(scope="module")
def local_output_ids(qwen_dir) -> list[int]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["generate", "--target", str(qwen_dir), *ARGS]) == 0
    ids = json.loads(out.getvalue().strip().splitlines()[-1])["output_ids"]
    assert len(ids) == 5
    return ids


@pytest.mark.parametrize("pin", ["", "@" + COMMIT], ids=["unpinned", "commit"])
def test_cached_hub_id_loads_offline(tmp_path, hub_cache, local_output_ids, pin):
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", HF_HOME=str(hub_cache), HF_HUB_CACHE=str(hub_cache / "hub"))
    proc = subprocess.run(
        [sys.executable, "-m", "specpilot.cli", "generate", "--target", REPO + pin, *ARGS],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,  # no local directory named like the repo id
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout.strip().splitlines()[-1])
    assert record["target"] == REPO + pin
    assert record["output_ids"] == local_output_ids
