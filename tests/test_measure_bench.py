"""`specpilot bench` against a real HTTP server.

NOTE: the server here is `tests/standin_server.py` (FastAPI + uvicorn in a subprocess), a stand-in
until `specpilot serve` lands; then these tests should also run against our own server.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from specpilot.cli import main
from specpilot.measure.datasets import load_problems
from tests.standin_server import answer_words


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    # The listening socket is made here and handed to uvicorn (--fd): no port is guessed.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--fd", str(sock.fileno()), "--log-level", "warning",
         "standin_server:app"],
        cwd=Path(__file__).parent,
        pass_fds=[sock.fileno()],
    )  # fmt: skip
    sock.close()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            time.sleep(0.1)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_bench_records_stream(server_url: str, tmp_path: Path, capsys) -> None:
    out = tmp_path / "run.json"
    argv = ["bench", "--url", server_url, "--dataset", "humaneval", "--num-prompts", "4"]
    argv += ["--concurrency", "2", "--warmup", "1", "--max-tokens", "64", "--out", str(out)]
    assert main(argv) == 0
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["num_requests"] == 4 and last["num_errors"] == 0
    assert last["model"] == "standin-model" and last["mean_acceptance_length"] == 2.5

    data = json.loads(out.read_text())
    meta = data["metadata"]
    assert meta["dataset"] == "humaneval" and meta["revision"] == "1.0.3"
    assert meta["url"] == server_url + "/v1" and "api_key" not in meta["args"]
    problems = load_problems("humaneval", 4)
    assert [r["problem"]["problem_id"] for r in data["records"]] == [p.problem_id for p in problems]
    for rec, problem in zip(data["records"], problems):
        words = answer_words(problem.prompt)
        assert rec["output_text"] == " ".join(words)
        assert rec["output_ids"] == list(range(100, 100 + len(words)))
        assert rec["num_output_tokens"] == len(words)
        assert rec["acceptance_length"] == 2.5 and rec["num_spec_steps"] == 3
        assert rec["finish_reason"] == "stop" and rec["error"] is None
        assert 0 < rec["ttft_s"] < rec["latency_s"]


def test_bench_unreachable_server_is_one_line(tmp_path: Path, capsys) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    argv = ["bench", "--url", f"http://127.0.0.1:{port}", "--dataset", "humaneval"]
    argv += ["--num-prompts", "1", "--model", "m", "--out", str(tmp_path / "x.json")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("specpilot bench: error: cannot reach"), err
