"""Shared fixtures: tiny random checkpoints of both target families and DFlash drafters."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

# Without a GPU the kernels run in Triton's CPU interpreter (tests/test_kernels.py), which must
# be chosen before anything imports triton or a kernel module, whichever test file comes first
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from specpilot.models.synth import (  # noqa: E402
    draft_hf_config,
    synth_drafter,
    synth_target,
    target_hf_config,
)

if os.environ.get("PYTEST_XDIST_WORKER"):  # one core for each of the workers (README: -n 2)
    torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _block_merge_in_the_interpreter(request, monkeypatch) -> None:
    """Tests marked block_merge (whole generations or forwards of the kernels engine) merge
    the attention's key slices in programs of up to 64 query rows (attention.MERGE_PROGRAM_ROWS)
    when the kernels run in the interpreter, which runs programs one after another: one-row
    merge programs took ~40% of such a test's time (session 41's profile). Both merges are
    checked against exact attention in tests/test_kernels.py's test_decode_attention*; on a GPU
    the engine's own default runs."""
    if request.node.get_closest_marker("block_merge") and not torch.cuda.is_available():
        from specpilot.kernels import attention

        monkeypatch.setattr(attention, "MERGE_PROGRAM_ROWS", 64)


# Shapes that exercise every knob: tied/untied, GQA 1:1, 2:1, 4:1, head_dim != hidden/heads,
# llama3 rope scaling, odd vocabulary sizes.
SHAPES: dict[str, dict] = {
    "qwen3-tied-gqa2-hd24": dict(
        arch="qwen3",
        vocab_size=301,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=24,
        tie_word_embeddings=True,
    ),
    "qwen3-untied-mha": dict(
        arch="qwen3",
        vocab_size=263,
        num_attention_heads=4,
        num_key_value_heads=4,
        head_dim=16,
        tie_word_embeddings=False,
        rope_theta=1000000.0,
    ),
    "llama-untied-gqa4-llama3rope": dict(
        arch="llama",
        vocab_size=317,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=16,
        tie_word_embeddings=False,
        num_hidden_layers=3,
        rope_scaling=dict(
            rope_type="llama3",
            factor=4.0,
            low_freq_factor=1.0,
            high_freq_factor=4.0,
            original_max_position_embeddings=32,
        ),
    ),
    "llama-tied-gqa4-hd12": dict(
        arch="llama",
        vocab_size=293,
        num_attention_heads=8,
        num_key_value_heads=2,
        head_dim=12,
        tie_word_embeddings=True,
    ),
}
INIT_STD = 0.3  # large enough that greedy outputs vary from token to token


def make_target(out: Path, shape: str, seed: int = 0) -> Path:
    spec = dict(SHAPES[shape])
    arch = spec.pop("arch")
    hf = target_hf_config(arch, "tiny", eos_token_id=None, **spec)
    synth_target(out, hf, seed=seed, dtype=torch.float32, std=INIT_STD)
    return out


def make_drafter(out: Path, target: Path, seed: int = 1, **overrides) -> Path:
    import json

    hf = draft_hf_config("tiny", json.loads((target / "config.json").read_text()), **overrides)
    synth_drafter(out, hf, seed=seed, dtype=torch.float32, std=INIT_STD)
    return out


@pytest.fixture(scope="session", params=list(SHAPES))
def target_dir(request, tmp_path_factory) -> Path:
    return make_target(tmp_path_factory.mktemp(request.param), request.param)


@pytest.fixture(scope="session")
def qwen_dir(tmp_path_factory) -> Path:
    return make_target(tmp_path_factory.mktemp("qwen"), "qwen3-tied-gqa2-hd24")


@pytest.fixture(scope="session")
def qwen_drafter_dir(tmp_path_factory, qwen_dir) -> Path:
    return make_drafter(tmp_path_factory.mktemp("qwen-draft"), qwen_dir)


@pytest.fixture(scope="session")
def spec_server(tmp_path_factory, qwen_dir, qwen_drafter_dir):
    """`specpilot serve` with the tiny target and drafter: 8 slots, a queue of 64."""
    from tests.serving import start_server

    server = start_server(
        "--target", str(qwen_dir), "--draft", str(qwen_drafter_dir),
        "--max-running", "8", "--max-queue", "64", "--served-model-name", "tiny-spec",
    )  # fmt: skip
    yield server
    server.stop()


@contextlib.contextmanager
def gluon_on(where: str, pdl: bool = False):
    """Where a Gluon kernel's test runs -> its device: "cuda" (a Hopper GPU; skipped without
    one) or "emulated" (kernels/emulate.py on the CPU, 3 SMs so that persistent programs take
    several tiles each). pdl: emulated launches take programmatic dependent launch's branches
    (launch.pdl says PDL; a GPU's launches say what its settings say)."""
    if where == "cuda":
        if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9:
            pytest.skip("Gluon warp specialization: CUDA sm_90+ only")
        yield "cuda"
        return
    from unittest import mock

    from specpilot.kernels import emulate, launch

    if not launch.interpreted():  # run 302: the Triton kernels an emulated case calls
        pytest.skip("emulated cases run where Triton interprets (CPU machines: CI)")

    pdl_on = mock.patch.object(launch, "pdl", lambda *a, **k: dict(PDL=True, launch_pdl=True))
    with emulate.gluon(sms=3), pdl_on if pdl else contextlib.nullcontext():
        yield "cpu"


def traced_rows(device: str, calls) -> list[dict]:
    """calls() plainly, then under kernels/trace.tracing (eager): the same bits both times; ->
    the timeline's rows, checked: every launch's programs all exited, each program's entry, go
    and exit in that order (the emulator and interpreter: ticks of a counter), the launches one
    after the other."""
    from specpilot.kernels import trace

    plain = calls()
    with trace.tracing(torch.device(device), eager=True) as timeline:
        traced = calls()
    if device == "cuda":
        torch.cuda.synchronize()
    rows = timeline.read()
    assert all(torch.equal(a, b) for a, b in zip(plain, traced, strict=True))
    for r in rows:
        assert r["exited"] == r["programs"] > 0
        assert r["entry"] <= r["go"] <= r["exit"]
    for before, after in zip(rows, rows[1:], strict=False):
        assert before["exit"] <= after["entry"]
    return rows


def compiled_json(code: str):
    """The JSON that `code` prints last, run in a process without the interpreter (so that
    Triton compiles for sm_90a there, kernels/aot.py) with the tests' imports (bench/ too)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    bench = str(Path(__file__).resolve().parents[1] / "bench")
    env["PYTHONPATH"] = os.pathsep.join([*sys.path, bench])
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])
