"""`specpilot score FILE...`: accuracy of bench outputs, per file and dataset.

gsm8k / math500: the extracted final answer (answers.py) against the reference. humaneval / mbpp:
the code extracted from the output, run with the dataset's tests in the sandbox (sandbox.py);
passing means exit code 0 within the limits. mt-bench is not scored (it needs a judge model).
Each bench record carries its problem's reference, so scoring needs no dataset access.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specpilot.errors import ConfigError
from specpilot.measure.answers import equivalent, extract_answer
from specpilot.measure.datasets import Problem
from specpilot.measure.sandbox import SandboxLimits, isolation, run_python

_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
MATH = ("gsm8k", "math500")
CODE = ("humaneval", "mbpp")


@dataclass(frozen=True)
class DatasetScore:
    file: str
    dataset: str
    num_scored: int
    num_correct: int
    note: str = ""

    @property
    def accuracy(self) -> float | None:
        return self.num_correct / self.num_scored if self.num_scored else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "dataset": self.dataset,
            "num_scored": self.num_scored,
            "num_correct": self.num_correct,
            "accuracy": self.accuracy,
            "note": self.note,
        }


def extract_code(text: str, entry_point: str | None = None) -> str:
    """The code of an output: the fenced block that defines `entry_point` (else the first block
    with a def, else the first block); the whole text when nothing is fenced."""
    blocks = _FENCE.findall(text)
    if not blocks:
        return text
    if entry_point:
        defining = [b for b in blocks if re.search(rf"def\s+{re.escape(entry_point)}\s*\(", b)]
        if defining:
            return defining[0]
    with_def = [b for b in blocks if "def " in b]
    return (with_def or blocks)[0]


def code_program(problem: Problem, output: str) -> str:
    """The script that passes (exit 0) iff the output's code passes the problem's tests."""
    code = extract_code(output, problem.entry_point)
    prefix = problem.code_prompt or ""
    if problem.dataset == "humaneval":
        if not re.search(rf"def\s+{re.escape(problem.entry_point or '')}\s*\(", code):
            code = prefix + code  # a completion of the function header
        else:  # a whole function: keep the header's imports (typing, math) in front
            imports = [ln for ln in prefix.splitlines() if ln.startswith(("import ", "from "))]
            code = "\n".join(imports) + "\n" + code
        return f"{code}\n\n{problem.test_code}\n\ncheck({problem.entry_point})\n"
    return f"{prefix}\n{code}\n\n{problem.test_code}\n"


def score_records(
    records: list[dict[str, Any]], limits: SandboxLimits, jobs: int
) -> list[bool | None]:
    """Per record: True/False, or None for records that cannot be scored (mt-bench)."""
    results: list[bool | None] = [None] * len(records)
    code_jobs: dict[int, str] = {}
    for i, rec in enumerate(records):
        problem = Problem(**rec["problem"])
        text = rec.get("output_text") or ""
        if problem.dataset in MATH:
            results[i] = equivalent(extract_answer(text, problem.dataset), problem.answer or "")
        elif problem.dataset in CODE:
            code_jobs[i] = code_program(problem, text)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        runs = pool.map(lambda src: run_python(src, limits), code_jobs.values())
        for i, run in zip(code_jobs, runs):
            results[i] = run.passed
    return results


def score_file(path: Path, limits: SandboxLimits, jobs: int) -> list[DatasetScore]:
    if not path.is_file():
        raise ConfigError(f"{path}: file not found")
    try:
        data = json.loads(path.read_text())
        records = data["records"]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise ConfigError(f"{path}: not a specpilot bench JSON file (no 'records')") from None
    if not records:
        raise ConfigError(f"{path}: no records")
    results = score_records(records, limits, jobs)
    by_dataset: dict[str, list[bool | None]] = {}
    for rec, ok in zip(records, results):
        by_dataset.setdefault(rec["problem"]["dataset"], []).append(ok)
    scores = []
    for dataset, oks in by_dataset.items():
        if dataset == "mt-bench":
            note = "not scored (needs a judge model)"
            scores.append(DatasetScore(str(path), dataset, 0, 0, note))
        else:
            scores.append(DatasetScore(str(path), dataset, len(oks), sum(bool(o) for o in oks)))
    return scores


def cmd_score(args: argparse.Namespace) -> int:
    limits = SandboxLimits(timeout_s=args.timeout)
    jobs = args.jobs or (os.cpu_count() or 1)
    scores = [s for path in args.files for s in score_file(path, limits, jobs)]
    iso = isolation().describe() if any(s.dataset in CODE for s in scores) else None
    print(f"{'file':40} {'dataset':10} {'correct':>9} {'accuracy':>9}")
    for s in scores:
        acc = f"{s.accuracy:9.3f}" if s.accuracy is not None else f"{'-':>9}"
        counts = f"{s.num_correct}/{s.num_scored}"
        print(f"{Path(s.file).name[-40:]:40} {s.dataset:10} {counts:>9} {acc} {s.note}")
    if iso:
        print(f"code ran in the sandbox: {iso}")
    print(json.dumps({"scores": [s.to_dict() for s in scores], "sandbox": iso}))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("score", help="accuracy of bench outputs (math answers, code tests)")
    p.add_argument("files", nargs="+", type=Path, help="JSON files written by specpilot bench")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per program")
    p.add_argument("--jobs", type=int, default=0, help="programs run at once (0: CPU count)")
