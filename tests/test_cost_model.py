"""bench/cost_model.py on a committed H200 report (run 78): its sums are the table's, and the
engine's AR steps are those sums plus the same rest in both arms."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
cost_model = pytest.importorskip("cost_model")
RUN = ROOT / "bench/results/2026-11-30-w12-one-row-run78"


def load(name: str) -> dict:
    return json.loads((RUN / name).read_text())


def test_step_model_on_run78() -> None:
    table, e2e = load("w12-table.json"), load("w12-e2e.json")["end_to_end"]
    out = cost_model.step_model(table, e2e, rows=1, bandwidth=4.26e12, fraction=0.85)
    bf16, w12 = out["arms"]["bf16"], out["arms"]["w12"]
    qkv = next(r for r in table["results"] if r["m"] == 1 and r["shape"] == "qkv")
    assert bf16["shapes"]["qkv"]["us"] == qkv["us"]["skinny"]
    assert bf16["shapes"]["qkv"]["bytes"] == pytest.approx(2 * 6144 * 4096)
    assert w12["shapes"]["lm_head"]["per_forward"] == 1
    manual = sum(r["us"]["w12"] * (1 if r["shape"] == "lm_head" else 36)
                 for r in table["results"] if r["m"] == 1)  # fmt: skip
    assert w12["multiplies_us"] == pytest.approx(manual)
    # W12 reads 3/4 of the bytes, but its multiplies a token sum to only ~1.09x less time; what
    # is not a multiply costs the same in both arms
    assert out["w12_over_bf16"]["multiplies"] == pytest.approx(1.09, abs=0.01)
    assert w12["rest_us"] == pytest.approx(bf16["rest_us"], rel=0.05)
    at = out["w12_at_fraction"]
    assert out["w12_over_bf16"]["measured_step"] < at["over_bf16"] < 1.25
    full = cost_model.step_model(table, e2e, rows=1, bandwidth=4.26e12, fraction=1.0)
    assert full["w12_at_fraction"]["step_us"] < at["step_us"]


def test_step_model_needs_every_shape() -> None:
    with pytest.raises(ValueError, match="no complete set of shapes at 4 rows"):
        cost_model.step_model(load("w12-table.json"), None, rows=4, bandwidth=4.26e12,
                              fraction=0.85)  # fmt: skip
    out = cost_model.step_model(load("w12-table.json"), None, rows=16, bandwidth=4.26e12,
                                fraction=0.85)  # fmt: skip
    assert "w12_over_bf16" not in out and "step_us" not in out["arms"]["w12"]
