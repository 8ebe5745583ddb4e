"""Every Triton kernel compiles for the H200 (sm_90), checked here without a GPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")


def test_kernels_compile_for_hopper() -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    script = Path(__file__).with_name("compile_kernels.py")
    done = subprocess.run(
        [sys.executable, str(script), "--engine-only"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("ok ") >= 20


def test_ptxas_audit_reads_every_kernel_of_a_forward(tmp_path) -> None:
    """bench/ptxas_audit.py (no GPU): every multiply of a Qwen3-8B layer, bf16 and W12, and the
    small kernels of a one-row forward compile for sm_90 and ptxas reports their resources; with
    --attention-variants, the split kernel under the attention switches too."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "audit.json"
    done = subprocess.run(
        [sys.executable, str(root / "bench" / "ptxas_audit.py"), "--rows", "1",
         "--attention-variants", "--out", str(out)],
        env=env, capture_output=True, text=True, timeout=600, cwd=root / "bench",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    import json

    rows = json.loads(out.read_text())["rows"]
    kernels = {(r["kind"], r["kernel"].split()[0]) for r in rows}
    for name in ("qkv", "o", "gate_up", "down", "lm_head"):
        assert {("bf16", name), ("w12", name)} <= kernels
    assert {("small", n) for n in ("attention", "rope", "rmsnorm", "silu_mul")} <= kernels
    variants = {r["kernel"] for r in rows if r["kind"] == "attn"}
    assert {"split q16 s32 causal", "split q16 s64 noncausal", "merge 4 rows a program"} <= variants
    for r in rows:
        assert "error" not in r, r
        assert 0 < r["registers"] <= 255 and r["programs_per_sm"] >= 1 and r["warps"] >= 1
        if r["kind"] in ("bf16", "w12"):  # the grid's waves on 132 SMs
            assert r["waves"] == pytest.approx(r["programs"] / (132 * r["programs_per_sm"]))
