"""The kernel timeline (kernels/trace.py): each traced launch's programs mark their entry, PDL
pass and exit (in the interpreter, ticks of a counter: an order, not a time), outputs stay
bit-identical, and bench/timeline.py accounts a whole fused forward from it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from specpilot.config import EngineConfig
from specpilot.engine.generator import Generator
from specpilot.kernels import elementwise, linear, trace
from specpilot.kernels.common import INTERPRETED
from tests.test_kernels import BF16, DEVICE, _tiny_pair

pytest.importorskip("triton")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
timeline_bench = pytest.importorskip("timeline")


def _inputs(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(3, 256, generator=g).to(DEVICE, BF16)
    w = torch.randn(64, 256, generator=g).to(DEVICE, BF16)
    return x, w, torch.randn(256, generator=g).to(DEVICE, BF16)


def test_traced_launches_mark_entry_pass_and_exit_in_order() -> None:
    x, w, nw = _inputs(0)
    plain = (linear.skinny_linear(x, w), elementwise.rmsnorm(x, nw, 1e-6))
    with trace.tracing(DEVICE, eager=True) as timeline:  # eager: on CUDA, outside a capture
        timeline.section = "one"
        traced = (linear.skinny_linear(x, w), elementwise.rmsnorm(x, nw, 1e-6))
        timeline.section = "two"
        elementwise.silu_mul(torch.cat([x, x], dim=1).repeat(15, 1))  # 45 programs: > LANES
    assert all(torch.equal(a, b) for a, b in zip(plain, traced, strict=True))
    rows = timeline.read()
    assert [r["kernel"] for r in rows] == ["linear", "rmsnorm", "silu_mul"]
    assert [r["kernel"] for r in timeline.read("one")] == ["linear", "rmsnorm"]
    for r in rows:
        assert r["exited"] == r["programs"] > 0
        assert r["entry"] <= r["go"] <= r["exit"]
        assert INTERPRETED <= (r["entry"] < r["go"] < r["exit"])  # the interpreter: ticks
    for before, after in zip(rows, rows[1:], strict=False):  # launched plainly, one by one
        assert before["exit"] <= after["entry"]
    assert rows[0]["bytes"] == w.nbytes and (rows[0]["n"], rows[0]["k"]) == (64, 256)
    assert rows[2]["programs"] == 45 > trace.LANES
    timeline.reset()
    assert all(r["exited"] == 0 for r in timeline.read())


def test_no_trace_arguments_outside_tracing() -> None:
    x, w, _ = _inputs(1)
    assert trace.arguments(x, "linear", 4) == {}
    with trace.tracing(DEVICE, eager=True) as timeline:
        assert trace.arguments(x, "linear", 4, bytes=8)["TRACE"] == (2 if INTERPRETED else 1)
    assert timeline.launches == [
        {"section": "", "kernel": "linear", "programs": 4, "captured": False, "bytes": 8}
    ]
    assert trace.arguments(x, "linear", 4) == {}
    with trace.tracing(DEVICE, capacity=1, eager=True):
        linear.skinny_linear(x, w)
        with pytest.raises(RuntimeError, match="holds 1 launches"):
            linear.skinny_linear(x, w)


def test_summary_accounts_runs_and_gaps() -> None:
    def launch(kernel: str, entry: int, go: int, exit_: int, nbytes: int = 0) -> dict:
        return dict(kernel=kernel, entry=entry, go=go, exit=exit_, exited=1, bytes=nbytes)

    rows = [
        launch("linear", 0, 2, 10, 100),
        launch("rope", 5, 12, 15),  # resident early (PDL), passed its wait 2 after the exit
        launch("linear", 16, 16, 30, 50),  # launched plainly: no wait
    ]
    s = trace.summary(rows)
    assert s["span"] == 30
    assert [r["run"] for r in s["launches"]] == [8, 3, 14]
    assert [r["gap"] for r in s["launches"]] == [2, 2, 1]
    assert [r["wait"] for r in s["launches"]] == [2, 7, 0]
    assert s["kinds"]["linear"] == {"launches": 2, "run": 22, "gap": 3, "bytes": 150}
    with pytest.raises(ValueError, match="did not run"):
        trace.summary([*rows, launch("merge", 31, 32, 0) | {"exited": 0}])
    with pytest.raises(ValueError, match="no launches"):
        trace.summary([])


@pytest.mark.parametrize("name", ["decode", "verify"])
def test_timeline_bench_accounts_a_fused_forward(tmp_path, name: str) -> None:
    """bench/timeline.py's trace_runs / median_launches / account on a fused forward of the tiny
    target (interpreter, no graphs): every kernel of the forward is traced and ran all its
    programs; the account adds up."""
    target, drafter, _ = _tiny_pair(tmp_path)
    config = EngineConfig(kernels="triton", block_size=16, cuda_graphs=True)  # CPU: no graphs
    gen = Generator(target, drafter, config, DEVICE, BF16)
    context = 20
    gen._buffers_for("target", 1, context + 32)
    gen._buffers_for("draft", 1, context + 32)
    fn = timeline_bench.forwards(gen, context)[name]
    runs, times = timeline_bench.trace_runs(gen, name, fn, replays=3)
    assert times == {}  # not asked for
    assert len(runs) == (3 if DEVICE.type == "cuda" else 1)  # CUDA: graph replays
    launches = timeline_bench.median_launches(runs)
    kinds = {r["kernel"] for r in launches}
    assert {"linear", "rope", "attention"} <= kinds
    layers = target.config.num_layers
    assert sum(r["kernel"] == "rope" for r in launches) == layers
    assert all(r["exited"] == r["programs"] for r in launches)
    a = timeline_bench.account(launches, kv_bytes_per_layer=1000, bandwidth=1e12)
    assert a["run_us"] + a["gap_us"] == pytest.approx(a["span_us"])
    assert a["kinds"]["attention"]["bytes"] == 1000 * layers
    shapes = a["shapes"]
    assert sum(sh["launches"] for sh in shapes.values()) == sum(
        r["kernel"] == "linear" for r in launches
    )
    rows = 1 if name == "decode" else 16
    assert all(key.startswith(f"linear {rows}x") for key in shapes)


def test_timeline_variants_are_engine_speed_arms(tmp_path, capsys) -> None:
    """bench/timeline.py --variants: engine_speed's --paired arms (one or more), each prepared
    in turn (its tiles file and switches in place, the defaults back after); without it, one
    variant of --tiles and --pdl; both at once is a usage error. The component table prints
    each arm's kinds and shapes."""
    import argparse
    import json

    from specpilot.kernels import attention

    entry = {"kernel": "bf16", "rows": 1, "n": 4096, "k": 4096, "tile": {"BLOCK_N": 4}}
    tiles_file = tmp_path / "t.json"
    tiles_file.write_text(json.dumps({"tiles": [entry]}))
    parser = argparse.ArgumentParser()
    es_parser = timeline_bench.engine_speed.build_parser()

    def args(**kw) -> argparse.Namespace:
        return argparse.Namespace(**({"variants": "", "tiles": "", "pdl": "auto"} | kw))

    plain = timeline_bench.variant_options(args(pdl="off"), parser, es_parser)
    assert list(plain) == ["default"] and plain["default"].pdl == "off"
    one = timeline_bench.variant_options(
        args(variants="t|--tiles " + str(tiles_file)), parser, es_parser
    )
    assert list(one) == ["t"]
    spec = f"base|;t|--tiles {tiles_file};w|--attention-min-keys-wide 256"
    variants = timeline_bench.variant_options(args(variants=spec), parser, es_parser)
    es = timeline_bench.engine_speed
    prepare, restore = es.arm_preparers(variants, es_parser)
    before = (linear.MEASURED_TILES.get((1, 4096, 4096)), attention.WIDE_MIN_SPLIT_KEYS)
    prepare("t")
    assert linear.MEASURED_TILES[(1, 4096, 4096)] == {"BLOCK_N": 4}
    prepare("w")
    assert attention.WIDE_MIN_SPLIT_KEYS == 256
    assert linear.MEASURED_TILES.get((1, 4096, 4096)) == before[0]
    restore()
    assert (linear.MEASURED_TILES.get((1, 4096, 4096)), attention.WIDE_MIN_SPLIT_KEYS) == before
    for bad in (args(variants=spec, tiles=str(tiles_file)), args(variants="a|--contexts 9")):
        with pytest.raises(SystemExit):
            timeline_bench.variant_options(bad, parser, es_parser)
    kinds = {"merge": {"run_us": 59.5}, "attention": {"run_us": 126.5}}
    shapes = {"linear 1x4096x4096": {"run_us_each": 9.89}}
    timeline_bench.print_components({"bf16 t": {"decode": {"kinds": kinds, "shapes": shapes}}})
    out = capsys.readouterr().out
    assert out == "bf16 t decode: attention 126.5 merge 59.5 | each: 1x4096x4096 9.89\n"
