"""W12 kernel speed at Qwen3-8B's layer shapes, against the bf16 skinny_linear and cuBLAS (H200).

For each (M, N, K) it times, inside a CUDA graph of 20 back-to-back calls (bench/kernel_sweep.py's
`graph_time`; the weights are read from HBM unless --l2 warm, see kernel_sweep's `cycled`):
F.linear (cuBLAS, bf16), skinny_linear (bf16, its default tiles), w12_linear with its default
tiles, with the same tiles and no inline PTX (ASM=False: the plain-Triton decode), with each tile
of a sweep (kernels/w12_linear.py's tile parameters), and both kernels with the fused forwards'
prologue for that shape (RMSNorm; SwiGLU for `down`; in the JSON only). Weights
are random normal (std 0.02), so the escape rate is that of normal weights (~1.6e-4). Bandwidth
is reported two ways: the bytes each
kernel actually reads (bf16: 2 per weight; W12: its arrays, ~1.51 per weight), and "bf16-equivalent"
(2 bytes per weight / time: the speed-up over a bf16 kernel at the same fraction of HBM). Before
timing, the W12 outputs (default tiles, ASM=False, then the best tile) are checked against the
reference (decode, then F.linear); a wrong one stops the bench. Prints a table;
the last line is one JSON object.

On a Hopper GPU the one-row table also times the engine's one-row kernels, w12_row and bf16_row
(kernels/w12_row.py), two ways: launched alone (each call after the one before has drained) and
chained (`chained`: under PDL "chain" in a one-row forward, as the decode graph launches them,
each launch's programs asking for their first weights while the one before drains); and a
decoder layer's four matrices weighed by their bytes, as fractions of the measured copy
bandwidth (issue 7's GEMV target: `layer_share`).

With --e2e CONTEXT (default 1024), it then runs the engine end to end at the Qwen3-8B shape with
a DFlash-b16-shaped drafter, first with bf16 weights and then with the same weights converted to
W12 (target and drafter): AR tok/s and speculative tok/s at replayed tau = 6.55 (drafter forward
real, proposals replayed), each against its bandwidth floor (bytes read / measured copy
bandwidth), and token forcing of the W12 outputs against the bf16 target.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import itertools
import json
from functools import partial

import torch
import torch.nn.functional as F

# run as a script from the repository root: bench/ is on sys.path
from engine_speed import (  # noqa: E402
    CONTROL,
    add_launch_arguments,
    apply_switches,
    build,
    copy_bandwidth,
    kernel_profile,
    linear_bytes,
    measure_context,
    module_switch,
    paired_lines,
    paired_rounds,
    preset_hf,
    print_kernel_profile,
    switch_values,
)
from kernel_sweep import (  # noqa: E402
    MODELS,
    add_l2_argument,
    compile_each,
    cycled,
    fastest,
    graph_time,
    layer_shapes,
    precompile,
)
from report import finish, save  # bench/ is on sys.path when run as a script

from specpilot.config import PDL_MODES, EngineConfig
from specpilot.engine.generator import Generator, certifies_verify_heads
from specpilot.formats import w12
from specpilot.formats.w12_engine import convert_model, parse_matrices
from specpilot.kernels import launch, tiles, w12_row
from specpilot.kernels import linear as bf16_kernels
from specpilot.kernels import w12_linear as w12_kernels
from specpilot.kernels.linear import skinny_linear, tile_rows
from specpilot.kernels.w12_linear import tile_config, w12_linear, w12_linear_reference
from specpilot.models.synth import draft_hf_config

# the tile sweep around the default (kernels/w12_linear.py's tile_config): element-wise products
# (BLOCK_N, UNROLL, num_warps, num_stages) for M <= 4, tensor cores (BLOCK_N, SPLIT_K, num_warps,
# num_stages) for any M; a step reads UNROLL blocks of w12.BLOCK columns (element-wise) or one
W12_ELEMENTWISE_GRID = ((1, 2, 4, 8), (8, 16, 32), (4, 8), (1,))
# runs 67-68: 1-2 warps (mma.sync, 16-64 weight rows) and 1-2 stages (less shared memory: more
# programs an SM) added; each tile with and without inline PTX
W12_DOT_GRID = ((16, 32, 64), (1, 2, 4, 8, 16), (1, 2, 4), (1, 2, 3, 4))
# --grid loop (one row): element-wise tiles whose loop pipelines the planes' loads through shared
# memory (kernels/w12_linear's LOOP_STAGES): (BLOCK_N, UNROLL, num_warps, LOOP_STAGES); run 83
# found q|k|v's and gate_up's. loop_wide: around it, for o and down (none won there in run 83)
W12_LOOP_GRIDS = {
    "loop": ((2, 4, 8), (2, 4, 8), (4,), (2, 3, 4)),
    "loop_wide": ((1, 2, 4, 16), (1, 2, 4), (2, 4, 8), (3, 4, 6)),
}
# --grid regs / acc / esc (or several, comma-separated): the run-68 winners' family (32 rows,
# 2 warps), each tile as it is and with each variant: "regs", ptxas register caps (maxnreg; the
# 165 registers a thread of that tile takes leave 12 warps an SM, 128 / 96 / 80 allow 16 / 20 /
# 24, with spills); "acc", the group scales on each half block's sum
# (kernels/w12_linear.ACC_SCALE_TILES); "esc", each row's first escape fetched in the first
# loop step (ESC_IN_LOOP_TILES); "halves", the decoded pairs' bf16 halves straight to tl.dot
# (HALVES_TILES); "all", the three together
W12_FAMILY_GRID = ((32,), (1, 4), (2,), (2, 3))
W12_VARIANTS = {
    "regs": [dict(maxnreg=cap) for cap in (128, 96, 80)],
    "acc": [dict(ACC_SCALE=True)],
    "esc": [dict(ESC_IN_LOOP=True)],
    "halves": [dict(HALVES=True)],
    "all": [dict(ACC_SCALE=True, ESC_IN_LOOP=True, HALVES=True)],
}
# --grid dot_acc (2-64 rows): W12_DOT_GRID's tiles with inline PTX, each with ACC_SCALE on and
# off (set either way: a winner becomes a MEASURED_TILES entry, where ACC_SCALE defaults to on).
# Runs 67-68 swept the tensor-core tiles before ACC_SCALE, ESC_IN_LOOP and HALVES existed; run
# 73 tried the switches on the run-68 winners' family only
DOT_ACC_GRID = "dot_acc"
# --grid split_in (2-64 rows): tensor-core tiles whose K is split inside the program
# (kernels/w12_linear's SPLIT_IN: one batched tl.dot over the K ranges, no partials in memory,
# no second launch), against the K-split tiles of q|k|v, o and down (32 weight rows, 2 warps,
# split over 4 programs and a sum launch). (BLOCK_N, SPLIT_IN, num_warps, num_stages), with
# ACC_SCALE; ptxas (sm_90, o): 16 rows split 2 on 2 warps 130 registers, 7 programs an SM,
# split 4 on 4 warps 168 and 3; 32 rows 232-255 registers, spills from split 4
SPLIT_IN_GRID = "split_in"
SPLIT_IN_TILES = ((16, 32), (2, 4), (2, 4, 8), (2, 3))
TENSOR_CORE_GRIDS = (DOT_ACC_GRID, SPLIT_IN_GRID)  # sweeps of tl.dot tiles only: 2-64 rows


def candidates(m: int, k: int, grid: str = "full") -> list[dict]:
    """W12 tile configurations for M rows (the split K must leave every split some columns);
    grid "regs" / "acc": W12_FAMILY_GRID's tiles, each also with every W12_VARIANTS[grid];
    "loop" / "loop_wide" (one row): W12_LOOP_GRIDS' element-wise tiles."""
    if grid in W12_LOOP_GRIDS:
        if m != 1:
            raise ValueError(f"--grid {grid} is for one row")
        return [
            dict(BLOCK_M=1, BLOCK_N=bn, UNROLL=unroll, SPLIT_K=1, USE_DOT=False,
                 num_warps=warps, num_stages=1, LOOP_STAGES=stages)
            for bn, unroll, warps, stages in itertools.product(*W12_LOOP_GRIDS[grid])
            if bn * unroll * 32 <= 64 * 32 * warps  # accumulator: <= 64 fp32 a thread
        ]  # fmt: skip
    if grid in TENSOR_CORE_GRIDS and m == 1:
        raise ValueError(f"--grid {grid} is for tensor-core tiles: 2-64 rows")
    tile_m = 16 if m <= 16 else (32 if m <= 32 else 64)
    if grid == SPLIT_IN_GRID:
        return [
            dict(BLOCK_M=tile_m, BLOCK_N=bn, UNROLL=1, SPLIT_K=1, SPLIT_IN=si,
                 USE_DOT=True, num_warps=warps, num_stages=stages, ACC_SCALE=True)
            for bn, si, warps, stages in itertools.product(*SPLIT_IN_TILES)
            if k % (w12.BLOCK * si) == 0
        ]  # fmt: skip
    out = []
    if m <= 4 and grid == "full":
        block_m = 1 if m == 1 else (2 if m == 2 else 4)
        for bn, unroll, warps, stages in itertools.product(*W12_ELEMENTWISE_GRID):
            if block_m * bn * unroll * 32 > 64 * 32 * warps:  # accumulator: <= 64 fp32 a thread
                continue
            out.append(
                dict(BLOCK_M=block_m, BLOCK_N=bn, UNROLL=unroll, SPLIT_K=1, USE_DOT=False,
                     num_warps=warps, num_stages=stages)
            )  # fmt: skip
    for bn, split, warps, stages in itertools.product(
        *(W12_DOT_GRID if grid in ("full", DOT_ACC_GRID) else W12_FAMILY_GRID)
    ):
        if split > 1 and (split - 1) * -(-k // (w12.BLOCK * split)) * w12.BLOCK >= k:
            continue
        cfg = dict(BLOCK_M=tile_m, BLOCK_N=bn, UNROLL=1, SPLIT_K=split, USE_DOT=True,
                   num_warps=warps, num_stages=stages)  # fmt: skip
        if grid == DOT_ACC_GRID:
            out += [dict(cfg, ACC_SCALE=True), dict(cfg, ACC_SCALE=False)]
            continue
        # the decode without inline PTX (ASM=False) read faster at 16 rows on gate_up and
        # lm_head (run 51: 2.80 vs 2.29 TB/s), slower with a K split
        for tile in (cfg, dict(cfg, ASM=False)):
            variants = [v for g in grid.split(",") for v in W12_VARIANTS.get(g, [])]
            out += [tile] + [dict(tile, **v) for v in variants]
    return out


def _compile_tiles(m: int, configs: list[dict]) -> int:
    """kernel_sweep.precompile's worker for W12 tiles: each launched once at a small shape with
    the layers' launch specialisations (N, K and the strides multiples of 16, whole blocks)."""
    x = torch.randn(m, 12288, device="cuda", dtype=torch.bfloat16)
    packed = w12.encode((torch.randn(256, 12288, device="cuda") * 0.02).to(torch.bfloat16))
    return compile_each(lambda cfg: w12_linear(x, packed, config=cfg), configs)


def check(y: torch.Tensor, ref: torch.Tensor, what: str) -> None:
    """The W12 output against the reference, to fp32 summation order (2^-6 of the largest)."""
    err = (y.float() - ref.float()).abs().max().item()
    scale = ref.float().abs().max().item()
    if not err <= 2**-6 * scale:
        raise AssertionError(f"{what}: W12 kernel off by {err} (scale {scale})")


def chained(fn, mode: str = "chain") -> float:
    """graph_time of back-to-back calls launched as the engine's one-row forwards launch their
    multiplies: EngineConfig.pdl `mode` (an 8B target's "auto" resolves to "chain") inside
    launch.forward_rows(1), so that each launch's programs start, and ask for their first
    weights, while the launch before drains. The process's launch settings come back after."""
    saved = launch.settings()
    launch.configure(mode, saved["prefetch"], saved["ahead"])
    try:
        with launch.forward_rows(1):
            return graph_time(fn)
    finally:
        launch.configure(**saved)


# the matrices of one decoder layer: issue 7's GEMV target weighs them by their bytes
LAYER_MATRICES = ("qkv", "o", "gate_up", "down")


def layer_share(results: list[dict], key: str, bandwidth: float) -> float | None:
    """One-row multiplies' bytes over their summed times (`us[key]`) as a fraction of
    `bandwidth` (TB/s), over LAYER_MATRICES: a layer's matrices weighed by their bytes (the
    W12 ones' by their 12-bit bytes, tb_s[key] being their bytes / time). None where any of
    them lacks that time."""
    rows = [r for r in results if r["m"] == 1 and r["shape"] in LAYER_MATRICES]
    if len(rows) != len(LAYER_MATRICES) or any(r["us"].get(key) is None for r in rows):
        return None
    nbytes = sum(r["tb_s"][key] * r["us"][key] * 1e6 for r in rows)  # TB/s x us = bytes / 1e6
    seconds = sum(r["us"][key] for r in rows) / 1e6
    return nbytes / seconds / (bandwidth * 1e12)


def bench_shape(
    m: int, name: str, n: int, k: int, sweep: bool, cold: bool = True, grid: str = "full"
) -> dict:
    w = (torch.randn(n, k, device="cuda") * 0.02).to(torch.bfloat16)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    packed = w12.encode(w)
    s = w12.stats(packed)
    ref = w12_linear_reference(x, packed)
    default = tile_config(m, n, k)
    plain = dict(default, ASM=False)  # the decode without inline PTX (prmt, mul.bf16x2)
    check(w12_linear(x, packed), ref, f"{name} M={m} default tiles")
    check(w12_linear(x, packed, config=plain), ref, f"{name} M={m} ASM=False")
    bf16_bytes = 2 * n * k
    ws, ps = cycled(w, cold), cycled(packed, cold)  # the weights from HBM, as in a forward
    t_cublas = graph_time(lambda: F.linear(x, ws()))
    t_skinny = graph_time(lambda: skinny_linear(x, ws()))
    t_w12 = graph_time(lambda: w12_linear(x, ps()))
    t_plain = graph_time(lambda: w12_linear(x, ps(), config=plain))
    # as a bound only (wrong products): the same planes with the escape table emptied
    bare = packed.without_escapes()
    bares = cycled(bare, cold)
    t_bare = graph_time(lambda: w12_linear(x, bares()))
    # the fused forwards' prologues (RMSNorm before qkv / gate_up, SwiGLU before down): each
    # program recomputes them, so small tiles pay for them more often
    if name == "down":
        x2 = torch.randn(m, 2 * k, device="cuda", dtype=torch.bfloat16)
        prologue = "glu"
        t_pro = graph_time(lambda: w12_linear(x2, ps(), glu=True))
        t_pro_skinny = graph_time(lambda: skinny_linear(x2, ws(), glu=True))
    else:
        nw = torch.rand(k, device="cuda", dtype=torch.bfloat16) + 0.5
        prologue = "norm"
        t_pro = graph_time(lambda: w12_linear(x, ps(), norm_weight=nw))
        t_pro_skinny = graph_time(lambda: skinny_linear(x, ws(), norm_weight=nw))
    # one row on a Hopper GPU: the engine's own one-row kernel (kernels/w12_row.py, the decode
    # forwards' since run 299), checked like the others
    # launched alone (each call after the one before has drained) and chained (`chained`: as
    # the decode graph launches them); bf16_row, the bf16 decode's kernel, the same two ways
    t_row = t_row_chained = t_row_bare = t_bf16_row = t_bf16_row_chained = None
    if m == 1 and w12_row.one_row_route(x, packed):
        check(w12_row.w12_row_linear(x, packed), ref, f"{name} M=1 w12_row")
        t_row = graph_time(lambda: w12_row.w12_row_linear(x, ps()))
        t_row_chained = chained(lambda: w12_row.w12_row_linear(x, ps()))
        # a bound (wrong products): chained with the escape table emptied
        t_row_bare = chained(lambda: w12_row.w12_row_linear(x, bares()))
        if name in LAYER_MATRICES:  # (the decode's LM head is not bf16_row's)
            t_bf16_row = graph_time(lambda: w12_row.bf16_row_linear(x, ws()))
            t_bf16_row_chained = chained(lambda: w12_row.bf16_row_linear(x, ws()))
    best, best_t = default, t_w12
    timings: list = []
    if sweep:
        configs = candidates(m, k, grid)
        best, best_t = fastest(
            lambda c: w12_linear(x, ps(), config=c), configs, best, best_t, timings
        )
        check(w12_linear(x, packed, config=best), ref, f"{name} M={m} {best}")
    return dict(
        m=m,
        shape=name,
        n=n,
        k=k,
        w12_bits_per_weight=s.bits_per_weight,
        escape_rate=s.escape_rate,
        us=dict(
            cublas=t_cublas * 1e6,
            skinny=t_skinny * 1e6,
            w12=t_w12 * 1e6,
            w12_plain=t_plain * 1e6,
            w12_without_escapes=t_bare * 1e6,  # a bound: the escape table emptied
            w12_best=best_t * 1e6,
            w12_row=t_row * 1e6 if t_row else None,  # the engine's one-row kernel (Hopper)
            w12_row_chained=t_row_chained * 1e6 if t_row else None,
            w12_row_chained_without_escapes=t_row_bare * 1e6 if t_row else None,  # a bound
            bf16_row=t_bf16_row * 1e6 if t_bf16_row else None,
            bf16_row_chained=t_bf16_row_chained * 1e6 if t_bf16_row else None,
            prologue=prologue,
            w12_with_prologue=t_pro * 1e6,
            skinny_with_prologue=t_pro_skinny * 1e6,
        ),
        tb_s=dict(  # bytes actually read / time
            cublas=bf16_bytes / t_cublas / 1e12,
            skinny=bf16_bytes / t_skinny / 1e12,
            w12=s.nbytes / t_w12 / 1e12,
            w12_plain=s.nbytes / t_plain / 1e12,
            w12_best=s.nbytes / best_t / 1e12,
            w12_row=s.nbytes / t_row / 1e12 if t_row else None,
            w12_row_chained=s.nbytes / t_row_chained / 1e12 if t_row else None,
            bf16_row=bf16_bytes / t_bf16_row / 1e12 if t_bf16_row else None,
            bf16_row_chained=bf16_bytes / t_bf16_row_chained / 1e12 if t_bf16_row else None,
        ),
        bf16_equivalent_tb_s=dict(
            w12=bf16_bytes / t_w12 / 1e12, w12_best=bf16_bytes / best_t / 1e12
        ),
        speedup_vs_cublas=t_cublas / best_t,
        speedup_vs_skinny=t_skinny / best_t,
        default=default,
        best=best,
        tiles=sorted(timings, key=lambda r: r["us"]),  # every swept tile, fastest first
    )


def swept_tiles(paths: list[str]) -> tuple[dict, dict]:
    """The tiles that beat the defaults in sweep reports (w12_speed: W12 tiles; kernel_sweep:
    bf16), as MEASURED_TILES entries of kernels/w12_linear.py and kernels/linear.py."""
    w12_tiles, bf16_tiles = {}, {}
    for path in paths:
        with open(path) as f:
            report = json.load(f)
        for r in report["results"]:
            key = (tile_rows(r["m"]), r["n"], r["k"])
            if report["bench"] == "w12_speed" and r["tb_s"]["w12_best"] > r["tb_s"]["w12"]:
                w12_tiles[key] = r["best"]
            elif report["bench"] == "kernel_sweep" and r["best_tb_s"] > r["default_tb_s"]:
                bf16_tiles[key] = r["best"]
    return w12_tiles, bf16_tiles


# end to end, more W12 arms on the same W12 models: the kernel switches each one sets
W12_ARMS = {
    "sum_in_kernel": {"SPLIT_SUM_IN_KERNEL": True},
    "acc_scale": {"ACC_SCALE_TILES": True},
    "esc_in_loop": {"ESC_IN_LOOP_TILES": True},
    "halves": {"HALVES_TILES": True},
    "all": {"ACC_SCALE_TILES": True, "ESC_IN_LOOP_TILES": True, "HALVES_TILES": True},
    "old_one_row": {"ONE_ROW_SWEPT_TILES": False, "MEASURED_TILES": {}},  # the run-19 tiles
    # the 16-row tiles before ESC_ROWS (run 266)
    "no_esc_rows": {"MEASURED_TILES": w12_kernels.MEASURED_TILES_BEFORE_ESCAPES},
    "join_input": {"JOIN_INPUT": True},  # 16-row W12 inputs in join_order (run 269)
    "no_join_input": {"JOIN_INPUT": False},  # before run 270 turned it on
    # the w12 arm again (its own generator on the same models): the W12 arms' own spread. Run
    # 273's w12 and no_join_input arms, with the same one-row launches, were 1.070x and 1.085x
    # apart in AR with tight intervals (single runs 263.2 / 263.1). Run 275 (6 rounds): w12 AR
    # 1.075x, same 1.099x, spec 1.069x / 1.054x: the W12 arms' own spread is ~2%
    "same": {},
    # kernels/w12_ws.py's route for the verify forward's W12 gate|up and down (off by default)
    "ws_verify": {"w12_ws.VERIFY": True},
    # kernels/w12_tc.py's route for the same (on by default on Hopper since run 314, its planes
    # swizzled), and the verify forwards on w12_linear's 16-row tiles instead (before run 314)
    "tc_verify": {"w12_tc.VERIFY": True},
    "linear_verify": {"w12_tc.VERIFY": False},
    # the verify's short kernels letting the multiply after them launch before their wait, and
    # the split sum on 1,024-column programs, as before run 319 (launch.WIDE_EARLY 7 and
    # w12_linear.SPLIT_SUM_BLOCK 128 since runs 319 and 321)
    "before_319": {"launch.WIDE_EARLY": 0, "w12_linear.SPLIT_SUM_BLOCK": 1024},
    # w12_tc's units of up to 16 blocks (the downs split 4 ways) and the one-row merge not letting
    # a W12 o launch before its wait, as before run 322 (w12_tc.MAX_UNIT_BLOCKS 32 and
    # launch.O_EARLY 2 since)
    "before_322": {"w12_tc.MAX_UNIT_BLOCKS": 16, "launch.O_EARLY": 0},
    # the norm kernels between o or the down and the multiply after them, as before run 325
    # (since then their split sums hand the norms on to w12_tc: models/fused.SPLIT_SUM_HAND)
    "before_325": {"models.fused.SPLIT_SUM_HAND": False},
    # the hand-off's split sums reading the norm weight after y's store, as before run 328 (since
    # then before PDL's wait: kernels/w12_linear.SPLIT_SUM_EARLY_WEIGHT)
    "before_328": {"w12_linear.SPLIT_SUM_EARLY_WEIGHT": False},
    # the one-row norm prologue's weight copied beside x after PDL's wait, as before run 330
    # (since then first of all: kernels/w12_row.NORM_WEIGHT_EARLY; bf16_row's prologue too)
    "before_330": {"w12_row.NORM_WEIGHT_EARLY": 0},
    # the one-row meta warp's escape lists asked for after its scale words and their entries after
    # PDL's wait, as before run 334 (since then beside the bases, the entries before the wait:
    # kernels/w12_row.EARLY_ESCAPES 1)
    "before_334": {"w12_row.EARLY_ESCAPES": 0},
    # and a tile ahead: the next tile's constants asked for before this tile's inputs (2)
    "escapes_ahead": {"w12_row.EARLY_ESCAPES": 2},
    # the one-row W12 multiplies on 6 stages of 2 blocks (kernels/w12_row.ROW_TILES 0), as before
    # run 338 (since then 3 stages of 4 blocks: ONE_ROW_TILE 7)
    "before_338": {"w12_row.ONE_ROW_TILE": 0},
    # gate|up on 32-row tiles with x in fp32 (w12_row.ONE_ROW_SWIGLU_TILE 1: ROW_TILES 1; 10: 2
    # stages of 4 blocks; 11: 4 stages of 2)
    "swiglu_tile_1": {"w12_row.ONE_ROW_SWIGLU_TILE": 1},
    "swiglu_tile_10": {"w12_row.ONE_ROW_SWIGLU_TILE": 10},
    "swiglu_tile_11": {"w12_row.ONE_ROW_SWIGLU_TILE": 11},
    # every one-row W12 multiply with x in fp32 on the stages of 4 blocks (ROW_TILES 9), and so
    # with gate|up on ROW_TILES 1
    "x32": {"w12_row.ONE_ROW_TILE": 9},
    "x32_swiglu_tile_1": {"w12_row.ONE_ROW_TILE": 9, "w12_row.ONE_ROW_SWIGLU_TILE": 1},
    # the one-row W12 multiplies on mma.sync (w12_row.MMA: ROW_TILES 12, 4 stages of 4 blocks;
    # 13: 2 stages)
    "mma": {"w12_row.ONE_ROW_TILE": 12},
    "mma_2_stages": {"w12_row.ONE_ROW_TILE": 13},
    "mma_deferred": {"w12_row.ONE_ROW_TILE": 14},
    "mma_deferred_2_stages": {"w12_row.ONE_ROW_TILE": 15},
    # the one-row meta warp on 4 slots of scale words and escape sums, up to 3 tiles ahead of the
    # multiplying warps (kernels/w12_row.META_SLOTS; 2: one tile ahead)
    "meta_slots_4": {"w12_row.META_SLOTS": 4},
    # the one-row W12 multiplies on a 10-stage ring, 6 stages asked for before PDL's wait
    # (kernels/w12_row.ROW_TILES 6; the default tile: 6 stages, all before it)
    "ring10_pre6": {"w12_row.ONE_ROW_TILE": 6},
    # w12_tc's K splits added up by each tile's last unit, the next norm handed on from there: no
    # split-sum launch between the multiplies (kernels/w12_tc.SUM_IN_KERNEL, off by default)
    "sum_in": {"w12_tc.SUM_IN_KERNEL": 1},
    # the one-row W12 kernel on at most 80 registers a thread: two programs an SM, the next
    # multiply's resident while this one runs (kernels/w12_row.MAXNREG; lost in run 325)
    "mr80": {"w12_row.MAXNREG": 80},
    # the same with its planes through TMA's 128-byte swizzle (w12_tc.PLANE_SWIZZLE: no bank
    # conflicts in its operand reads; runs 309-312), split_plan's K splits (since session 59: waves
    # priced with UNIT_COST_BLOCKS, q|k|v unsplit, down 4 splits)
    "tcsw_verify": {"w12_tc.VERIFY": True, "w12_tc.PLANE_SWIZZLE": 128},
    # ... with the fewest splits K allows (w12_tc.UNIT_SPLIT 1: run 309, q|k|v 18.22 us unsplit
    # against 24.14 split four ways; down 3 splits)
    "tcsw1_verify": {"w12_tc.VERIFY": True, "w12_tc.PLANE_SWIZZLE": 128, "w12_tc.UNIT_SPLIT": 1},
    # ... with the o and down split sums writing the norms after them (models/fused.SPLIT_SUM_NORM:
    # ~72 launches fewer a 16-row verify)
    "tcsw1_ssn_verify": {
        "w12_tc.VERIFY": True,
        "w12_tc.PLANE_SWIZZLE": 128,
        "w12_tc.UNIT_SPLIT": 1,
        "models.fused.SPLIT_SUM_NORM": True,
    },
    "tcsw_ssn_verify": {
        "w12_tc.VERIFY": True,
        "w12_tc.PLANE_SWIZZLE": 128,
        "models.fused.SPLIT_SUM_NORM": True,
    },
    # the verify's o on kernels/w12_tokens.py (16-row mma.sync tiles, the tokens in B's columns,
    # no K split and no split sum: run 345, H100, the verify graph -0.06 ms; on by default since
    # run 349, with run 346's proxy fence), and off: o on w12_tc's K split and its split sum
    "tokens_verify": {"w12_tokens.VERIFY": True},
    "tc_verify_o": {"w12_tokens.VERIFY": False},
    # a handed norm's 1 / RMS summed at each w12_tc unit's end, its squares' loads in flight over
    # the first unit (kernels/w12_tc.HANDED_RSTD_LATE; off, timed first by run 351)
    "rstd_late": {"w12_tc.HANDED_RSTD_LATE": 1},
    # the verify's down on kernels/w12_tokens.py too, x streamed through its own ring (no K
    # split, no split sum: w12_tokens.STREAM, on since run 357), and off: on w12_tc's K split
    # and its split sum, as before
    "stream_down": {"w12_tokens.STREAM": True},
    "tc_down": {"w12_tokens.STREAM": False},
    # the same on w12_linear's 16-row tiles (W12 "auto")
    "ssn": {"models.fused.SPLIT_SUM_NORM": True},
    # ... and each warp's own mma.sync (w12_tc.MMA_VERSION 2)
    "tcmma_verify": {"w12_tc.VERIFY": True, "w12_tc.PLANE_SWIZZLE": 128, "w12_tc.MMA_VERSION": 2},
    # both prototypes: the one-row forwards on w12_row, the 2-16-row ones on w12_tc
    "row_tc": {"w12_row.ONE_ROW": True, "w12_tc.VERIFY": True},
    # w12_tc for every W12 multiply of 1-16 rows (its one-row forwards too)
    "tc_one": {"w12_tc.ONE_ROW": True},
    "tc_all": {"w12_tc.ONE_ROW": True, "w12_tc.VERIFY": True},
    # kernels/w12_row.py for the one-row forwards' W12 multiplies (on by default on Hopper
    # since run 299), and the one-row forwards on w12_linear instead
    "row_one": {"w12_row.ONE_ROW": True},
    "row_off": {"w12_row.ONE_ROW": 0},
    "none": {
        "ACC_SCALE_TILES": False,
        "ESC_IN_LOOP_TILES": False,
        "HALVES_TILES": False,
    },
}


def _switch(flag: str) -> tuple:
    """A W12_ARMS key -> (its module, its value now): a kernels/w12_linear.py switch,
    "module.NAME" for another of specpilot.kernels, or "package.module.NAME" (models.fused)."""
    module = w12_kernels
    *path, name = flag.split(".")
    if path:
        where = ".".join(path) if len(path) > 1 else f"kernels.{path[0]}"
        module = importlib.import_module(f"specpilot.{where}")
    return module, getattr(module, name)


def end_to_end(
    context: int,
    new_tokens: int,
    engine: EngineConfig | None = None,
    extra: tuple = (),
    paired: int = 0,
    profile: bool = False,
    bf16_tiles: dict | None = None,
    pdl_arms: tuple = (),
    matrix_arms: tuple = (),
    model: str = "qwen3-8b",
    base_matrices: str = "all",
) -> dict:
    """AR and spec@6.55 (replay) with bf16 weights, then with the same weights in W12 (both arms
    with `engine`, default CUDA graphs on); then the same W12 models once for each W12_ARMS
    name in `extra` (arm "w12_<name>", with its kernel switches set) and for each
    EngineConfig.pdl mode in `pdl_arms` (arm "w12_pdl_<mode>"); then, for each
    EngineConfig.w12_matrices value in `matrix_arms`, new models (same seeds) with only those
    matrices in W12 (arm "w12_only_<names joined by +>"); the "w12" arm (and the W12_ARMS
    arms on its models) converts `base_matrices` (EngineConfig.w12_matrices). paired: then that many
    interleaved rounds of every arm (engine_speed.paired_rounds; the generators are kept) and
    of CONTROL, a second engine of the bf16 models (each speed-up judged against its spread).
    profile: each arm's GPU time by kernel of eager decode / verify / draft forwards.
    bf16_tiles: one more arm, "bf16_swept", the bf16 model with these kernels/linear.py
    MEASURED_TILES entries added (the W12 arms' tiles come with their switches). model: the
    target's models/synth.TARGET_PRESETS shape (random weights), with a DFlash-b16 drafter."""
    engine = engine or EngineConfig(cuda_graphs=True, pipeline=False)  # engine_speed's loop
    bw = copy_bandwidth()
    hf = preset_hf(model)
    draft_hf = draft_hf_config("dflash-b16", hf)
    bf16_target, bf16_drafter = build(hf, "target", 0), build(draft_hf, "draft", 1)
    out: dict = {"model": model, "context": context, "copy_bandwidth_tb_s": bw / 1e12, "arms": {}}
    arms = ("bf16", "w12", *(f"w12_{name}" for name in extra))
    arms += tuple(f"w12_pdl_{mode}" for mode in pdl_arms)  # W12 arms: before bf16_swept
    # "auto" as the engine resolves it (engine/llm.py): the LM head left bf16 where the engine
    # certifies verify blocks' heads
    head = bf16_target.lm_head.weight
    certified = certifies_verify_heads(engine.target_head, tuple(head.shape), head.device)
    matrix_sets = (parse_matrices(text, certified) for text in matrix_arms)
    only = {f"w12_only_{'+'.join(sorted(m))}": m for m in matrix_sets}
    arms += tuple(only)
    arms += ("bf16_swept",) if bf16_tiles else ()
    defaults = {flag: _switch(flag)[1] for sw in W12_ARMS.values() for flag in sw}
    bf16_measured = dict(bf16_kernels.MEASURED_TILES)
    kept: dict = {}  # arm -> (generator, its switches' setter), for the paired rounds

    def switch_to(weights: str) -> None:
        switches = defaults | W12_ARMS.get(weights.removeprefix("w12_"), {})
        for flag, value in switches.items():
            setattr(_switch(flag)[0], flag.split(".")[-1], value)
        extra_bf16 = bf16_tiles if weights == "bf16_swept" else {}
        bf16_kernels.MEASURED_TILES = bf16_measured | extra_bf16

    def prepare(weights: str, gen: Generator) -> None:
        """Before each of an arm's paired runs: its kernel switches and its launch settings."""
        switch_to(weights)
        gen.configure_launches()

    for weights in arms:
        switch_to(weights)
        if weights in ("bf16", "bf16_swept"):
            target, drafter = bf16_target, bf16_drafter
        elif weights == "w12" or weights in only:  # new models (same seeds), converted; the
            # other W12 arms reuse w12's
            target, drafter = build(hf, "target", 0), build(draft_hf, "draft", 1)
            matrices = only.get(weights, parse_matrices(base_matrices, certified))
            reports = [convert_model(m, matrices=matrices) for m in (target, drafter)]
            out["w12_convert" if weights == "w12" else f"{weights}_convert"] = [
                dict(
                    bits_per_weight=8 * r.w12_bytes / max(1, r.num_weights),
                    escape_rate=r.escape_rate,
                    num_tensors=r.num_tensors,
                )
                for r in reports
            ]
        config = engine
        if weights.startswith("w12_pdl_"):
            config = dataclasses.replace(engine, pdl=weights.removeprefix("w12_pdl_"))
        gen = Generator(target, drafter, config, torch.device("cuda"), torch.bfloat16)
        r = measure_context(gen, context, new_tokens, bw, reference=bf16_target, taus=(6.55,))
        r["weight_bytes"] = linear_bytes(target)
        r["pdl"] = gen.pdl
        if profile:
            r["kernel_profile"] = kernel_profile(gen, context)
            print_kernel_profile(f"e2e {weights}", context, r["kernel_profile"])
        out["arms"][weights] = r
        spec = r["speculative"]["6.55"]
        print(
            f"e2e {weights}: weights {r['weight_bytes'] / 1e9:.2f} GB, AR {r['ar']['tok_s']:.1f} "
            f"tok/s ({r['ar']['fraction_of_floor']:.0%} of floor), spec@6.55 (replay) "
            f"{spec['tok_s']:.0f} tok/s (step {spec['step_ms']:.2f} ms, floor "
            f"{spec['step_floor_ms']:.2f}), forcing vs bf16 AR/spec "
            f"{r['ar']['token_forcing']['passed']}/{spec['token_forcing']['passed']}",
            flush=True,
        )
        if paired:  # NOTE: each kept generator of the shared W12 models holds its own fused
            # q|k|v and gate|up weights (fused.concat_rows: ~7 GB at this shape), well in an H200
            kept[weights] = (gen, partial(prepare, weights, gen))
            if weights == "bf16":  # a second bf16 engine: the arms' own spread (run 232)
                twin = Generator(target, drafter, config, torch.device("cuda"), torch.bfloat16)
                kept[CONTROL] = (twin, partial(prepare, weights, twin))
        del gen
        if weights == arms[-1]:
            del target, drafter, bf16_drafter
        torch.cuda.empty_cache()
    if paired:
        out["paired"] = paired_rounds(kept, context, new_tokens, paired)
        for line in paired_lines(out["paired"]):
            print(f"e2e paired ({paired} rounds) {line}", flush=True)
        kept.clear()
    for flag, value in defaults.items():
        setattr(w12_kernels, flag, value)
    bf16_kernels.MEASURED_TILES = bf16_measured
    a = out["arms"]["bf16"]
    for name in arms[1:]:  # each W12 arm against bf16 (the first: "w12_over_bf16")
        b = out["arms"][name]
        ratio = {
            "ar": a["ar"]["step_ms"] / b["ar"]["step_ms"],
            "spec_6.55": b["speculative"]["6.55"]["tok_s"] / a["speculative"]["6.55"]["tok_s"],
        }
        out["w12_over_bf16" if name == "w12" else f"{name}_over_bf16"] = ratio
        print(f"e2e {name}/bf16: AR {ratio['ar']:.3f}x, spec@6.55 {ratio['spec_6.55']:.3f}x")
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", default="1,16", help="token rows of the kernel table ('': none)")
    parser.add_argument("--no-sweep", action="store_true", help="default tiles only")
    parser.add_argument(
        "--grid",
        default="full",
        help=f"the sweep's tiles: full, dot_acc (tensor-core tiles with ACC_SCALE on and off; "
        "2-64 rows), split_in (K split inside the program; 2-64 rows), loop, loop_wide (one "
        "row), or a family's "
        f"variants (comma-separated of {list(W12_VARIANTS)})",
    )
    parser.add_argument("--e2e", type=int, default=1024, help="context; 0 skips end to end")
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument(
        "--model",
        default="qwen3-8b",
        choices=MODELS,
        help="the target's shape: its multiplies in the kernel table, and end to end (random "
        "weights)",
    )
    add_l2_argument(parser)
    parser.add_argument(
        "--split-sum",
        default="launch",
        choices=["launch", "kernel"],
        help="K-split tiles: a second launch adds the slices, or the tile's last program does "
        "(kernels/w12_linear.SPLIT_SUM_IN_KERNEL)",
    )
    parser.add_argument(
        "--w12-arms",
        default="",
        help=f"end to end, more W12 arms, comma-separated: {', '.join(W12_ARMS)}",
    )
    parser.add_argument(
        "--w12-pdl",
        default="",
        help="end to end, one more W12 arm for each of these EngineConfig.pdl modes "
        "(comma-separated; arm w12_pdl_<mode>)",
    )
    parser.add_argument(
        "--w12-matrices",
        default="",
        help="end to end, one more arm for each of these EngineConfig.w12_matrices values "
        "(';'-separated, e.g. 'gate_up,lm_head;gate_up,lm_head,down'): new models with only "
        "those matrices in W12 (arm w12_only_<names joined by +>)",
    )
    parser.add_argument(
        "--w12-base",
        default="all",
        help="end to end, the EngineConfig.w12_matrices of the w12 arm and of the --w12-arms "
        "arms on its models (default all; auto: as the engine resolves it)",
    )
    parser.add_argument(
        "--paired",
        type=int,
        default=0,
        help="end to end, then this many interleaved rounds of every arm: speed-ups over bf16 "
        "with 95%% bootstrap intervals (0: none)",
    )
    parser.add_argument(
        "--kernel-profile",
        type=int,
        default=0,
        help="1: end to end, each arm's GPU time by kernel of eager forwards (torch.profiler)",
    )
    parser.add_argument(
        "--tiles-from",
        default="",
        help="end to end, two more arms with the winning tiles of these sweep reports "
        "(comma-separated JSON of w12_speed and kernel_sweep): w12_swept and bf16_swept",
    )
    parser.add_argument(
        "--tiles",
        default="",
        help="a tiles file (EngineConfig.tiles) over the compiled-in tiles for the whole run: "
        "kernel table and every end-to-end arm",
    )
    parser.add_argument(
        "--tiles-out",
        default="",
        help="write --tiles-from's winners as a tiles file (EngineConfig.tiles, --tiles)",
    )
    add_launch_arguments(parser)  # end to end only
    parser.add_argument(
        "--pipeline",
        type=int,
        default=0,
        help="1: end to end (every arm, paired rounds too) with EngineConfig.pipeline, the "
        "engine's default on CUDA; 0 (the default since run 10): the host-synchronous loop",
    )
    parser.add_argument(
        "--switch",
        type=module_switch,
        action="append",
        default=[],
        metavar="MODULE.NAME=INT",
        help="a specpilot module switch for the whole run, every arm (engine_speed's --switch; "
        "the W12 arms' own switches are set over it), e.g. kernels.w12_row.BF16_ONE_ROW=1",
    )
    parser.add_argument("--out")
    args = parser.parse_args()
    apply_switches(switch_values(args.switch))  # before any model or table is built
    whole = ("full", *TENSOR_CORE_GRIDS, *W12_LOOP_GRIDS)
    if args.grid not in whole and set(args.grid.split(",")) - set(W12_VARIANTS):
        parser.error(f"--grid: one of {whole} or a comma-separated subset of {list(W12_VARIANTS)}")
    if args.grid in W12_LOOP_GRIDS and args.rows != "1":
        parser.error(f"--grid {args.grid} sweeps one row: --rows 1")
    if args.grid in TENSOR_CORE_GRIDS and "1" in args.rows.split(","):
        parser.error(f"--grid {args.grid} sweeps tensor-core tiles: 2-64 rows")
    extra = tuple(a for a in args.w12_arms.split(",") if a)
    pdl_arms = tuple(m for m in args.w12_pdl.split(",") if m)
    if set(pdl_arms) - set(PDL_MODES):
        parser.error(f"--w12-pdl: unknown {sorted(set(pdl_arms) - set(PDL_MODES))}")
    if set(extra) - set(W12_ARMS):
        parser.error(f"--w12-arms: unknown {sorted(set(extra) - set(W12_ARMS))}")
    matrix_arms = tuple(m for m in args.w12_matrices.split(";") if m.strip())
    for value in matrix_arms:
        try:
            parse_matrices(value)
        except ValueError as e:
            parser.error(f"--w12-matrices: {e}")
    swept = {"w12": {}, "bf16": {}}
    if args.tiles_from:  # the sweeps' winners: arms w12_swept and bf16_swept
        swept["w12"], swept["bf16"] = swept_tiles(args.tiles_from.split(","))
        # over the compiled-in MEASURED_TILES, as EngineConfig.tiles puts a tiles file's
        W12_ARMS["swept"] = {"MEASURED_TILES": w12_kernels.MEASURED_TILES | swept["w12"]}
        extra = (*extra, "swept")
        print(f"swept tiles: W12 {swept['w12']}, bf16 {swept['bf16']}")
        if args.tiles_out:  # for EngineConfig.tiles / --tiles
            tiles.write(args.tiles_out, swept)
    elif args.tiles_out:
        parser.error("--tiles-out writes the winners of --tiles-from")
    own_tiles = tiles.read(args.tiles) if args.tiles else None
    if not args.rows and not args.e2e:  # nothing to time (e.g. only --tiles-out): no GPU needed
        return
    w12_kernels.SPLIT_SUM_IN_KERNEL = args.split_sum == "kernel"
    if own_tiles is not None:  # before anything reads the tables (end_to_end keeps them as found)
        tiles.install(own_tiles)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    results = []
    print(
        f"{'M':>3} {'shape':<8} {'cuBLAS':>7} {'skinny':>7} {'W12':>7} {'noASM':>7} "
        f"{'W12best':>8} "
        f"TB/s read   {'W12 bf16-eq':>11}  speed-up vs cuBLAS / skinny   best tile"
    )
    rows = [int(r) for r in args.rows.split(",") if r]  # --rows "": end to end only
    # issue 7's GEMV target is a fraction of the measured bandwidth (a device-to-device copy)
    bandwidth = copy_bandwidth() / 1e12 if 1 in rows else None
    for m in rows:
        if not args.no_sweep:
            precompile(_compile_tiles, m, candidates(m, 4096, args.grid))
        for name, (n, k) in layer_shapes(args.model).items():
            r = bench_shape(m, name, n, k, not args.no_sweep, args.l2 == "cold", args.grid)
            results.append(r)
            t = r["tb_s"]
            print(
                f"{m:>3} {name:<8} {t['cublas']:7.2f} {t['skinny']:7.2f} {t['w12']:7.2f} "
                f"{t['w12_plain']:7.2f} {t['w12_best']:8.2f}"
                "           "
                f"{r['bf16_equivalent_tb_s']['w12_best']:11.2f}  "
                f"{r['speedup_vs_cublas']:6.2f}x / {r['speedup_vs_skinny']:.2f}x          "
                f"{r['best']}",
                flush=True,
            )
            us = r["us"]
            print(
                f"    {name} M={m}: default {us['w12']:.1f} us, escape table emptied (a bound) "
                f"{us['w12_without_escapes']:.1f}",
                flush=True,
            )
            if us["w12_row"] is not None:
                share = t["w12_row"] / bandwidth
                r["w12_row_of_copy_bandwidth"] = share
                r["w12_row_chained_of_copy_bandwidth"] = t["w12_row_chained"] / bandwidth
                bf16 = ""
                if us["bf16_row"] is not None:
                    r["bf16_row_chained_of_copy_bandwidth"] = t["bf16_row_chained"] / bandwidth
                    bf16 = (f"; bf16_row alone {us['bf16_row']:.1f} us, chained "
                            f"{us['bf16_row_chained']:.1f} us = "
                            f"{r['bf16_row_chained_of_copy_bandwidth']:.0%}")  # fmt: skip
                print(f"    {name} M=1: the engine's one-row kernel (w12_row) {us['w12_row']:.1f} "
                      f"us, {t['w12_row']:.2f} TB/s of its W12 bytes = {share:.0%} of the "
                      f"copy bandwidth ({bandwidth:.2f} TB/s); chained "
                      f"{us['w12_row_chained']:.1f} us = "
                      f"{r['w12_row_chained_of_copy_bandwidth']:.0%} (escapes emptied, a "
                      f"bound: {us['w12_row_chained_without_escapes']:.1f}){bf16}",
                      flush=True)  # fmt: skip
    layer = {key: layer_share(results, key, bandwidth) if bandwidth else None
             for key in ("w12_row", "w12_row_chained", "bf16_row", "bf16_row_chained")}  # fmt: skip
    if layer["w12_row"] is not None:
        shares = ", ".join(f"{key} {v:.1%}" for key, v in layer.items() if v is not None)
        print(f"one-row multiplies of a layer weighed by their bytes, of the copy bandwidth: "
              f"{shares}", flush=True)  # fmt: skip
    report = {
        "bench": "w12_speed",
        "gpu": torch.cuda.get_device_name(),
        "l2": args.l2,
        "split_sum": args.split_sum,
        "tiles_file": tiles.to_json(own_tiles) if own_tiles is not None else None,
        "switches": {f"{path}.{name}": value for path, name, value in args.switch},
        "copy_bandwidth_tb_s": bandwidth,
        "layer_of_copy_bandwidth": layer if rows else None,
        "results": results,
    }
    save(report, args.out)  # the kernel table survives a failure end to end
    if args.e2e:
        engine = EngineConfig(cuda_graphs=True, pdl=args.pdl, weight_prefetch=args.weight_prefetch,
                              l2_ahead=args.l2_ahead, pipeline=bool(args.pipeline))  # fmt: skip
        report["end_to_end"] = end_to_end(
            args.e2e, args.new_tokens, engine, extra, args.paired, bool(args.kernel_profile),
            swept["bf16"], pdl_arms, matrix_arms, args.model, args.w12_base,
        )  # fmt: skip
        launches = {"pdl": engine.pdl, "weight_prefetch": engine.weight_prefetch,
                    "l2_ahead": engine.l2_ahead, "pipeline": engine.pipeline}  # fmt: skip
        report["end_to_end"]["engine"] = launches
        if args.tiles_from:  # as a tiles file's content
            report["end_to_end"]["swept_tiles"] = tiles.to_json(swept)
    finish(report, args.out)


if __name__ == "__main__":
    main()
