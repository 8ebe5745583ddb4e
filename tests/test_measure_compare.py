"""`specpilot compare speed`: paired bootstrap intervals on synthetic data with a known answer,
output identity, and the command end to end (markdown + PNG)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from specpilot.cli import main
from specpilot.measure.compare import bootstrap_speedup, first_divergence, identity


def _arms(n: int, speedup: float, noise: float, seed: int = 1):
    """Per-prompt tokens and times: `new` is `speedup` times as fast as `base`, with noise."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(50, 500, n).astype(float)
    time_base = tokens / 40.0 * rng.lognormal(0, noise, n)
    time_new = tokens / (40.0 * speedup) * rng.lognormal(0, noise, n)
    return tokens, time_new, tokens, time_base


def test_bootstrap_contains_truth_excludes_one() -> None:
    s = bootstrap_speedup(*_arms(200, 2.0, 0.3))
    assert s.low < 2.0 < s.high
    assert s.low > 1.0
    assert s.low < s.ratio < s.high and s.high - s.low < 0.5


def test_bootstrap_no_speedup_contains_one() -> None:
    s = bootstrap_speedup(*_arms(200, 1.0, 0.3))
    assert s.low < 1.0 < s.high


def test_bootstrap_is_seeded_and_paired() -> None:
    arms = _arms(50, 1.5, 0.2)
    assert bootstrap_speedup(*arms, seed=3) == bootstrap_speedup(*arms, seed=3)
    # identical arms: every resample gives exactly 1 (pairing keeps prompts together)
    tokens, t, _, _ = arms
    same = bootstrap_speedup(tokens, t, tokens, t)
    assert same.low == same.ratio == same.high == 1.0


def test_first_divergence_and_identity() -> None:
    assert first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert first_divergence([1, 2, 3], [1, 9, 3]) == 1
    assert first_divergence([1, 2], [1, 2, 3]) == 2
    assert first_divergence("abc", "abd") == 2
    final = [{"output_ids": [1, 2, 3]}, {"output_ids": [1, 2, 4]}, {"output_ids": [5]}]
    other = [{"output_ids": [1, 2, 3]}, {"output_ids": [1, 2, 3]}, {"output_ids": [6]}]
    ident = identity(final, other)
    assert ident.unit == "tokens" and ident.num_divergent == 2
    assert abs(ident.identical_share - 1 / 3) < 1e-9
    assert ident.mean_first_divergence == 1.0 and ident.min_first_divergence == 0
    no_ids = [{"output_ids": None, "output_text": "ab"}]
    assert identity(no_ids, [{"output_ids": [1], "output_text": "ab"}]).unit == "chars"


def _bench_file(path: Path, tokens, times, ids=None, accept=None) -> Path:
    records = []
    for i, (n, t) in enumerate(zip(tokens, times)):
        records.append(
            {
                "problem": {"dataset": "gsm8k", "problem_id": f"gsm8k/{i}"},
                "output_text": f"answer {i}",
                "output_ids": ids[i] if ids else None,
                "num_output_tokens": int(n),
                "latency_s": float(t),
                "acceptance_length": accept,
                "error": None,
            }
        )
    path.write_text(json.dumps({"metadata": {}, "records": records}))
    return path


def test_compare_speed_command(tmp_path: Path, capsys) -> None:
    tokens, t_new, _, t_base = _arms(60, 2.0, 0.2)
    ids = [[i, i + 1] for i in range(60)]
    final_ids = [x if i % 4 else [x[0], -1] for i, x in enumerate(ids)]
    ar = _bench_file(tmp_path / "ar.json", tokens, t_base, ids)
    stock = _bench_file(tmp_path / "stock.json", tokens, t_base * 1.1, ids)
    final = _bench_file(tmp_path / "final.json", tokens, t_new, final_ids, accept=3.0)
    md, png = tmp_path / "speed.md", tmp_path / "speed.png"
    argv = ["compare", "speed", "--ar", str(ar), "--stock", str(stock), "--final", str(final)]
    assert main(argv + ["--out-md", str(md), "--out-png", str(png)]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    (row,) = out["comparisons"]
    assert row["dataset"] == "gsm8k" and row["num_prompts"] == 60
    vs_ar = row["speedup"]["final/ar"]
    assert vs_ar["low"] < 2.0 < vs_ar["high"] and vs_ar["low"] > 1.0
    assert row["speedup"]["final/stock"]["ratio"] > vs_ar["ratio"]
    assert row["identity"]["final vs ar"]["identical_share"] == 0.75
    assert row["identity"]["final vs ar"]["min_first_divergence"] == 1
    assert row["mean_acceptance_length"] == 3.0
    assert "| gsm8k | 60 |" in md.read_text()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_bad_file_is_one_line(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["compare", "speed", "--ar", str(bad), "--final", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a specpilot bench JSON file" in err[0]
