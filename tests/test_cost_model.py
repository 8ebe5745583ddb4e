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


def test_choose_matrices_on_runs_88_and_119(capsys, monkeypatch) -> None:
    """--matrices on the committed one-row (run 88) and 16-row (run 119) H200 tables: each
    matrix's W12-minus-bf16 time is the table's difference times its count (36 layers, + 5
    drafter layers in a speculative step; the LM head once, twice), and it picks the matrices
    that run 120 measured: gate_up and the LM head for speculative decoding, those with down
    and q|k|v for AR (o ties at one row and loses at 16)."""
    paths = [
        str(ROOT / "bench/results/2026-12-01-w12-loop-wide-run88/w12-loop-wide.json"),
        str(ROOT / "bench/results/2026-12-01-w12-split-in-run119/sweep16.json"),
    ]
    table = cost_model.load_tables(paths)
    out = cost_model.choose_matrices(table, draft_layers=5)
    o16 = next(r["us"] for r in table["results"] if (r["m"], r["shape"]) == (16, "o"))
    assert out["w12_minus_bf16"]["o"]["spec_step_us"] == pytest.approx(
        (o16["w12"] - o16["skinny"]) * (36 + 5)
    )
    head1 = next(r["us"] for r in table["results"] if (r["m"], r["shape"]) == (1, "lm_head"))
    # run 88 swept a faster one-row LM head tile (adopted in MEASURED_TILES): its time counts
    assert head1["w12_best"] < head1["w12"]
    assert out["w12_minus_bf16"]["lm_head"]["ar_us"] == pytest.approx(
        head1["w12_best"] - head1["skinny"]
    )
    assert out["w12_matrices"] == {
        "ar": "down,gate_up,lm_head,qkv",
        "speculative": "gate_up,lm_head",
    }
    with pytest.raises(ValueError, match="no complete set of shapes at 1 rows"):
        cost_model.choose_matrices(cost_model.load_tables(paths[1:]), draft_layers=5)
    monkeypatch.setattr(sys, "argv", ["cost_model", "--matrices", ",".join(paths)])
    cost_model.main()
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["w12_matrices"]["speculative"] == "gate_up,lm_head"


def test_choose_matrices_on_the_llama_sweeps_of_run_123() -> None:
    """On run 123's Llama-3.1-8B sweeps the rule tiles' gate|up lost to bf16 (63.9 us against
    ~50 at one row); its swept winner, which MEASURED_TILES adopted, wins, so the choice is the
    one run 124 measured best or level: gate_up and the LM head for speculative decoding, with
    down and q|k|v for AR."""
    run = ROOT / "bench/results/2026-12-03-w12-llama-tiles-run123"
    table = cost_model.load_tables([str(run / "sweep1.json"), str(run / "sweep16.json")])
    out = cost_model.choose_matrices(table, draft_layers=5)
    gate_up = next(r["us"] for r in table["results"] if (r["m"], r["shape"]) == (1, "gate_up"))
    assert gate_up["w12"] > gate_up["skinny"] > gate_up["w12_best"]
    assert out["w12_matrices"] == {
        "ar": "down,gate_up,lm_head,qkv",
        "speculative": "gate_up,lm_head",
    }


def test_timeline_losses_on_run_134(capsys, monkeypatch) -> None:
    """--timeline on run 134's kernel timeline: each forward's components lose exactly its span
    less its bound, the multiplies' bounds are their bytes over the bandwidth, and the list runs
    from the furthest component down."""
    path = ROOT / "bench/results/2026-12-04-new-defaults-run134/timeline.json"
    report = json.loads(path.read_text())
    out = cost_model.timeline_losses(report, 4.26e12)
    assert set(out) == {"bf16", "w12:auto"}
    for arm, forwards in out.items():
        assert set(forwards) == {"decode", "verify", "draft"}
        for name, f in forwards.items():
            assert f["lost_us"] == pytest.approx(f["span_us"] - f["bound_us"], rel=1e-6)
            lost = [r["lost_us"] for r in f["components"]]
            assert lost == sorted(lost, reverse=True)
            assert f["furthest_from_bound"] == f["components"][0]["component"]
            shapes = report["arms"][arm][name]["shapes"]
            for r in f["components"]:
                if r["component"] in shapes:
                    assert r["bound_us"] == pytest.approx(shapes[r["component"]]["bytes"] / 4.26e6)
    decode = {r["component"]: r for r in out["bf16"]["decode"]["components"]}
    assert decode["linear 1x4096x4096"]["lost_us"] > 0  # o: 9.9 us a launch against 7.9
    assert decode["rmsnorm"]["bound_us"] == 0
    monkeypatch.setattr(sys, "argv", ["cost_model.py", str(path), "--timeline"])
    cost_model.main()
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("bf16 decode: span 4.191 ms")
    assert json.loads(lines[-1]) == json.loads(json.dumps(out))


def test_timeline_deltas_on_run_142(capsys, monkeypatch) -> None:
    """--timeline --against base on run 142's variants: each variant's back-to-back change from
    the base of its own weights, and the components that moved most (the RMSNorm on 1 warp:
    the down multiply after it +130 us, more than the norm's own +34); the base repeated moves
    ~0; a base the report lacks is a usage error."""
    path = ROOT / "bench/results/2026-12-05-variants-run142/timeline-variants-1024.json.gz"
    report = cost_model.read_report(path)
    losses = cost_model.timeline_losses(report, 4.26e12)
    out = cost_model.timeline_deltas(report, losses, "base")
    assert set(out) == {f"bf16 {v}" for v in ("n1", "n2", "re", "n1re", "base2")}
    n1 = out["bf16 n1"]["decode"]
    assert n1["change"] == pytest.approx(0.0399, abs=5e-4)
    assert [c["component"] for c in n1["components"][:2]] == ["linear 1x4096x12288", "rmsnorm"]
    moved = [abs(c["change_us"]) for c in n1["components"]]
    assert moved == sorted(moved, reverse=True)
    base = report["arms"]["bf16 base"]["decode"]
    assert n1["change_ms"] == pytest.approx(
        report["arms"]["bf16 n1"]["decode"]["untraced_back_to_back_ms"]
        - base["untraced_back_to_back_ms"]
    )
    assert all(abs(f["change"]) < 1e-3 for f in out["bf16 base2"].values())
    assert out["bf16 re"]["verify"]["components"][0]["component"] == "rope"
    with pytest.raises(ValueError, match="no arm 'bf16 nope'"):
        cost_model.timeline_deltas(report, losses, "nope")
    argv = ["cost_model.py", str(path), "--timeline", "--against", "base"]
    monkeypatch.setattr(sys, "argv", argv)
    cost_model.main()
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("bf16 n1 decode: 4.302 ms back to back (+3.99% against base)")
    assert json.loads(lines[-1]) == json.loads(json.dumps(out))
    monkeypatch.setattr(sys, "argv", ["cost_model.py", str(path), "--against", "base"])
    with pytest.raises(SystemExit):
        cost_model.main()


def test_timeline_gaps_on_run_145(capsys, monkeypatch) -> None:
    """--timeline --gaps on run 145's variants: with WIDE_PDL off ("old") the verify's
    16-row multiplies enter after the launch before has exited (plain launches, ~1.35 us
    gaps), with the defaults ("new") early with ~0.5 us; groups sorted by their gap's sum; the
    gaps of a forward's groups never exceed its own."""
    path = ROOT / "bench/results/2026-12-06-wide-defaults-run145/timeline-variants-1024.json.gz"
    out = cost_model.timeline_gaps(cost_model.read_report(path), most=100)

    def group(arm: str, launch: str, after: str) -> dict:
        rows = out[arm]["verify"]["groups"]
        return next(r for r in rows if (r["launch"], r["after"]) == (launch, after))

    o = ("linear 16x4096x4096", "merge")
    assert group("bf16 old", *o)["early"] == 0 and group("bf16 old", *o)["mean_gap_us"] > 1.2
    assert group("bf16 new", *o)["early"] == 1 and group("bf16 new", *o)["mean_gap_us"] < 0.7
    assert group("bf16 old", *o)["launches"] == 36
    for forwards in out.values():
        for f in forwards.values():
            sums = [r["gap_us"] for r in f["groups"]]
            assert sums == sorted(sums, reverse=True)
            assert sum(sums) <= f["gap_us"] + 1e-6
    monkeypatch.setattr(sys, "argv", ["cost_model.py", "--timeline", "--gaps", str(path)])
    cost_model.main()
    assert "linear 16x4096x4096          after merge" in capsys.readouterr().out
    monkeypatch.setattr(sys, "argv", ["cost_model.py", "--gaps", str(path)])
    with pytest.raises(SystemExit):
        cost_model.main()


def test_loop_losses_on_run_152(capsys, monkeypatch) -> None:
    """--loop on run 152's engine_speed report: a pipelined step's parts (our kernels against
    the step's floor, PyTorch's work by name and the idle time at bound 0) add up to its span,
    sorted by what each loses; a report without loop profiles is a usage error."""
    path = ROOT / "bench/results/2026-12-07-tokens-run152/engine-loop.json"
    ((name, step),) = cost_model.loop_losses(cost_model.read_report(path)).items()
    assert name == "qwen3-8b ctx 1024 replay" and step["steps"] == 18
    parts = step["components"]
    assert sum(r["us"] for r in parts) == pytest.approx(step["span_us"], rel=0.005)
    assert [r["lost_us"] for r in parts] == sorted((r["lost_us"] for r in parts), reverse=True)
    assert step["furthest_from_bound"] == "our kernels (the forwards)"
    assert step["lost_us"] == pytest.approx(step["span_us"] - step["bound_us"])
    monkeypatch.setattr(sys, "argv", ["cost_model.py", "--loop", str(path)])
    cost_model.main()
    assert (
        "a pipelined step 5.455 ms on the device (18 steps), bound 4.398" in capsys.readouterr().out
    )
    empty = ROOT / "bench/results/2026-12-07-engine-32k-run149/engine-32768.json"
    monkeypatch.setattr(sys, "argv", ["cost_model.py", "--loop", str(empty)])
    with pytest.raises(SystemExit):
        cost_model.main()


def test_timeline_losses_against_the_read_floors_of_run_227(capsys, monkeypatch) -> None:
    """--timeline --floors: each multiply's bound is its bytes over the measured read floor of
    its shape and format (run 227: a pure read of q|k|v's bf16 bytes at 3.81 TB/s, o's at
    3.63; W12's own), other components keep theirs, and the argument needs --timeline."""
    floors_path = ROOT / "bench/results/2026-12-20-read-run227/read-floor.json"
    floors = cost_model.read_floors(json.loads(floors_path.read_text()))
    assert floors[(4096, 4096, "bf16")] == pytest.approx(3.63e12, rel=0.01)
    assert floors[(6144, 4096, "w12")] < floors[(6144, 4096, "bf16")]
    assert (
        cost_model.multiply_bandwidth("w12_linear 16x4096x4096", 4.26e12, floors)
        == (floors[(4096, 4096, "w12")])
    )
    assert cost_model.multiply_bandwidth("linear 1x10240x4096", 4.26e12, floors) == 4.26e12
    path = ROOT / "bench/results/2026-12-20-verify-run229/timeline-variants-1024.json.gz"
    report = cost_model.read_report(str(path))
    plain = cost_model.timeline_losses(report, 4.26e12)
    out = cost_model.timeline_losses(report, 4.26e12, floors)
    shapes = report["arms"]["bf16 base"]["decode"]["shapes"]
    rows = {r["component"]: r for r in out["bf16 base"]["decode"]["components"]}
    o = rows["linear 1x4096x4096"]
    assert o["bound_us"] == pytest.approx(shapes["linear 1x4096x4096"]["bytes"] / 3.63e6, rel=0.01)
    before = {r["component"]: r for r in plain["bf16 base"]["decode"]["components"]}
    assert o["lost_us"] < before["linear 1x4096x4096"]["lost_us"]  # the floor is slower
    assert rows["rope"] == before["rope"] and rows["attention"] == before["attention"]
    monkeypatch.setattr(sys, "argv", ["cost_model.py", str(path), "--floors", str(floors_path)])
    with pytest.raises(SystemExit):
        cost_model.main()
    argv = ["cost_model.py", str(path), "--timeline", "--floors", str(floors_path)]
    monkeypatch.setattr(sys, "argv", argv)
    cost_model.main()
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == json.loads(
        json.dumps(out)
    )


def test_timeline_ceiling_on_run_306(capsys, monkeypatch) -> None:
    """--timeline --ceiling on run 306's kernel timeline (H100, bf16 and W12 every matrix): at
    the report's own bandwidth nothing is scaled (base's span is its measured span, "now" is
    W12's); the ceiling reads W12's multiply bytes at bf16's bytes a second with bf16's rest
    (decode 1.276x there, 1.260x at the H200's 4.26 TB/s); base against itself is 1.0x; a step
    is the verify plus bf16's draft; an arm the report lacks is a usage error."""
    path = ROOT / "bench/results/2026-12-05-trace-run306/timeline-compiled.json.gz"
    report = cost_model.read_report(path)
    w12 = "w12:qkv,o,gate_up,down"
    own = report["copy_bandwidth_tb_s"]
    out = cost_model.timeline_ceiling(report, "bf16", w12, own)
    bf16, w = report["arms"]["bf16"], report["arms"][w12]
    assert out["decode"]["base_us"] == pytest.approx(bf16["decode"]["span_us"])
    assert out["decode"]["now_us"] == pytest.approx(w["decode"]["span_us"])
    kinds = bf16["decode"]["kinds"]["bf16_row"], w["decode"]["kinds"]["w12_row"]
    rest = bf16["decode"]["span_us"] - kinds[0]["run_us"]
    ceiling = kinds[1]["bytes"] * kinds[0]["run_us"] / kinds[0]["bytes"] + rest
    assert out["decode"]["ceiling_us"] == pytest.approx(ceiling)
    assert out["decode"]["ceiling"] == pytest.approx(1.276, abs=1e-3)
    draft = bf16["draft"]["span_us"]
    assert out["step"]["base_us"] == pytest.approx(bf16["verify"]["span_us"] + draft)
    same = cost_model.timeline_ceiling(report, "bf16", "bf16", 4.26)
    assert all(same[f]["now"] == pytest.approx(1.0) for f in ("decode", "verify", "step"))
    assert all(same[f]["ceiling"] == pytest.approx(1.0) for f in ("decode", "verify", "step"))
    h200 = cost_model.timeline_ceiling(report, "bf16", w12, 4.26)
    assert h200["decode"]["ceiling"] == pytest.approx(1.260, abs=1e-3)
    assert h200["step"]["ceiling"] == pytest.approx(1.219, abs=1e-3)
    assert h200["decode"]["base_us"] < out["decode"]["base_us"]  # a faster GPU's multiplies
    with pytest.raises(ValueError, match="no arm 'w12:nope'"):
        cost_model.timeline_ceiling(report, "bf16", "w12:nope", 4.26)
    monkeypatch.setattr(
        sys, "argv", ["cost_model.py", str(path), "--timeline", "--ceiling", f"bf16,{w12}"]
    )
    cost_model.main()
    lines = capsys.readouterr().out.strip().splitlines()
    assert "(1.260x)" in lines[1] and lines[1].lstrip().startswith("decode")
    assert json.loads(lines[-1]) == json.loads(json.dumps(h200))
