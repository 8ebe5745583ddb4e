"""The H200 benches' measuring functions run end to end on the tiny model on CPU (wall-clock
timing, fp32), so that a device call never dies on bookkeeping. Nothing here asserts a time."""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import pytest
import torch

from specpilot.engine.llm import LLM
from tests.conftest import compiled_json

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
engine_speed = pytest.importorskip("engine_speed")


@pytest.fixture(scope="module")
def gen(qwen_dir, qwen_drafter_dir):
    return LLM(qwen_dir, draft=str(qwen_drafter_dir), device="cpu", dtype="float32").generator


def test_measure_context_and_pipelined(gen) -> None:
    r = engine_speed.measure_context(gen, context=24, new_tokens=12, bw=1e11, taus=(3.0, 6.55))
    assert set(r["speculative"]) == {"3.0", "6.55"} and r["ar"]["tok_s"] > 0
    assert r["ar"]["token_forcing"]["passed"]
    assert r["speculative"]["6.55"]["identical_to_ar"]  # fp32: same arithmetic
    assert "output_ids_for_check" not in r["speculative"]["6.55"]
    assert r["speculative_pipelined"]["identical_to_unpipelined"]
    assert r["speculative_pipelined"]["ar_tok_s"] > 0
    for arm in (r["ar"], r["speculative"]["6.55"], r["speculative_pipelined"]):
        assert len(arm["tok_s_runs"]) == engine_speed.REPEATS
        assert 0 < arm["tok_s_min"] <= arm["tok_s"] <= arm["tok_s_max"]
    assert set(r["forward"]) == set(engine_speed.WIDTHS)


def test_timeline_sums_counts_overlap_once_and_idle_by_pair() -> None:
    """engine_speed.timeline_sums on a hand-made device timeline: our kernels overlapping under
    PDL count once, the idle time goes to the pair around it, the span runs to the last end."""
    rows = [
        (0.0, 10.0, "_skinny_kernel"),
        (8.0, 20.0, "_rmsnorm_kernel"),  # overlaps: 10 more us of ours
        (23.0, 25.0, "void at::native::reduce_kernel"),  # 3 us idle after the norm
        (25.0, 26.0, "Memcpy DtoH"),
        (30.0, 40.0, "_skinny_kernel"),  # 4 us idle after the copy
        (31.0, 33.0, "_merge_kernel"),  # inside the multiply: no idle, no extra busy time
    ]
    s = engine_speed.timeline_sums(rows)
    assert (s["span"], s["ours"], s["others"], s["idle"]) == (40.0, 30.0, 3.0, 7.0)
    assert (s["ours_n"], s["others_n"]) == (4, 2)
    assert s["pairs"] == {
        "_rmsnorm_kernel -> void at::native::reduce_kernel": [3.0, 1],
        "Memcpy DtoH -> _skinny_kernel": [4.0, 1],
    }
    assert s["others_by_name"] == {
        "void at::native::reduce_kernel": [2.0, 1],
        "Memcpy DtoH": [1.0, 1],
    }
    assert engine_speed.timeline_sums([])["span"] == 0.0


def test_loop_profile_runs(gen) -> None:
    """On the CPU the profile has no device activity (no step copies to count steps by): no
    steps, sums of 0, the run's own steps and wall time."""
    r = engine_speed.loop_profile(gen, context=24, new_tokens=12)
    assert r["steps"] == 0 and r["run_steps"] >= 1 and r["unprofiled_wall_us_per_step"] > 0
    assert r["us_per_step"]["span"] == 0.0 and r["largest_idle_per_step"] == {}
    assert r["proposals"] == "replay"
    engine_speed.print_loop_profile("tiny", r)
    own = engine_speed.loop_profile(gen, context=24, new_tokens=12, replay=False)
    assert own["proposals"] == "drafter" and own["tau"] is None and own["run_steps"] >= 1
    ar = engine_speed.loop_profile(gen, context=24, new_tokens=12, speculative=False)
    assert ar["proposals"] == "none (AR)" and ar["tau"] is None and ar["run_steps"] == 11


def test_host_profile(gen) -> None:
    r = engine_speed.host_profile(gen, context=24, new_tokens=12)
    assert r["steps"] >= 1 and r["wall_ms_per_step"] > 0
    ops = r["top_self_cpu_us_per_step"]
    assert 0 < len(ops) <= 20 and all(v["calls"] > 0 for v in ops.values())
    assert not set(ops) & set(engine_speed.BLOCKING_CALLS)
    times = [v["us"] for v in ops.values()]
    assert times == sorted(times, reverse=True)
    assert isinstance(r["host_us_per_step"], float)  # net of every operator: noise may lower it
    # one target and one draft forward a step (each embeds once): the AR reference run and the
    # earlier passes of run_replay are not profiled (they made ~6 more a step in run 81)
    assert r["calls_per_step"]["aten::embedding"] <= 2


def test_paired_rounds(gen) -> None:
    calls = []
    arms = {name: (gen, lambda name=name: calls.append(name)) for name in ("base", "other")}
    r = engine_speed.paired_rounds(arms, context=20, new_tokens=10, rounds=3)
    assert r["base"] == "base" and r["rounds"] == 3 and r["drafter"] == "replay"
    # each arm's switches go in before its warm-up and before each of its rounds (the untimed
    # round -1 first), base first in even rounds and second in odd ones
    settle = ["other", "base"]
    assert calls == ["base", "other", *settle, "base", "other", "other", "base", "base", "other"]
    for name in arms:
        for mode in ("ar", "spec"):
            arm = r["arms"][name][mode]
            assert len(arm["tok_s_runs"]) == 3 and arm["identical_to_base"]  # the same engine
    for mode in ("ar", "spec"):
        up = r["arms"]["other"][mode]["over_base"]
        assert up["low"] <= up["ratio"] <= up["high"]
    assert "over_base" not in r["arms"]["base"]["ar"]
    (line,) = engine_speed.paired_lines(r)
    assert line.startswith("other/base: AR ") and "spec@6.55 " in line
    with pytest.raises(ValueError, match=">= 2 rounds"):
        engine_speed.paired_rounds(arms, context=20, new_tokens=10, rounds=1)
    assert r["batch"] == 1


def test_paired_rounds_of_several_sequences(gen, monkeypatch) -> None:
    """--paired-batch: every run decodes `batch` fresh sequences (different prompts), and its
    rate is their tokens after the first, summed, over the run's decode time."""
    seen = []

    def decoded(gen, fresh, *rest):
        seqs = fresh()
        seen.append([s.prompt_ids for s in seqs])
        for i, s in enumerate(seqs):
            s.output_ids = list(range(5 + i))  # 4 and 5 tokens after the first
            s.decode_time_s = 0.5
        return seqs

    monkeypatch.setattr(engine_speed, "ar_decode", decoded)
    monkeypatch.setattr(engine_speed, "replay_decode", decoded)
    monkeypatch.setattr(gen, "run", lambda *a, **k: None)  # the warm-up
    monkeypatch.setattr(gen, "run_replay", lambda fresh, *a, **k: (fresh(), 1))
    arms = {name: (gen, lambda: None) for name in ("base", "other")}
    r = engine_speed.paired_rounds(arms, context=20, new_tokens=10, rounds=2, batch=2)
    assert r["batch"] == 2
    for name in arms:
        for mode in ("ar", "spec"):
            assert r["arms"][name][mode]["tok_s_runs"] == [18.0, 18.0]  # (4 + 5) / 0.5
    assert all(len(p) == 2 and p[0] != p[1] for p in seen)


def test_kernel_profile(gen, capsys) -> None:
    own, gen.use_graphs = gen.use_graphs, True  # eager while profiling, then put back
    try:
        prof = engine_speed.kernel_profile(gen, context=24)
        assert gen.use_graphs is True
    finally:
        gen.use_graphs = own
    assert set(prof) == {"decode", "verify", "draft", "step", "by_multiply"}
    for name in ("decode", "verify", "draft", "step"):
        times = [r["us_per_forward"] for r in prof[name].values()]
        assert times and times == sorted(times, reverse=True) and min(times) > 0
    assert prof["by_multiply"] == {"decode": {}, "verify": {}, "draft": {}}  # no fused path here
    # the step's own work around its forwards: the accept's cumulative product, the argmaxes
    assert {"aten::cumprod", "aten::argmax"} <= set(prof["step"])
    engine_speed.print_kernel_profile("tiny", 24, prof)
    printed = capsys.readouterr().out
    assert printed.count("forward (eager, ctx 24)") == 4
    assert printed.count("multiplies: none (no fused path here)") == 3


def test_measure_batched(gen) -> None:
    rows = engine_speed.measure_batched(gen, context=20, new_tokens=10, batches=[3])
    (r,) = rows
    assert r["batch"] == 3 and r["rows_identical_to_ar"] == 3
    assert r["spec_tok_s"] > 0 and r["verify_forward_ms"] > 0 and r["measured_tau"] >= 1
    # the first FORCED_ROWS rows of each run checked by token forcing (all passed: fp32)
    for mode in ("ar", "spec"):
        checks = r["token_forcing"][mode]
        assert len(checks) == engine_speed.FORCED_ROWS
        assert all(c["passed"] and c["checked"] == 10 for c in checks)
    assert engine_speed.forcing_text(r["token_forcing"]) == ", forcing AR/spec True/True"
    failed = {"ar": [{"passed": True}], "spec": [{"passed": True}, {"passed": False}]}
    assert engine_speed.forcing_text(failed) == ", forcing AR/spec True/False"
    assert engine_speed.forcing_text(None) == ""


def test_measure_prefill(gen) -> None:
    own = gen.config
    r = engine_speed.measure_prefill(gen, tokens=20, reps=2)
    assert r["tokens"] == 20 and "fused" not in r  # no Triton kernels on the CPU
    for part in (r["torch"]["target"], r["torch"]["target_capture"], r["draft"]):
        assert part["wall_ms"] > 0 and part["device_ms"] > 0
    assert gen.config is own  # the generator's own config is back


def test_linear_bytes_counts_w12_arrays(qwen_dir) -> None:
    """The bandwidth floors of w12_speed.py count W12 linears by their packed arrays."""
    from specpilot.formats.w12_engine import convert_model

    target = LLM(qwen_dir, device="cpu", dtype="bfloat16").target
    before = engine_speed.linear_bytes(target)
    report = convert_model(target)
    assert report.num_tensors > 0
    after = engine_speed.linear_bytes(target)
    assert after == before - report.bf16_bytes + report.w12_bytes


def test_cycled_weights_are_l2_cold_copies(monkeypatch) -> None:
    """kernel_sweep.cycled: cold, the calls take equal copies in turn, together at least the
    L2-clearing size (a tensor and a W12Weight, each array its own storage); warm, one."""
    import torch

    from specpilot.formats import w12

    kernel_sweep = pytest.importorskip("kernel_sweep")
    monkeypatch.setattr(kernel_sweep, "L2_CLEAR_BYTES", 10_000)
    w = torch.randn(16, 96).to(torch.bfloat16)  # 3,072 bytes: 4 copies
    nxt = kernel_sweep.cycled(w)
    got = [nxt() for _ in range(8)]
    assert got[0] is w and got[4] is w and got[1] is got[5]
    assert len({t.data_ptr() for t in got}) == 4 and all(torch.equal(t, w) for t in got)
    packed = w12.encode(w)
    nxt = kernel_sweep.cycled(packed)
    copies = [nxt() for _ in range(12)]
    distinct = {c.low.data_ptr() for c in copies}
    assert 2 <= len(distinct) < 12 and copies[len(distinct)] is packed
    assert all(torch.equal(w12.decode(c), w) for c in copies)
    assert kernel_sweep.cycled(w, cold=False)() is w


def _chunk_sizes(m: int, configs: list[dict]) -> int:  # a precompile worker (spawned)
    return len(configs) if m == 16 else 0


def test_precompile_spreads_the_tiles_over_workers(capsys) -> None:
    """kernel_sweep.precompile hands every configuration to exactly one worker process;
    compile_each counts the ones that launch."""
    kernel_sweep = pytest.importorskip("kernel_sweep")
    configs = [dict(BLOCK_N=n) for n in range(7)]
    kernel_sweep.precompile(_chunk_sizes, 16, configs, workers=3)
    assert "precompiled 7 of 7 tiles" in capsys.readouterr().out

    def launch_one(cfg: dict) -> None:
        if cfg["BLOCK_N"] % 2:
            raise RuntimeError("does not fit")

    assert kernel_sweep.compile_each(launch_one, configs) == 4


def test_left_grid_takes_tensor_core_tiles_with_the_weights_left(tmp_path) -> None:
    """kernel_sweep --grid left: LEFT_GRID's tensor-core tiles, each W_LEFT, on 16-row tiles
    for one row too; such a tile goes into a tiles file that EngineConfig.tiles reads."""
    from specpilot.kernels import tiles

    kernel_sweep = pytest.importorskip("kernel_sweep")
    left = kernel_sweep.grid_candidates(16, "left")
    assert len(left) == len(list(itertools.product(*kernel_sweep.LEFT_GRID)))
    assert all(c["W_LEFT"] and c["USE_DOT"] and c["BLOCK_M"] == 16 for c in left)
    assert {c.get("SPLIT_K", 1) for c in left} == {1, 2, 4}
    assert kernel_sweep.grid_candidates(1, "left") == left
    assert {c["BLOCK_M"] for c in kernel_sweep.grid_candidates(33, "left")} == {64}
    path = tmp_path / "left.json"
    tiles.write(path, {"bf16": {(16, 4096, 4096): left[0]}})
    assert tiles.read(path)["bf16"][16, 4096, 4096] == left[0]


def test_compose_tiles_takes_each_shapes_fastest_variant(tmp_path) -> None:
    """compose_tiles: for each bf16 multiply shape of decode and verify, the tile of the variant
    that ran it fastest in the timeline, where that beats the base by --min-gain; a shape no
    variant's file covers, or whose best is within the margin, keeps the compiled-in tile."""
    compose_tiles = pytest.importorskip("compose_tiles")
    from specpilot.kernels import tiles

    left = dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, USE_DOT=True, W_LEFT=True)
    wide = dict(left, BLOCK_N=128)
    files = {}
    for name, tile in (("a", left), ("b", wide)):
        files[name] = tmp_path / f"{name}.json"
        table = {(16, 4096, 4096): tile, (16, 6144, 4096): tile, (1, 4096, 4096): tile}
        tiles.write(files[name], {"bf16": table})

    def arm(o16: float, qkv16: float, o1: float) -> dict:
        verify = {"linear 16x4096x4096": o16, "linear 16x6144x4096": qkv16, "rope 16": 1.0,
                  "linear 16x4096x12288": 28.0}  # fmt: skip
        shapes = {"decode": {"linear 1x4096x4096": o1}, "verify": verify}
        return {f: {"shapes": {k: {"run_us_each": v} for k, v in s.items()}}
                for f, s in shapes.items()}  # fmt: skip

    report = {
        "variants": {"base": {"tiles": ""}, "a": {"tiles": str(files["a"])},
                     "b": {"tiles": str(files["b"])}},
        "arms": {"bf16 base": arm(11.3, 14.3, 9.9), "bf16 a": arm(10.0, 14.25, 9.0),
                 "bf16 b": arm(10.5, 14.2, 12.0)},
    }  # fmt: skip
    chosen, rows = compose_tiles.compose(report, "bf16", "base", min_gain=0.01)
    # o at 16 rows: a (10.0 < 11.3); q|k|v: b's 14.2 is within 1% of 14.3; one-row o: a
    assert chosen == {(16, 4096, 4096): left, (1, 4096, 4096): left}
    taken = {tuple(r["shape"]): (r["best"], r["taken"]) for r in rows}
    assert taken[16, 6144, 4096] == ("b", False) and taken[16, 4096, 4096] == ("a", True)
    assert (16, 4096, 12288) not in taken  # no variant's file has down
    # the FP8 drafter's tiles from the draft forward: a file's fp8 table, its draft launches
    fp8_path = tmp_path / "fp8.json"
    tiles.write(fp8_path, {"fp8": {(16, 4096, 4096): wide}, "bf16": {(16, 4096, 4096): left}})
    report["variants"]["f"] = {"tiles": str(fp8_path)}
    draft = {"shapes": {"linear 16x4096x4096": {"run_us_each": 8.0}}}
    report["arms"]["bf16 f"] = arm(11.3, 14.3, 9.9) | {"draft": draft}
    report["arms"]["bf16 base"]["draft"] = {"shapes": {"linear 16x4096x4096": {"run_us_each": 9.2}}}
    for name in "ab":
        report["arms"][f"bf16 {name}"]["draft"] = report["arms"]["bf16 base"]["draft"]
    chosen, _ = compose_tiles.compose(report, "bf16", "base", 0.01, "fp8", ("draft",))
    assert chosen == {(16, 4096, 4096): wide}  # only f's file has an fp8 tile
    # a certified head's tiles from its own launches ("certified_head MxNxK"), not the linear's
    cert_path = tmp_path / "cert.json"
    int8 = dict(BLOCK_M=16, BLOCK_N=128, BLOCK_K=128, USE_DOT=True)  # (no W_LEFT for int8)
    tiles.write(cert_path, {"certified": {(1, 4096, 4096): int8}, "bf16": {(1, 4096, 4096): left}})
    report["variants"]["c"] = {"tiles": str(cert_path)}
    for name, us in (("base", 20.0), ("a", 20.0), ("b", 20.0), ("f", 20.0), ("c", 15.0)):
        decode = report["arms"].setdefault(f"bf16 {name}", arm(11.3, 14.3, 9.9))["decode"]
        decode["shapes"]["certified_head 1x4096x4096"] = {"run_us_each": us}
    chosen, _ = compose_tiles.compose(report, "bf16", "base", 0.01, "certified", ("decode",))
    assert chosen == {(1, 4096, 4096): int8}


def test_fake_int4_rounds_to_a_4_bit_grid() -> None:
    """draft_head_acceptance.fake_int4: each weight within half a step of its group's grid (the
    group's peak over 7, in fp16), at most 16 levels a group, zeros kept, a short last group."""
    acceptance = pytest.importorskip("draft_head_acceptance")
    gen = torch.Generator().manual_seed(0)
    w = torch.randn(4, 300, generator=gen) * torch.logspace(-3, 1, 300)
    w[1] = 0.0
    q = acceptance.fake_int4(w, group=128)
    assert q.shape == w.shape and not q[1].any()
    for start in range(0, 300, 128):
        cols = slice(start, start + 128)
        peak = w[:, cols].abs().amax(1, keepdim=True)
        step = (peak / 7).to(torch.float16).float()
        assert ((q[:, cols] - w[:, cols]).abs() <= step / 2 + 1e-6).all()
        for r in (0, 2, 3):
            assert q[r, cols].unique().numel() <= 16


def test_synthetic_draft_vocab_shrinks_the_draft_head(tmp_path, qwen_dir, qwen_drafter_dir):
    from specpilot.config import EngineConfig

    plain = LLM(qwen_dir, draft=str(qwen_drafter_dir), device="cpu", dtype="float32")
    vocab = plain.target.config.vocab_size
    path = engine_speed.synthetic_draft_vocab(vocab // 2, vocab, str(tmp_path))
    cfg = EngineConfig(draft_vocab=path)
    half = LLM(qwen_dir, draft=str(qwen_drafter_dir), device="cpu", dtype="float32", engine=cfg)
    full_bytes = engine_speed.draft_head_bytes(plain.generator)
    assert full_bytes == engine_speed.linear_bytes(plain.target.lm_head)
    assert engine_speed.draft_head_bytes(half.generator) == full_bytes // vocab * (vocab // 2)


def test_embedded_acceptance_variants() -> None:
    """embedded_acceptance's variant names: block, pipelined loop, AR fallback limit."""
    embedded = pytest.importorskip("embedded_acceptance")
    c = embedded.variant_config("b16pf2.2", cuda_graphs=False)
    assert (c.block_size, c.pipeline, c.min_acceptance) == (16, True, 2.2)
    c = embedded.variant_config("b8", cuda_graphs=True)
    assert (c.block_size, c.pipeline, c.min_acceptance, c.cuda_graphs) == (8, False, 0.0, True)
    with pytest.raises(SystemExit, match="bad variant"):
        embedded.variant_config("b16f", cuda_graphs=False)


def test_swept_tiles_and_loop_grids(tmp_path, monkeypatch) -> None:
    """w12_speed.swept_tiles keeps the sweep winners that beat the defaults (W12 from w12_speed,
    bf16 from kernel_sweep reports) as MEASURED_TILES keys; the loop grids are one-row
    element-wise tiles with LOOP_STAGES."""
    import json

    w12_speed = pytest.importorskip("w12_speed")
    kernel_sweep = pytest.importorskip("kernel_sweep")
    tile = {"BLOCK_M": 1, "BLOCK_N": 2, "UNROLL": 4, "LOOP_STAGES": 3}
    bf16_tile = {"BLOCK_M": 1, "BLOCK_N": 8, "BLOCK_K": 512, "LOOP_STAGES": 3}
    w12_report = {"bench": "w12_speed", "results": [
        {"m": 1, "n": 6144, "k": 4096, "tb_s": {"w12": 2.5, "w12_best": 3.1}, "best": tile},
        {"m": 1, "n": 4096, "k": 4096, "tb_s": {"w12": 2.3, "w12_best": 2.3}, "best": {}},
    ]}  # fmt: skip
    bf16_report = {"bench": "kernel_sweep", "results": [
        {"m": 1, "n": 4096, "k": 12288, "default_tb_s": 3.9, "best_tb_s": 4.1, "best": bf16_tile},
        {"m": 16, "n": 4096, "k": 4096, "default_tb_s": 3.0, "best_tb_s": 2.9, "best": bf16_tile},
    ]}  # fmt: skip
    paths = []
    for name, report in (("w12", w12_report), ("bf16", bf16_report)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(report))
    w12_tiles, bf16_tiles = w12_speed.swept_tiles([str(p) for p in paths])
    assert w12_tiles == {(1, 6144, 4096): tile} and bf16_tiles == {(1, 4096, 12288): bf16_tile}
    # --tiles-out: the same winners as a tiles file (EngineConfig.tiles), no GPU needed
    from specpilot.kernels import tiles as tiles_file

    out = tmp_path / "tiles.json"
    argv = ["w12_speed", "--rows", "", "--e2e", "0", "--tiles-out", str(out)]
    monkeypatch.setattr(sys, "argv", [*argv, "--tiles-from", ",".join(str(p) for p in paths)])
    w12_speed.main()
    want = {"w12": w12_tiles, "bf16": bf16_tiles, "fp8": {}, "certified": {}}
    assert tiles_file.read(out) == want
    for tiles in (
        w12_speed.candidates(1, 4096, "loop"),
        kernel_sweep.grid_candidates(1, "loop"),
    ):
        assert tiles and all(t["BLOCK_M"] == 1 and not t["USE_DOT"] for t in tiles)
        assert {t["LOOP_STAGES"] for t in tiles} == {2, 3, 4}
    with pytest.raises(ValueError, match="one row"):
        w12_speed.candidates(16, 4096, "loop")
    # dot_acc: every tensor-core tile twice, ACC_SCALE set on and off (a MEASURED_TILES entry
    # without it would take the default, on)
    dot_acc = w12_speed.candidates(16, 4096, "dot_acc")
    assert dot_acc and all(t["USE_DOT"] and t["BLOCK_M"] == 16 for t in dot_acc)
    plain = [{k: v for k, v in t.items() if k != "ACC_SCALE"} for t in dot_acc]
    assert plain[0::2] == plain[1::2] and [t["ACC_SCALE"] for t in dot_acc[:2]] == [True, False]
    with pytest.raises(ValueError, match="2-64 rows"):
        w12_speed.candidates(1, 4096, "dot_acc")
    # split_in: K split inside the program, ACC_SCALE, only where K holds whole blocks a range
    inside = w12_speed.candidates(16, 4096, "split_in")
    assert inside and all(t["SPLIT_IN"] > 1 and t["SPLIT_K"] == 1 for t in inside)
    assert {t["SPLIT_IN"] for t in w12_speed.candidates(16, 512, "split_in")} == {2}
    assert all(t["BLOCK_M"] == 16 for t in inside + w12_speed.candidates(9, 4096, "full"))
    # --w12-pdl names EngineConfig.pdl modes: anything else is a usage error before any model
    monkeypatch.setattr(sys, "argv", [*argv, "--w12-pdl", "small,quick"])
    with pytest.raises(SystemExit):
        w12_speed.main()


def test_fastest_records_every_tile(monkeypatch) -> None:
    """kernel_sweep.fastest: the fastest tile from a starting best, every timed tile in
    `timings`, and tiles that fail skipped (not timed, not chosen)."""
    kernel_sweep = pytest.importorskip("kernel_sweep")
    monkeypatch.setattr(kernel_sweep, "graph_time", lambda fn: fn())
    times = {1: 3e-6, 2: 1e-6, 4: 2e-6}

    def launch(cfg: dict) -> float:
        if cfg["BLOCK_N"] == 8:
            raise RuntimeError("out of shared memory")
        return times[cfg["BLOCK_N"]]

    configs = [{"BLOCK_N": bn} for bn in (1, 8, 2, 4)]
    timings: list = []
    best, best_t = kernel_sweep.fastest(launch, configs, {"BLOCK_N": 0}, 1.5e-6, timings)
    assert best == {"BLOCK_N": 2} and best_t == 1e-6
    assert [r["tile"]["BLOCK_N"] for r in timings] == [1, 2, 4]
    assert [round(r["us"], 6) for r in timings] == [3.0, 1.0, 2.0]
    assert kernel_sweep.fastest(launch, configs[:2], {"BLOCK_N": 0}, 1e-7) == ({"BLOCK_N": 0}, 1e-7)


def test_layer_shapes() -> None:
    """kernel_sweep.layer_shapes: the fused multiplies' (N, K) of each target preset."""
    kernel_sweep = pytest.importorskip("kernel_sweep")
    assert kernel_sweep.SHAPES == kernel_sweep.layer_shapes("qwen3-8b")
    assert kernel_sweep.SHAPES["qkv"] == (6144, 4096) and kernel_sweep.SHAPES["down"] == (
        4096,
        12288,
    )
    llama = kernel_sweep.layer_shapes("llama3.1-8b")
    assert llama["gate_up"] == (28672, 4096) and llama["lm_head"] == (128256, 4096)


def test_ncu_table_reads_run_82(capsys) -> None:
    """bench/ncu_kernels.py's table of the CSV that Nsight Compute wrote in run 82 (committed):
    every profiled kernel, times in us (ncu reported ns), DRAM bytes, registers, stalls."""
    ncu_kernels = pytest.importorskip("ncu_kernels")
    path = Path(__file__).resolve().parents[1] / "bench/results/2026-11-30-ncu-run82/ncu.csv"
    out = ncu_kernels.table(str(path))
    kernels = out["kernels"]
    assert len(kernels) == 19 and kernels[0]["kernel"] == "_w12_kernel"
    first = kernels[0]  # the one-row W12 q|k|v multiply
    assert first["us"] == pytest.approx(16.512) and first["dram_bytes"] == 38_014_464
    assert first["regs"] == 66 and first["grid"] == "(3072, 1, 1)"
    assert first["dram_tb_s"] == pytest.approx(38_014_464 / 16.512e-6 / 1e12)
    assert first["stall_long_scoreboard"] > 1  # the largest stall: waiting on memory
    assert capsys.readouterr().out.splitlines()[-1].startswith('{"bench": "ncu_kernels"')


def test_ncu_source_view_counts_stalls_by_opcode(tmp_path, capsys) -> None:
    """bench/ncu_kernels.py's `source` mode on a small CSV in the layout of ncu's SASS view (a
    units line is skipped, predicates and modifiers leave the opcode, shares sum to one), then on
    the real one of run 90 (committed), which gives the JSON committed beside it."""
    ncu_kernels = pytest.importorskip("ncu_kernels")
    path = tmp_path / "sass.csv"
    path.write_text(
        '"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued'
        ' Samples)"\n'
        '"","","",""\n'
        '"0x10","LDG.E.128 R4, desc[UR6][R2.64] ;","30","29"\n'
        '"0x20","@!P0 LDG.E.128 R8, desc[UR6][R2.64+0x10] ;","10","9"\n'
        '"0x30","HMMA.16816.F32.BF16 R12, R4, R8, R12 ;","50","40"\n'
        '"0x40","PRMT R1, R2, 0x5140, R3 ;","10","2"\n'
    )
    out = ncu_kernels.source(str(path), top=2)
    assert out["instructions"] == 4 and out["samples"] == 100
    assert out["by_opcode"] == {"HMMA": 0.5, "LDG": 0.4, "PRMT": 0.1}
    assert [h["address"] for h in out["hottest"]] == ["0x30", "0x10"]
    assert capsys.readouterr().out.splitlines()[-1].startswith('{"bench": "ncu_source"')
    run90 = Path(__file__).parent.parent / "bench/results/2026-12-01-ncu-source-run90"
    out = ncu_kernels.source(str(run90 / "_w12_kernel-sass.csv"))
    assert out == json.loads((run90 / "_w12_kernel-source.json").read_text())


def test_prologue_rows_argument() -> None:
    """engine_speed --prologue-rows: one count for both prologues, or each by name."""
    assert engine_speed.prologue_rows("2") == {"norm": 2, "glu": 2}
    assert engine_speed.prologue_rows("-1") == {}
    assert engine_speed.prologue_rows("norm=0,glu=1") == {"norm": 0, "glu": 1}
    with pytest.raises(argparse.ArgumentTypeError, match="norm and glu"):
        engine_speed.prologue_rows("swiglu=1")


def test_ablate_leaves_the_kernels_out(monkeypatch) -> None:
    """engine_speed --ablate: each left-out kernel of the fused forwards passes its input on
    (no launch), in the shape the next multiply takes; unknown names are refused."""
    import argparse

    import torch

    from specpilot.models import fused

    for name in ("rmsnorm", "silu_mul", "decode_attention"):
        monkeypatch.setattr(fused, name, getattr(fused, name))  # restored after the test
    monkeypatch.setattr(fused._FusedBlock, "write_kv", fused._FusedBlock.write_kv)
    engine_speed.ablate(engine_speed.ablations("norm,swiglu,rope,attention"))
    x = torch.randn(3, 8)
    assert fused.rmsnorm(x, torch.ones(8), 1e-6) is x
    assert torch.equal(fused.silu_mul(x), x[:, :4])
    block = object.__new__(fused._FusedBlock)
    block.head_dim = 2
    assert torch.equal(block.write_kv(x, 2, None, None, None, 0), x[:, :4])
    assert fused.decode_attention(x, None, None, None, 4, causal=False) is x
    with pytest.raises(argparse.ArgumentTypeError, match="--ablate takes"):
        engine_speed.ablations("norm,gemv")
    with pytest.raises(argparse.ArgumentTypeError, match="needs attention"):
        engine_speed.ablations("rope")


def test_paired_arms_take_only_engine_options() -> None:
    """engine_speed --paired: arms name their own engine options and switches over the
    defaults; anything else, a lone arm, a repeated name, or an arm option also given on the
    command line is a usage error before any model is built."""
    parser = engine_speed.build_parser()
    args = parser.parse_args([])
    arms = engine_speed.paired_arms("base|; ep|--swiglu-epilogue 0;pk|--pdl kernels", parser, args)
    assert list(arms) == ["base", "ep", "pk"]
    assert arms["ep"].swiglu_epilogue == 0 and arms["ep"].pdl == "auto"
    assert arms["pk"].pdl == "kernels" and arms["pk"].swiglu_epilogue == -1
    loops = engine_speed.paired_arms("a|;g|--step-graph 1 --pipeline 1", parser, args)
    config = engine_speed.engine_config(loops["g"], 100)
    assert (config.step_graph, config.pipeline) == (True, True)
    assert not engine_speed.engine_config(loops["a"], 100).pipeline
    heads = engine_speed.paired_arms("e|;c|--target-head certified", parser, args)
    assert engine_speed.engine_config(heads["c"], 100).target_head == "certified"
    assert engine_speed.engine_config(heads["e"], 100).target_head == "auto"
    from specpilot.kernels import launch

    waves = engine_speed.paired_arms("a|;w|--pdl waves --pdl-min-waves 1.9", parser, args)["w"]
    assert engine_speed.module_switches(waves, parser) == {(launch, "PDL_MIN_WAVES"): 1.9}
    from specpilot.kernels import attention

    aw = engine_speed.paired_arms("a|;w|--attention-warps wide=8,merge=8", parser, args)["w"]
    assert engine_speed.module_switches(aw, parser) == {
        (attention, "SPLIT_WARPS"): {"narrow": attention.SPLIT_WARPS["narrow"], "wide": 8},
        (attention, "MERGE_WARPS"): 8,
    }
    one_switch = {  # an arm's options -> the one attention switch they set, and its value
        "--attention-kv-prefetch 128": ("KV_PREFETCH_KEYS", 128),
        "--attention-q-rows 16": ("WIDE_Q_ROWS", 16),
        "--attention-kv-step 32": ("SPLIT_KV_STEP", 32),
        "--attention-merge-program-rows 16": ("MERGE_PROGRAM_ROWS", 16),
        "--attention-early-positions 1": ("EARLY_POSITIONS", 1),
        "--attention-max-splits 16": ("MAX_SPLITS", 16),
        "--switch kernels.attention.SLOT_PAD=1": ("SLOT_PAD", 1),
        "--attention-merge-chunk 16": ("MERGE_SPLIT_CHUNK", 16),
    }
    for options, (switch, value) in one_switch.items():
        arm = engine_speed.paired_arms(f"a|;b|{options}", parser, args)["b"]
        assert engine_speed.module_switches(arm, parser) == {(attention, switch): value}
    st = engine_speed.paired_arms("a|;s|--attention-stages wide=1", parser, args)["s"]
    assert engine_speed.module_switches(st, parser) == {
        (attention, "SPLIT_STAGES"): {"narrow": attention.SPLIT_STAGES["narrow"], "wide": 1},
    }
    assert engine_speed.attention_stages("2") == {"narrow": 2, "wide": 2}
    for bad in ("merge=2", "wide=0", "5"):
        with pytest.raises(argparse.ArgumentTypeError):
            engine_speed.attention_stages(bad)
    assert engine_speed.attention_warps("8") == {"narrow": 8, "wide": 8, "merge": 8}
    for bad in ("split=8", "wide=3"):
        with pytest.raises(argparse.ArgumentTypeError):
            engine_speed.attention_warps(bad)
    bad = [
        ("base|", args),
        ("a|;a|--pdl off", args),
        ("a|;b|--contexts 8192", args),
        ("a|;b|--attention-min-keys 100", args),
        ("a|;b|--attention-kv-prefetch 100", args),
        ("a|;b|--attention-q-rows 24", args),
        ("a|;b|--attention-kv-step 128", args),
        ("a|;b|--attention-early-positions 2", args),
        ("a|;b|--attention-merge-program-rows 12", args),
        ("a|;b|--attention-merge-chunk 12", args),
        ("a|;b|--switch kernels.attention.MERGE_SPLIT_CHUNK=12", args),  # its SWITCH_RULES
        ("a|;b|--switch kernels.launch.SIDE_AHEAD_BYTES=-1", args),  # launch's
        ("a|;b|--switch kernels.rope.EARLY_TABLES=2", args),
        ("a|;b|--switch kernels.w12_row.ONE_ROW=3", args),  # w12_row's SWITCH_RULES
        ("a|;b|--switch kernels.w12_row.ONE_ROW_TILE=99", args),
        ("a|;b|--switch kernels.w12_row.ONE_ROW_SMALL_TILE=-2", args),
        ("a|;b|--switch kernels.nowhere.X=1", args),
        ("a|;b|--pdl off", parser.parse_args(["--swiglu-epilogue", "0"])),
    ]
    for spec, given in bad:
        with pytest.raises(SystemExit):
            engine_speed.paired_arms(spec, parser, given)


def test_run_paired_sets_each_arms_switches(gen, monkeypatch, tmp_path) -> None:
    """run_paired: one Generator an arm on the same models, each arm's module switches and tiles
    file in place for its runs (and the defaults for those it leaves alone), the defaults back
    afterwards."""
    from specpilot.kernels import attention, linear
    from specpilot.models import fused

    shape = (16, 4096, 4096)
    tiles_file = tmp_path / "t.json"
    entry = {"kernel": "bf16", "rows": 16, "n": 4096, "k": 4096, "tile": {"BLOCK_N": 16}}
    tiles_file.write_text(json.dumps({"tiles": [entry]}))
    parser = engine_speed.build_parser()
    args = parser.parse_args(["--new-tokens", "10", "--paired-rounds", "2"])
    arms = engine_speed.paired_arms(
        f"base|;ep|--swiglu-epilogue 0;mk|--attention-min-keys 128;t|--tiles {tiles_file}",
        parser,
        args,
    )
    before = (fused.SWIGLU_EPILOGUE_MIN_ROWS, attention.MIN_SPLIT_KEYS)
    tile_before = linear.MEASURED_TILES.get(shape)
    seen = []
    real = engine_speed.paired_rounds

    def spy(kept, *a, **kw):
        wrapped = {}
        for name, (g, prepare) in kept.items():

            def recording(name=name, prepare=prepare):
                prepare()
                seen.append((name, fused.SWIGLU_EPILOGUE_MIN_ROWS, attention.MIN_SPLIT_KEYS,
                             str(linear.MEASURED_TILES.get(shape))))  # fmt: skip

            wrapped[name] = (g, recording)
        return real(wrapped, *a, **kw)

    monkeypatch.setattr(engine_speed, "paired_rounds", spy)
    r = engine_speed.run_paired(arms, gen.target, gen.drafter, 20, args)
    plain = str(tile_before)
    assert set(seen) == {
        ("base", before[0], before[1], plain),
        ("ep", 0, before[1], plain),
        ("mk", before[0], 128, plain),
        ("t", before[0], before[1], str({"BLOCK_N": 16})),
    }
    assert (fused.SWIGLU_EPILOGUE_MIN_ROWS, attention.MIN_SPLIT_KEYS) == before
    assert linear.MEASURED_TILES.get(shape) == tile_before
    assert r["base"] == "base" and r["rounds"] == 2 and r["context"] == 20
    assert r["options"]["mk"]["attention_min_keys"] == 128
    for name in ("ep", "mk", "t"):
        for mode in ("ar", "spec"):
            up = r["arms"][name][mode]["over_base"]
            assert up["low"] <= up["ratio"] <= up["high"]
            assert r["arms"][name][mode]["identical_to_base"]  # the PyTorch path: same tokens
    json.dumps(r)


def test_pdl_pairs_times_every_mode(monkeypatch) -> None:
    """bench/pdl_pairs.py's bookkeeping on small shapes (CPU, the interpreter): a row for each
    row count, pair and kernel between, each PDL mode timed, the grid sizes of the default
    tiles, the launch settings as they were afterwards."""
    import torch

    from specpilot.kernels import launch

    pdl_pairs = pytest.importorskip("pdl_pairs")
    shapes = {"o": (32, 64), "gate_up": (96, 32), "down": (32, 48), "qkv": (48, 32)}
    monkeypatch.setattr(pdl_pairs, "SHAPES", shapes)
    before = launch.settings()
    rows = pdl_pairs.measure(
        [1, 2], pairs=(("o", "gate_up"),), device=torch.device("cpu"), pairs_a_graph=1
    )
    assert launch.settings() == before
    keys = [(r["rows"], r["between"], r["variant"]) for r in rows]
    variants = ("default", "half")
    assert keys == [(m, b, v) for m in (1, 2) for b in ("none", "norm") for v in variants]
    for r in rows:
        assert list(r["us"]) == list(pdl_pairs.MODES) and all(t > 0 for t in r["us"].values())
        first, second = (pdl_pairs.programs(r["rows"], *shapes[n]) for n in ("o", "gate_up"))
        half = pdl_pairs.programs(r["rows"], *shapes["gate_up"], "half")
        assert r["programs"] == [first, second if r["variant"] == "default" else half]
        assert half > second  # twice the programs (rounded up)
        assert r["weight_bytes"] == (32 * 64 + 96 * 32) * 2
    assert pdl_pairs.programs(1, 96, 32) >= 1
    lines = pdl_pairs.table(rows)
    assert len(lines) == 1 + len(rows) and "all/kernels" in lines[0]


def test_device_scripts_parse() -> None:
    """Every device script (bench/h200/*.sh) is valid bash, and each one that hands over to a
    shared script (exec bash .../NAME.sh) or sources one names a file that exists: a typo there
    would cost a device call."""
    import re
    import subprocess
    from pathlib import Path

    folder = Path(__file__).resolve().parent.parent / "bench" / "h200"
    scripts = sorted(folder.glob("*.sh"))
    assert scripts
    for script in scripts:
        done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert done.returncode == 0, f"{script.name}: {done.stderr}"
        for name in re.findall(r'(?:exec bash|source) "\$\(dirname "\$0"\)/([\w.]+)"',
                               script.read_text()):  # fmt: skip
            assert (folder / name).is_file(), f"{script.name} hands over to missing {name}"


def test_tma_probe_kernels_compile_for_sm90() -> None:
    """bench/tma_probe.py's kernels compile for sm_90a here (in a process without the
    interpreter): every TMA box fits an SM's shared memory and the tl.load tiles stream through
    cp.async without spills, so its device call measures what it names."""
    code = "import json, tma_probe as p; from specpilot.kernels import aot; "
    code += "print(json.dumps([aot.usage(p.compile_sm90(box=b)) for b in p.TMA_BOXES]"
    code += " + [aot.usage(p.compile_sm90(tile=t)) for t in p.LD_TILES]))"
    usages = compiled_json(code)
    assert all(u["spill_stores"] == 0 and u["shared"] <= 227 * 1024 for u in usages)


def test_no_gluon_kernel_frees_a_ring_stage_with_a_load_of_it_in_flight() -> None:
    """bench/sass_inflight.py on the engine's warp-specialized kernels (sm_90a SASS): at no
    mbarrier arrive is a load that may read a TMA-fed ring stage still in flight (run 346's
    race: the copy into the freed stage may land before the load reads), except in w12_tokens
    and bf16_row's residual tile built without their proxy fences, where the check finds the
    stage's loads (16-byte LDS, ldmatrix: so that it can fail)."""
    code = "import json, sass_inflight as s; from sass_pair_layout import disassemble; "
    code += "print(json.dumps({name: [load for a in s.inflight(disassemble(build())[0]) "
    code += "for load in s.ring_suspects(a)] for name, build in s._kernels().items()}))"
    suspects = compiled_json(code)
    unfenced = sorted(name for name in suspects if "no proxy fence" in name)
    assert [name.split()[0] for name in unfenced] == ["bf16_row", "w12_tokens"]
    bf16, tokens = (suspects.pop(name) for name in unfenced)
    assert tokens and all(load.startswith("LDS.128") for load in tokens)
    assert bf16 and all(load.startswith("LDSM") for load in bf16)
    # (x streamed: the heuristic marks the meta slot's escape sums, an fp32 pair a thread that
    # the meta warp writes with st.shared, freed after: addressed from a uniform register in
    # this build; w12_tokens reads its ring's stages, planes and x, 16 bytes at a time)
    streamed = suspects.pop("w12_tokens verify's down (x streamed)")
    assert all(load.startswith("LDS.64 ") for load in streamed)
    assert len(suspects) == 10 and suspects == {name: [] for name in suspects}


def test_wgmma_ra_probe_decodes_into_the_operand_without_moving_data() -> None:
    """bench/wgmma_ra_probe.py compiles for sm_90a (its operand's layout conversion is asserted
    trivial: the decoded pairs are wgmma's register A as they are), with no spills and no
    shared-memory store in its block loop, at about 3 SASS instructions a weight (a regression
    past 4 would undo the point of the design)."""
    code = "import json, wgmma_ra_probe as p; from sass_pair_layout import disassemble; "
    code += "k = p.compile_probe(); print(json.dumps(p.loop_stats(disassemble(k)[0])))"
    loop = compiled_json(code)
    assert loop["hgmma"] == 16 and loop["sts_inside"] == 0 and loop["per_weight"] < 4


def test_wgmma_ra_probe_runs_right_on_the_emulator() -> None:
    """bench/wgmma_ra_probe.py's check (its kernel on buffers in kernels/w12_tc.py's layouts,
    the input in pair order) on kernels/emulate.py: the decoded weights' products (an escape
    left out: the probe adds none, the decoded weight reads 0)."""
    probe = pytest.importorskip("wgmma_ra_probe")
    from specpilot.kernels import emulate

    with emulate.gluon():
        result = probe.check(blocks=2, device="cpu")
    assert result["right"], result


def test_read_floor_reads_every_word_once() -> None:
    """read_floor.read_words, every variant (one block a program and the strided loop): the
    programs' sums add up to the sum of all the words, so each word was read exactly once."""
    read_floor = pytest.importorskip("read_floor")
    assert read_floor.words_for(4 * 8192 * 9 + 1, device="cpu").numel() == 8192 * 10
    # small words: the interpreter's int32 sums do not wrap (the GPU's do)
    src = torch.randint(0, 1000, (8192 * 10,), dtype=torch.int32)
    want = int(src.long().sum())
    for variant in read_floor.VARIANTS:
        out = torch.zeros(src.numel() // 1024, dtype=torch.int32)
        read_floor.read_words(src, out, variant)
        assert int(out.long().sum()) == want, read_floor.label(variant)
    with pytest.raises(ValueError, match="whole"):
        read_floor.read_words(src[:1000], out, read_floor.VARIANTS[0])


def test_paired_rounds_judge_each_arm_against_a_control_arm(gen) -> None:
    """--paired-control: a last arm CONTROL with the base's options (with_control); each other
    arm's speed-up is beyond the control only where its interval clears both the control's and
    1, and the printed line says which."""
    up = {"ratio": 1.02, "low": 1.01, "high": 1.03}
    assert engine_speed.beyond(up, {"over_base": {"low": 0.99, "high": 1.005}})
    assert not engine_speed.beyond(up, {"over_base": {"low": 1.0, "high": 1.015}})
    assert not engine_speed.beyond({"low": 0.995, "high": 1.01}, {})  # straddles 1: the base
    control = {"over_base": {"low": 0.993, "high": 0.997}}
    assert engine_speed.beyond({"low": 0.98, "high": 0.99}, control)
    parser = engine_speed.build_parser()
    args = parser.parse_args([])
    arms = engine_speed.paired_arms("base|;ep|--swiglu-epilogue 0", parser, args)
    both = engine_speed.with_control(arms, parser)
    assert list(both) == ["base", "ep", "control"]
    assert vars(both["control"]) == vars(both["base"]) and both["control"] is not both["base"]
    with pytest.raises(SystemExit):
        engine_speed.with_control({"control": both["base"], "x": both["ep"]}, parser)
    runs = {name: (gen, lambda: None) for name in ("base", "other", "control")}
    r = engine_speed.paired_rounds(runs, context=20, new_tokens=10, rounds=3)
    for name in ("other", "control"):
        for mode in ("ar", "spec"):
            assert isinstance(r["arms"][name][mode]["beyond_control"], bool)
    other, control = engine_speed.paired_lines(r)
    assert other.startswith("other/base: ") and "; against the control: AR " in other
    assert control.startswith("control/base: ") and "against the control" not in control


def test_ncu_certified_mode_runs_dry(monkeypatch) -> None:
    """bench/ncu_kernels.py certified (no GPU: the interpreter's dry run, nothing profiled): the
    certified and FP8 heads of a small shape build, and each is called twice (compiled and
    warmed) a row count; tests/test_certified.py checks the certified head's tokens."""
    ncu_kernels = pytest.importorskip("ncu_kernels")
    from specpilot.kernels import linear

    calls = []
    for name in ("certified_argmax", "skinny_linear"):
        real = getattr(linear, name)
        monkeypatch.setattr(
            linear,
            name,
            lambda *a, _real=real, _name=name, **kw: calls.append(_name) or _real(*a, **kw),
        )
    ncu_kernels.run_certified(192, 256, [1, 16], radius=1.0)
    assert calls.count("certified_argmax") == 4 and calls.count("skinny_linear") == 4


def test_w12_join_only_names_known_prototype_tiles(monkeypatch, capsys) -> None:
    """--only keeps the prototype tiles it names; a label no prototype has is a usage error
    (before the CUDA check, so a device script's typo fails here)."""
    w12_join = pytest.importorskip("w12_join")
    monkeypatch.setattr(sys, "argv", ["w12_join.py", "--tc", "--only", "64r4s/sw,nope"])
    with pytest.raises(SystemExit) as exit_info:
        w12_join.main()
    assert exit_info.value.code == 2 and "nope" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["w12_join.py", "--tc", "--only", "64r4s/sw,64r4s/copies"])
    monkeypatch.setattr(w12_join.torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit, match="needs CUDA"):
        w12_join.main()


def test_w12_join_tiles_variants_and_table() -> None:
    """bench/w12_join.py without a GPU: each shape's tiles (run 259's best, --deep's rings, the
    default at one row), every variant a W12 tile the launcher takes (JOIN with ACC_SCALE), and
    the closing table of a made-up row."""
    w12_join = pytest.importorskip("w12_join")
    from specpilot.kernels import w12_linear

    down = w12_join.tiles("down")
    assert [label for label, _ in down] == ["64r4w3s/k8", "32r2w3s/k8", "64r4w3s/k4"]
    assert all(cfg["ACC_SCALE"] and cfg["BLOCK_M"] == 16 for _, cfg in down)
    assert len(w12_join.tiles("gate_up", deep=True)) == 10
    # a shape's default tile where it is none of the best (Llama-3.1-8B's 2-warp gate_up), with
    # its own ESC_ROWS dropped (the variants set it)
    llama = w12_join.tiles("gate_up", shape=(16, 28672, 4096))
    assert [label for label, _ in llama] == ["64r4w3s/k1", "default"]
    assert llama[1][1]["num_warps"] == 2 and llama[1][1]["ACC_SCALE"]
    assert [label for label, _ in w12_join.tiles("down", shape=(16, 4096, 12288))] == [
        label for label, _ in down
    ]
    assert "ESC_ROWS" not in w12_join.tiles("gate_up", shape=(1, 24576, 4096))[0][1]
    assert w12_join.tiles("o", shape=(1, 4096, 4096)) == [
        ("default", w12_linear.tile_config(1, 4096, 4096))
    ]
    for switches in w12_join.VARIANTS.values():
        w12_linear.launch_tile(down[0][1] | switches, 128, given=True)  # raises if refused
    best = dict(us=10.0, tb_s=2.5, tile="64r4w3s/k4")
    row = dict(shape="down", bf16_us=12.0, bf16_3q_us=9.0, best_plain=best)
    # --ws rows: kernels/w12_ws.py's best tile in a last column
    ws_row = dict(row, ws=[best], best_ws=dict(best, us=8.0))
    ws_lines = w12_join.table([ws_row], ["plain"])
    assert ws_lines[0].split()[-1] == "ws" and ws_lines[1].split()[-2:] == ["8.00", "2.50"]
    assert {label for label, _ in w12_join.WS_TILES} >= {"64r4s", "128r2s8d"}
    # --row rows: kernels/w12_row.py's best tile after ws's; its tiles take only its keys and
    # fit in shared memory at the widest K timed (Llama-3.1-8B's down)
    row_lines = w12_join.table([dict(ws_row, row=[best], best_row=dict(best, us=7.0))], ["plain"])
    assert row_lines[0].split()[-2:] == ["ws", "row"]
    assert row_lines[1].split()[-2:] == ["7.00", "2.50"]
    from specpilot.kernels import w12_row

    for _, tile in w12_join.ROW_TILES:
        assert set(tile) <= set(w12_row.TILE)
        assert w12_row.geometry(w12_row.TILE | tile, 14336)["shared"] <= 220 * 1024
    for _, tile in w12_join.ROW_BF16_TILES:
        assert set(tile) <= set(w12_row.TILE)
        assert w12_row.geometry(w12_row.TILE | tile, 14336, bf16=True)["shared"] <= 220 * 1024
    from specpilot.kernels import w12_tc

    assert all(set(tile) <= set(w12_tc.TILE) for _, tile in w12_join.TC_TILES)

    # a tile whose checked run fails is recorded with its error and never timed
    def wrong() -> None:
        raise AssertionError("3 of 16 off")

    failed = w12_join.timed_entry(dict(tile="t"), wrong, None, 1)
    assert failed == dict(tile="t", error="AssertionError: 3 of 16 off")
    lines = w12_join.table([row], ["plain", "esc4"])
    assert lines[0].split()[:4] == ["shape", "bf16", "bf16", "3/4"]
    assert "10.00 2.50" in lines[1] and lines[1].rstrip().endswith("-")


def test_w12_speed_arms_name_real_switches() -> None:
    """Every W12_ARMS switch is a kernels/w12_linear.py attribute, or "module.NAME" of another
    kernels module (the ws_verify arm's w12_ws.VERIFY), so an arm cannot set a typo."""
    w12_speed = pytest.importorskip("w12_speed")
    from specpilot.kernels import w12_ws

    for switches in w12_speed.W12_ARMS.values():
        for flag in switches:
            module, value = w12_speed._switch(flag)
            assert hasattr(module, flag.split(".")[-1])
    assert w12_speed._switch("w12_ws.VERIFY") == (w12_ws, w12_ws.VERIFY)


def test_w12_speed_chains_and_weighs_the_one_row_multiplies(monkeypatch) -> None:
    """`chained` times its calls under PDL "chain" inside a one-row forward and gives the
    process's launch settings back; `layer_share` weighs a layer's four matrices by their bytes
    (bytes over summed times, not the mean of the shares), and is None where one lacks a time."""
    w12_speed = pytest.importorskip("w12_speed")
    from specpilot.kernels import launch

    launch.configure("off", "off")
    seen = []

    def graph_time(fn) -> float:  # noqa: ANN001
        seen.append((launch.settings()["pdl"], launch._one_row_forward()))
        return 2e-6

    monkeypatch.setattr(w12_speed, "graph_time", graph_time)
    assert w12_speed.chained(lambda: None) == 2e-6
    assert seen == [("chain", True)] and launch.settings()["pdl"] == "off"
    assert not launch._one_row_forward()

    def row(shape: str, nbytes: float, us: float | None) -> dict:
        tb_s = None if us is None else nbytes / (us * 1e-6) / 1e12
        return {"m": 1, "shape": shape, "us": {"w12_row": us}, "tb_s": {"w12_row": tb_s}}

    # the layer's 7 MB in 4 us (the LM head and a 16-row o are not of it): 1.75 TB/s
    layer = [row("qkv", 1e6, 1.0), row("o", 1e6, 0.5), row("gate_up", 3e6, 1.0),
             row("down", 2e6, 1.5), row("lm_head", 1e9, 1.0)]  # fmt: skip
    layer.append({**row("o", 1e6, 9.0), "m": 16})
    assert w12_speed.layer_share(layer, "w12_row", 3.5) == pytest.approx(0.5)
    assert w12_speed.layer_share(layer[:3], "w12_row", 1.0) is None
    layer[1] = row("o", 1e6, None)
    assert w12_speed.layer_share(layer, "w12_row", 1.0) is None


@pytest.mark.parametrize(
    "kind",
    [
        "row",
        "row_bf16",
        *(pytest.param(k, marks=pytest.mark.prototype) for k in ("tc", "tc1", "ws")),
    ],
)
def test_w12_join_prototype_tiles_run_on_the_emulator(kind: str) -> None:
    """Every prototype tile bench/w12_join.py times on the device (--row, --tc, --ws) runs on
    kernels/emulate.py at a small shape of its kind (one row; 16 rows; w12_tc's at one row too,
    as row287.sh times them): checked against the
    reference as w12_join checks it, its bounds (BOUND, wrong products) to their end, so that
    no device call meets a tile that hangs or fails first (the launch ~same as w12_join's)."""
    w12_join = pytest.importorskip("w12_join")
    from specpilot.formats import w12
    from specpilot.kernels import emulate, w12_row, w12_tc, w12_ws
    from specpilot.kernels.linear import skinny_linear_reference
    from specpilot.kernels.w12_linear import w12_linear_reference
    from tests.test_w12_kernels import weight_with_escapes

    m, n = (1, 70) if kind.startswith("row") else (1, 256) if kind == "tc1" else (16, 256)
    w = weight_with_escapes(n, 1152, torch.Generator().manual_seed(7))
    packed = w12.encode(w)
    x = torch.randn(m, 1152).to(torch.bfloat16)
    runs = dict(
        row=(w12_join.ROW_TILES, lambda t: w12_row.w12_row_linear(x, packed, t)),
        row_bf16=(w12_join.ROW_BF16_TILES, lambda t: w12_row.bf16_row_linear(x, w, t)),
        tc=(w12_join.TC_TILES, lambda t: w12_tc.w12_tc_linear(
            w12_ws.pair_order(x), packed, t, x_order="pair")),
        ws=(w12_join.WS_TILES, lambda t: w12_ws.w12_ws_linear(
            w12_ws.pair_order(x), packed, t, x_order="pair")),
    )  # fmt: skip
    kernel_tiles, run = runs[kind.removesuffix("1")]
    ref = skinny_linear_reference(x, w) if kind == "row_bf16" else w12_linear_reference(x, packed)
    with emulate.gluon(sms=3) as state:
        for label, tile in kernel_tiles:
            y = run(tile)
            assert y.shape == ref.shape, label
            if not tile.get("BOUND"):
                w12_join.check(y, ref, f"{kind} {label}")
    assert state["launches"] >= len(kernel_tiles)


def test_exit_spacing_charges_each_launch_from_the_last_exit(tmp_path, capsys) -> None:
    """bench/exit_spacing.py: each launch's time from the exit of the launch before it (the
    first: its run), grouped by kernel and shape, split sums named for the multiply before
    them; the sums add up to the forward's span (first exit's run plus the last exit)."""
    import exit_spacing

    def launch(kernel: str, exit_ns: int, run: int = 100, **shape) -> dict:
        return dict(kernel=kernel, exit=exit_ns, run=run, **shape)

    launches = [
        launch("rmsnorm", 1_000, run=1_000),
        launch("w12_tc", 15_000, n=4096, k=12288),
        launch("split_sum", 18_000, n=4096),
        launch("rmsnorm", 20_000),
        launch("w12_tc", 30_000, n=4096, k=12288),
        launch("split_sum", 31_000, n=4096),
    ]
    rows = exit_spacing.spacing(launches)
    assert list(rows) == ["rmsnorm", "w12_tc 4096x12288", "split_sum<4096x12288"]
    assert rows["w12_tc 4096x12288"] == dict(launches=2, median_us=12.0, sum_us=24.0)
    assert rows["split_sum<4096x12288"]["sum_us"] == 4.0
    assert rows["rmsnorm"] == dict(launches=2, median_us=1.5, sum_us=3.0)
    assert sum(r["sum_us"] for r in rows.values()) == 31.0
    timeline = tmp_path / "t.json"
    arms = {"w12 base": {"verify": {"launches": launches}}}
    arms["w12 e7"] = {"verify": {"launches": launches[:2]}}
    timeline.write_text(json.dumps({"arms": arms}))
    assert exit_spacing.main([str(timeline)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2].split() == ["span", "31.0", "15.0"]
    assert json.loads(out[-1])["arms"]["w12 e7"]["w12_tc 4096x12288"]["launches"] == 1
