"""Skinny matrix multiply with W12 weights decoded in registers: y = x @ W^T, M <= 64 rows.

The contract is kernels/linear.py's `skinny_linear` (same optional RMSNorm / SwiGLU prologue and
residual epilogue, same rounding points), with the [N, K] bf16 weight given as a `W12Weight`
(formats/w12.py, whose doc gives the layout and the exactness argument used here).

The planes are read as 32-bit words: per block of 256 columns and row, 32 word positions i, with
two `low` words (slices 0-3 and 4-7, one weight per byte) and one `codes` word (8 codes) each.
Per word position, with no per-weight branch, gather or shuffle:
- the high bytes `s << 7 | d` of 4 weights come from the code word in ~3 integer ops for 4
  (SWAR: the 4 bytes at once);
- one `prmt` puts two weights' high and low bytes side by side (a bf16x2 pair whose exponents
  are e - 2b), one `mul.rn.bf16x2` by the two group scales 2^(2b) makes them the exact weights
  (a power-of-two scaling of normal numbers; zeros and escapes stay 0), and one shift or mask per
  weight widens it to fp32. Where inline PTX cannot run (the CPU interpreter, or config
  ASM=False) the same values come from shifts and masks and an fp32 multiply;
- each byte lane q of a word is slice q: a tile of weights multiplying 32 consecutive columns of
  x, so x is read in contiguous runs and the weights are never reordered.
The group scale is one value per row and half block (group_size a multiple of 128; per slice for
a multiple of 32; gathered per column otherwise). Counted in the sm_90 SASS of the default tiles
(per weight and thread, loop body): M = 1 about 4.9 instructions (~3 integer), M = 16 about 5.4;
the previous layout's kernel took ~25 and ~20 (a per-weight load of the group base, a nibble
interleave through shared memory, ~10 integer ops per weight, register spills at M = 1).

M = 1 (USE_DOT=False): tiles [1, UNROLL, BLOCK_N, 32] (UNROLL blocks side by side, blocks ahead
of rows so that Triton lays threads along K and keeps rows in registers); products accumulate
element-wise in fp32 and are reduced once at the end. M >= 2 (USE_DOT=True): per slice, tl.dot of
the decoded [BLOCK_N, 32] bf16 weights (the left operand) by x^T [32, BLOCK_M]: the accumulator
is y^T. In the sm_90 SASS (compiled with the launch's 16-byte specialisations) the planes and x
come through cp.async pipelining, the weights are decoded in the registers of wgmma's left
operand (no shared-memory staging), and each slice ends in a warpgroup wait. Joining the 8
slices into one [BLOCK_N, 256] operand (tried as WIDE) took the planes out of the pipeline
and staged the weights in shared memory: 3-4x slower on the H200 (docs/LOG.md run 63).
With ACC_SCALE (tensor-core tiles, group sizes a multiple of 128) the weights are decoded
times the one constant 2^126 instead of their group's 2^(2b), each half block's product is summed
on its own, and that sum is multiplied by its rows' 2^(2b - 126): exact powers of two on normal
numbers (weights 2^126 R lie in [1, 2^15)), so only the summation order changes.
SPLIT_K > 1 splits K over programs (fp32 partial sums, then `_split_sum_kernel` adds them, rounds
and adds the residual) when the tiles alone are too few. SPLIT_IN > 1 (tensor-core tiles, K a
multiple of SPLIT_IN blocks) splits K inside the program instead: SPLIT_IN contiguous K ranges
side by side as a leading tile dimension, one batched tl.dot for all of them, the ranges' sums
added once after the loop, so no partials in memory and no second launch. No tile uses it:
at 16 rows its best tiles took 25.7 / 18.0 / 47.2 us for q|k|v, o and down against the K-split
tiles' 16.8 / 13.7 / 29.1 (docs/LOG.md run 119; bench/w12_speed.py --grid split_in).

A zero or escaped weight decodes to +-0 in the main loop; the epilogue adds x[:, col] * w for
each escaped (col, w) of the program's rows from the CSR escape table (products are exact in
fp32, so only the summation order differs from multiplying by the decoded weight, as between any
two kernels); each row's first escape is fetched ahead: before the main loop, where its three
dependent loads delay the first weight load, or (ESC_IN_LOOP) in the first loop step once the
planes' loads are issued.
ESC_ROWS > 0 (the 16-row ESCAPE_TILES) instead spreads a row's escapes over the K splits and
fetches each row's first ESC_ROWS over the loop's first two steps (offsets, then entries: no
load waits on another inside a step), the input at their columns after the loop: every program
of a one-wave grid had waited for those dependent loads at once (docs/LOG.md runs 264-268).
JOIN tiles put a half block's 4 slices in one tl.dot with K in word order (`_joined`); JOIN 2
reads an input its producer wrote in that order (join_order, x_order "join").
The weights stream once, at 1.5 bytes each plus the bases and escapes.

NOTE: an escaped weight's 0 in the main loop meets an infinite or NaN activation as 0 * inf =
NaN where the decoded weight would give +-inf; activations are finite in the models we run.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from specpilot.formats.w12 import BLOCK, SLICE, W12Weight, decode
from specpilot.kernels import launch, trace, w12_mma
from specpilot.kernels.common import (
    INTERPRETED,
    dot,
    handed_rstd,
    handed_squares,
    handoff_weight,
    input_tile,
    interpreted_tile,
    join_position,
    pdl_enter,
    row_rstd,
    store_handoff,
    store_handoff_with,
    store_output,
    store_split,
    store_swiglu,
    swiglu_tile_ok,
    trace_mark,
    weight_rows,
    zeroed_counters,
)
from specpilot.kernels.elementwise import NormAfter, silu_mul, split_sum_norm
from specpilot.kernels.linear import (
    Handoff,
    check_handoff,
    check_prologue_epilogue,
    hand_arguments,
    loop_stages,
    skinny_linear_reference,
    tile_rows,
)
from specpilot.kernels.w12_mma import _high_bytes, escape_arrays

MAX_ROWS = 64
# K-split tiles: the tile's last program adds the slices (no _split_sum_kernel launch). False: on
# the H200 it was no faster than the sum launch (16-row q|k|v 1.85 vs 1.89 TB/s, down 2.14 vs
# 2.23; docs/LOG.md run 57), nor end to end under pdl "chain" (run 119: W12 spec@6.55 0.977x
# bf16 against 0.999x), nor on run 266's 16-row down tile with ESC_ROWS and JOIN 2 (run 275: W12
# auto verify 4.090 ms against 4.089 / 4.095 back to back, where the split_sum launches took 69 us
# a verify); bench/w12_speed.py --split-sum kernel measures it.
SPLIT_SUM_IN_KERNEL = False
# The split sum's launch (_split_sum_kernel): columns a program (a power of 2, >= 128) and warps.
# Run 318 (H100, the W12 verify graph with w12_tc's route, traced): 64 programs of 1,024 columns
# (16 rows) took 2.8 us from the multiply's exit after o (2 splits) and 6.3 after the down (4).
# Run 319: 256 columns (256 programs) 1.7 and 2.1 us, the verify 4.985 ms against 5.107 / 5.135
# back to back (on 2 warps: 5.022). Run 320 (with launch.WIDE_EARLY 7): 128 columns 4.805 ms
# against 256's 4.877 / 4.875 (the down's split sum 4.1 -> 3.5 us). Run 321: end to end at 1k,
# 4 paired rounds with forcing, W12 spec@6.55 1.135x [1.118-1.153] over bf16 with 128 and
# WIDE_EARLY against 1.059x [1.042-1.076] before run 319. 128 since run 321. Run 326 (with
# models/fused.SPLIT_SUM_HAND, the split sum squaring and scaling too: 5.4 / 4.7 us exit to
# exit): 256 columns 4.868 ms, 2 warps 4.865, against 128 on 4 warps' 4.839 / 4.840. Run 329
# (with SPLIT_SUM_EARLY_WEIGHT): 256 columns 4.747 against 4.675 / 4.675 (o's split sum 2.9 ->
# 5.7 us); run 328: 1 warp 4.726 against 4.697.
SPLIT_SUM_BLOCK = 128
SPLIT_SUM_WARPS = 4
# Where the split sum hands the next norm on (models/fused.SPLIT_SUM_HAND), its programs read that
# norm's weight columns before PDL's wait, while the multiply before still runs, instead of after
# y's store (a load the compiler keeps behind the store: one more round trip to the end of each
# program). The weight is a constant (as rope.EARLY_TABLES's tables). Run 325-327 (H100): the
# hand-off's split sums took 4.7-5.5 us exit to exit against 1.7 without it, 72 a 16-row verify.
# Run 328 (H100, the W12 verify graph back to back): 4.697 ms against 4.720 / 4.722 (o's split sum
# 5.07 -> 3.70 us, the down's 4.30 -> 2.96; the q|k|v after it +1.2); on one warp as well, 4.726.
# End to end at 1k, paired with token forcing: W12 spec@6.55 1.150x [1.146-1.153] over bf16
# against 1.142x [1.139-1.145] (Qwen3-8B, 4 rounds), 1.137x [1.132-1.145] against 1.128x
# [1.124-1.133] (Llama-3.1-8B, 3); AR level. On since run 328.
SPLIT_SUM_EARLY_WEIGHT = True
SWITCH_RULES = {
    "SPLIT_SUM_BLOCK": (lambda n: n in (128, 256, 512, 1024, 2048, 4096), "a power of 2, 128-4096"),
    "SPLIT_SUM_WARPS": (lambda n: n in (1, 2, 4, 8), "1, 2, 4 or 8"),
}
# Tensor-core tiles (group sizes a multiple of 4 * SLICE): the weights decoded times 2^126 for
# every group alike, each half block's product summed on its own and scaled once by its rows'
# 2^(2b - 126), so the group bases leave the per-weight decode (in the sm_90 SASS of the 16-row
# tile: 695 -> 616 loop instructions a block, 5 -> 2 barriers, no shared-memory stores; the
# bases were a [32, 1] byte tile moved into the operand's layout through shared memory). The
# sums differ from the other tiles' only in order. On the H200 (docs/LOG.md run 73) it won the
# 16-row sweep for q|k|v, gate_up and lm_head and took W12 spec@6.55 from 873 to 969 tok/s.
ACC_SCALE_TILES = True
# Every tile: each row's first escape fetched in the first loop step, after the planes' loads
# are issued, instead of before the loop. In the sm_90 SASS the default 16-row tile issues 41
# loads (three dependent rounds: the escape offsets, the escapes, x at their columns) before
# its first weight load, the one-row tile 12; with it, 1 each. On the H200 (docs/LOG.md run
# 73): W12 spec@6.55 873 -> 967 tok/s, AR 220.0 -> 226.5 (bench/w12_speed.py --w12-arms).
ESC_IN_LOOP_TILES = True
# Tried and deleted (docs/LOG.md runs 126-128), after the default tiles with their escape tables
# emptied (a bound, wrong products) ran 16 rows 3-9% faster (gate_up 45.7 -> 42.0 us, down 29.4
# -> 26.8, lm_head 243.8 -> 231.5) and one row 0-4%: the escape table's entries loaded
# first thing, before the PDL wait and the planes (ESC_AHEAD: every later load waited for their
# two dependent latencies; one-row o 10.9 -> 14.3 us, W12 AR 1.092x bf16 against 1.127x,
# spec@6.55 0.935x against 1.021x), and each row's escapes after its first taken 2 or 4 at once
# in one tile (ESC_REST: 16-row gate_up 44.6 -> 45.0 / 52.3 us, lm_head 239.4 -> 241.3 /
# 276.5; W12 spec@6.55 0.987x / 0.831x bf16 against 0.979x). Nor does the first escapes' place
# matter (run 128: before the loop, in its first step or after it, every shape within ~1 us of
# the others, though after the loop ptxas counts 128-135 registers against 164-168 at 16 rows).
# Tensor-core tiles with inline PTX: the decoded bf16 pairs go to tl.dot as their two halves
# instead of widened to fp32 and narrowed back (sm_90 SASS of the 16-row tile: 688 -> 557 loop
# instructions a block, with ACC_SCALE 617 -> 497; the same bits). On the H200 (docs/LOG.md
# runs 73-74): alone +1% W12 spec@6.55 (inside the spread); on top of ACC_SCALE and
# ESC_IN_LOOP 942 -> 988 tok/s in one process.
HALVES_TILES = True
# Tried and deleted (docs/LOG.md runs 215-216): the group bases of element-wise tiles read as
# 32-bit words inside the loop's cp.async pipeline (BASE_WORDS), after Nsight Compute put 8.5%
# of the one-row down's stall samples on the first use of a byte base loaded in the same step
# (sm_90 SASS: LDG.U8 8 -> 0, LDGSTS 42 -> 48, +32 instructions). In the graph the down 22.78
# -> 22.43 us traced, but back to back the W12 "auto" decode 3.735 -> 3.762-3.766 ms, and paired
# end to end (every matrix in W12) AR 1.084x -> 1.062x bf16: the stalls moved, not went.
# Tried and deleted (docs/LOG.md run 262): the ACC_SCALE group bases loaded at the loop step's top
# (BASE_EARLY), as bytes or as the word of 4 bases that the cp.async pipeline takes, after
# Nsight Compute put 20% of the 16-row gate|up's stall samples on their use (run 260): level
# (gate|up 44.60 -> 44.54 / 45.88 us, down 29.72 -> 29.87 / 30.09).
# Tried and deleted (docs/LOG.md runs 79-80): the ACC_SCALE group bases loaded one loop step
# ahead (BASE_AHEAD: no 16-row shape faster, W12 spec@6.55 0.937x bf16 vs 0.966x without), and
# one-row tiles by persistent programs loading the next step's planes during this one (STREAM:
# no one-row shape faster, W12 AR 0.959x bf16 vs 1.084x without).
# One-row tiles from the 1-row sweep with the switches above on (docs/LOG.md run 77): the
# tensor-core tile for N >= 16384 (the LM head; gate_up until run 83's MEASURED_TILES), 4 rows
# a program for N <= 4096 (o, down). False: the run-19 tiles (2 rows a program below N =
# 65,536).
ONE_ROW_SWEPT_TILES = True
# Tiles measured per (rows, N, K) on the H200 that replace tile_config's rules (as kernels/
# linear.py's MEASURED_TILES; bench/w12_speed.py --tiles-from swaps them for an arm). One row,
# element-wise tiles whose loop pipelines the planes' loads (LOOP_STAGES; run 83, --grid loop):
# q|k|v 2.48 -> 2.69 TB/s, gate_up 3.39 (the tensor-core tile) -> 3.61; W12 AR 1.092x ->
# 1.131x bf16 in the same paired rounds (o and down: no loop tile beat theirs).
# Run 88 (--grid loop_wide, around run 83's): gate_up 3.62 -> 3.87 TB/s and lm_head 4.15 -> 4.51
# with 16 rows a program, down 3.21 -> 3.22 with 2 warps; W12 AR 1.094x -> 1.124x bf16 in the
# same paired rounds (o: no loop tile won).
_LOOP_ONE_ROW = dict(BLOCK_M=1, BLOCK_N=8, UNROLL=2, SPLIT_K=1, USE_DOT=False, num_warps=4,
                     num_stages=1, LOOP_STAGES=3)  # fmt: skip
_WIDE_SIXTEEN_ROWS = dict(BLOCK_M=16, BLOCK_N=64, UNROLL=1, SPLIT_K=1, USE_DOT=True, num_warps=4,
                          num_stages=3, ACC_SCALE=True)  # fmt: skip
MEASURED_TILES: dict[tuple[int, int, int], dict] = {
    (1, 6144, 4096): _LOOP_ONE_ROW,
    (1, 24576, 4096): _LOOP_ONE_ROW | dict(BLOCK_N=16),
    (1, 151936, 4096): _LOOP_ONE_ROW | dict(BLOCK_N=16),
    (1, 4096, 12288): _LOOP_ONE_ROW | dict(BLOCK_N=4, UNROLL=4, num_warps=2),
    # Run 115 (--rows 16 --grid dot_acc, the first 16-row sweep with ACC_SCALE in every tile):
    # 64 weight rows on 4 warps (wgmma), 3 stages, for the wide shapes: gate_up 2.98 -> 3.36
    # TB/s, lm_head 3.60 -> 3.84; W12 16-row forward 4.98 -> 4.74 ms, W12 spec@6.55 0.940x ->
    # 0.979x bf16 in the same paired rounds (q|k|v, o, down: no tile beat tile_config's)
    (16, 24576, 4096): _WIDE_SIXTEEN_ROWS,
    (16, 151936, 4096): _WIDE_SIXTEEN_ROWS,
    # Run 123 (--model llama3.1-8b, --grid loop_wide at one row, dot_acc at 16): Llama-3.1-8B's
    # own shapes (its q|k|v and o are Qwen3's), until then on the rules. One row: gate_up 2.77
    # -> 3.97 TB/s, lm_head 4.04 -> 4.48, down 3.23 -> 3.27; 16 rows: gate_up 2.35 -> 3.36,
    # lm_head 3.57 -> 3.90 (64 rows on 2 warps, 2 stages: Qwen3's 4-warp tile takes 66.6 us at
    # this gate_up against 52.8). End to end (run 124, paired): W12 "auto" AR 1.157x bf16, spec
    # 1.067x, where run 122 without these tiles had single runs of 1.03x and 0.92x.
    (1, 28672, 4096): _LOOP_ONE_ROW | dict(BLOCK_N=16, UNROLL=1, num_warps=2),
    (1, 4096, 14336): _LOOP_ONE_ROW | dict(BLOCK_N=4, UNROLL=4, num_warps=2),
    (1, 128256, 4096): _LOOP_ONE_ROW | dict(BLOCK_N=16),
    (16, 28672, 4096): _WIDE_SIXTEEN_ROWS | dict(num_warps=2, num_stages=2),
    (16, 128256, 4096): _WIDE_SIXTEEN_ROWS | dict(num_warps=2, num_stages=2),
}
# 16-row tiles whose escapes are fetched over the loop's first two steps (ESC_ROWS: each row's
# first ESC_ROWS escapes, spread over the K splits), put over MEASURED_TILES. The escapes'
# dependent loads (offsets, entries, the input at their columns) had stalled every program of
# these one-wave grids at once: with the escape table emptied (a bound) the 16-row tiles ran
# 7-15% faster (docs/LOG.md run 264). Runs 265-266 (bench/w12_join.py, Qwen3-8B): q|k|v 17.56 ->
# 16.60 us, o 14.78 -> 13.98 (64 rows on 4 warps), gate_up 45.35 -> 44.75, down ~30 -> 27.82 (64
# rows on 4 warps, K split 4); their emptied-table bounds 16.15, 13.25, 41.86, 26.55. Back to
# back (run 268) the W12 auto verify 4.298 -> 4.156 ms. At one row they lost where they changed
# the tile's registers most (o 10.92 -> 12.8-13.1 us) and moved the others by 0-2%: not used
# there standalone (run 266), yet in the graph the one-row gate|up and down won (run 271, below).
# MEASURED_TILES_BEFORE_ESCAPES: the table before them (bench/w12_speed.py no_esc_rows).
_ESCAPE_DOWN = dict(BLOCK_M=16, BLOCK_N=64, UNROLL=1, SPLIT_K=4, USE_DOT=True, num_warps=4,
                    num_stages=3, ACC_SCALE=True)  # fmt: skip
ESCAPE_TILES: dict[tuple[int, int, int], dict] = {
    (16, 6144, 4096): _ESCAPE_DOWN | dict(BLOCK_N=32, num_warps=2, num_stages=2, ESC_ROWS=1),
    (16, 4096, 4096): _ESCAPE_DOWN | dict(ESC_ROWS=1),
    (16, 24576, 4096): _WIDE_SIXTEEN_ROWS | dict(ESC_ROWS=4),
    (16, 4096, 12288): _ESCAPE_DOWN | dict(ESC_ROWS=4),
    # Run 271 (bench/w12_join.py --model llama3.1-8b): Llama-3.1-8B's 16-row down 33.26 us (the
    # best tile without ESC_ROWS) -> 30.30 (esc4; with JOIN 2 and esc2 29.42); its q|k|v and o
    # are Qwen3's shapes (esc1 16.49 and 14.08 there)
    (16, 4096, 14336): _ESCAPE_DOWN | dict(ESC_ROWS=4),
    # Run 271 (bench/h200/esc272.sh's timeline, back to back, with bench/h200/esc1row.json):
    # Qwen3-8B's one-row gate|up with ESC_ROWS 1 and down with 4 took the W12 auto decode 3.697
    # -> 3.652 ms (base2 3.694), verify level (4.111 / 4.119 / 4.121)
    (1, 24576, 4096): MEASURED_TILES[(1, 24576, 4096)] | dict(ESC_ROWS=1),
    (1, 4096, 12288): MEASURED_TILES[(1, 4096, 12288)] | dict(ESC_ROWS=4),
    # Run 273 (bench/w12_join.py --model llama3.1-8b, each shape's own tile): Llama-3.1-8B's
    # 16-row gate|up (64 rows on 2 warps) 53.64 -> 51.96 us with ESC_ROWS 2 (emptied table 50.65;
    # Qwen3's 4-warp tile with JOIN 2 57.84), its one-row down 27.34 -> 26.70 with 4 (one-row
    # gate|up: esc1 lost, 45.80 -> 47.09)
    (16, 28672, 4096): MEASURED_TILES[(16, 28672, 4096)] | dict(ESC_ROWS=2),
    (1, 4096, 14336): MEASURED_TILES[(1, 4096, 14336)] | dict(ESC_ROWS=4),
}
MEASURED_TILES_BEFORE_ESCAPES = dict(MEASURED_TILES)
MEASURED_TILES |= ESCAPE_TILES
# multiplies of at most this many rows with no prologue, SwiGLU epilogue or norm hand-off go to
# kernels/w12_mma.py (mma.sync, ~2.7 SASS instructions a weight against the element-wise tiles'
# 6.7-6.9) where it takes them (w12_mma.mma_usable); 0: never. On the H200 (docs/LOG.md runs
# 220-223, bench/w12_mma_speed.py) one row was level standalone and slower in the graph (W12
# "all" decode 3.74 -> 4.41 ms: q|k|v, o, down and the LM head, which take no prologue there).
# It takes up to 16 rows (verify blocks): not measured there yet (bench/h200/mma226.sh).
MMA_ROWS = 0
ACC_SHIFT = tl.constexpr(126)  # 2^126 * (a weight with its exponent taken down by 2b) is >= 1
ACC_FACTOR = tl.constexpr(2.0**126)


@triton.jit
def _weight_pair(low, high, scale0, scale1, FIRST: tl.constexpr, ASM: tl.constexpr,
                 HALVES: tl.constexpr = False):  # fmt: skip
    """Weights of byte lanes FIRST and FIRST + 1 of int32 words of low bytes and high bytes, times
    their group scales 2^(2b) (exact, see formats/w12.py), as two fp32 tensors. ASM: one `prmt`
    puts the high and low bytes side by side (a bf16x2 pair), one `mul.rn.bf16x2` scales it by
    the scales' bf16 bits, and a shift or a mask widens each half (HALVES: the two bf16 halves
    are returned as they are, for tl.dot, which would narrow them again); else plain Triton,
    with the scales as fp32."""
    if ASM:
        scale = scale0 | (scale1 << 16)
        # prmt: result byte r = byte sel[r] of {high, low} (low = bytes 0-3, high = bytes 4-7):
        # 0x5140 = (high 1, low 1, high 0, low 0), 0x7362 = (high 3, low 3, high 2, low 2)
        if FIRST == 0:
            pair = tl.inline_asm_elementwise(
                "{ .reg .b32 t; prmt.b32 t, $1, $2, 0x5140; mul.rn.bf16x2 $0, t, $3; }",
                "=r,r,r,r",
                [low, high, scale],
                tl.int32,
                True,
                1,
            )
        else:
            pair = tl.inline_asm_elementwise(
                "{ .reg .b32 t; prmt.b32 t, $1, $2, 0x7362; mul.rn.bf16x2 $0, t, $3; }",
                "=r,r,r,r",
                [low, high, scale],
                tl.int32,
                True,
                1,
            )
        if HALVES:  # the pair's two bf16 halves as they are (for tl.dot: no fp32 round trip)
            first = pair.to(tl.int16).to(tl.bfloat16, bitcast=True)
            second = (pair >> 16).to(tl.int16).to(tl.bfloat16, bitcast=True)
        else:
            first = (pair << 16).to(tl.float32, bitcast=True)
            second = (pair & -65536).to(tl.float32, bitcast=True)
    else:
        shift: tl.constexpr = 8 * FIRST
        first = (((high >> shift) & 0xFF) << 24) | (((low >> shift) & 0xFF) << 16)
        second = (((high >> (shift + 8)) & 0xFF) << 24) | (((low >> (shift + 8)) & 0xFF) << 16)
        first = first.to(tl.float32, bitcast=True) * scale0
        second = second.to(tl.float32, bitcast=True) * scale1
    return first, second


@triton.jit
def _joined(low, high, scale, ASM: tl.constexpr, dtype):
    """The 4 slices of a half block (words `low`, high bytes `high`, [BLOCK_N, SLICE]) times
    `scale` (ACC_SCALE's one constant) as one [BLOCK_N, 4 SLICE] tl.dot operand in the K order
    `_join_order` gives: word position i = 4c + t and byte lane (slice) q = 2 qh + ql at
    K index 16 c + 8 qh + 2 t + ql. In a tensor-core operand's registers a thread holds, per
    16 K, indices 2t, 2t + 1, 2t + 8 and 2t + 9: the four lanes of one word, each pair of
    _weight_pair (lanes 2 qh, 2 qh + 1) one register as decoded."""
    if ASM:
        q0, q1 = _weight_pair(low, high, scale, scale, 0, ASM, True)
        q2, q3 = _weight_pair(low, high, scale, scale, 2, ASM, True)
    else:
        q0, q1 = _weight_pair(low, high, scale, scale, 0, ASM)
        q2, q3 = _weight_pair(low, high, scale, scale, 2, ASM)
        q0, q1, q2, q3 = q0.to(dtype), q1.to(dtype), q2.to(dtype), q3.to(dtype)
    return _join_order(tl.join(q0, q1), tl.join(q2, q3))


@triton.jit
def _join_order(lo, hi):
    """[R, 32, 2 (ql)] tiles of lanes qh = 0 and 1 -> [R, 128] in _joined's K order."""
    R: tl.constexpr = lo.shape[0]
    w = tl.join(tl.reshape(lo, (R, 8, 4, 2)), tl.reshape(hi, (R, 8, 4, 2)))  # [R, c, t, ql, qh]
    return tl.reshape(tl.permute(w, (0, 1, 4, 2, 3)), (R, 128))


@triton.jit
def _x_column(col, X_JOIN: tl.constexpr):
    """Where column `col` of the input lies: itself, or (X_JOIN: the input given in join_order)
    at its join_position."""
    if X_JOIN:
        return join_position(col)
    return col


@triton.jit
def _scale(base_rows, row_ok, col, K, GROUP: tl.constexpr, ASM: tl.constexpr, EVEN_K: tl.constexpr):
    """2^(2b) of the group of each column in `col` (any shape broadcasting with base_rows), as
    _weight_pair takes it: bf16 bits in an int32 (ASM) or fp32."""
    mask = row_ok
    if not EVEN_K:
        mask = mask & (col < K)
    b = tl.load(base_rows + col // GROUP, mask=mask, other=0).to(tl.int32)
    if ASM:
        return (2 * b + 127) << 7
    else:
        return ((2 * b + 127) << 23).to(tl.float32, bitcast=True)


@triton.jit
def _pair_scales(base_rows, row_ok, col, ri, scale_h, K, GROUP: tl.constexpr, ASM: tl.constexpr,
                 EVEN_K: tl.constexpr, SLICE: tl.constexpr):  # fmt: skip
    """The group scales of slices starting at columns `col` and `col + SLICE`: the half block's
    `scale_h` where a half block lies in one group, else each slice's, else each column's."""
    if GROUP % (4 * SLICE) == 0:
        return scale_h, scale_h
    elif GROUP % SLICE == 0:
        scale0 = _scale(base_rows, row_ok, col, K, GROUP, ASM, EVEN_K)
        return scale0, _scale(base_rows, row_ok, col + SLICE, K, GROUP, ASM, EVEN_K)
    else:
        scale0 = _scale(base_rows, row_ok, col + ri, K, GROUP, ASM, EVEN_K)
        return scale0, _scale(base_rows, row_ok, col + SLICE + ri, K, GROUP, ASM, EVEN_K)


@triton.jit
def _slice_input(x_rows, cols, x_ok, nw_ptr, rstd, K, dtype, NORM: tl.constexpr,
                 GLU: tl.constexpr, EVEN_K: tl.constexpr):  # fmt: skip
    """The multiply's input at one slice's columns `cols` (masked past K unless EVEN_K)."""
    xm = x_ok
    if not EVEN_K:
        xm = xm & (cols < K)
    return input_tile(x_rows, cols, xm, nw_ptr, rstd, K, dtype, NORM, GLU)


@triton.jit
def _first_escapes(row_ptr, esc_col_ptr, esc_bits_ptr, rn, n_ok, m_ok, pid_k, x_rows, nw_ptr,
                   rstd, K, dtype, NORM: tl.constexpr, GLU: tl.constexpr,
                   X_JOIN: tl.constexpr = False):  # fmt: skip
    """Rows rn's escape table offsets `first` and counts (0 but in the first K split) and
    x[:, col] * w of each row's first escaped (col, w), fp32 [BLOCK_M, BLOCK_N]."""
    first = tl.load(row_ptr + rn, mask=n_ok, other=0)
    count = tl.load(row_ptr + rn + 1, mask=n_ok, other=0) - first
    count = tl.where(pid_k == 0, count, 0)
    has = count > 0
    col = tl.load(esc_col_ptr + first, mask=has, other=0)
    w = tl.load(esc_bits_ptr + first, mask=has, other=0).to(tl.bfloat16, bitcast=True)
    xm = m_ok[:, None] & has[None, :]
    a = input_tile(x_rows, _x_column(col, X_JOIN)[None, :], xm, nw_ptr, rstd, K, dtype, NORM, GLU)
    return first, count, tl.where(xm, a.to(tl.float32) * w.to(tl.float32)[None, :], 0.0)


@triton.jit
def _escape_counts(row_ptr, rn, n_ok, pid_k, SPLIT_K: tl.constexpr):
    """Rows rn's escapes that K split pid_k adds: every SPLIT_K-th from the row's entry pid_k,
    as (the first's offset in the CSR table, how many)."""
    first = tl.load(row_ptr + rn, mask=n_ok, other=0)
    count = tl.load(row_ptr + rn + 1, mask=n_ok, other=0) - first
    return first + pid_k, (count - pid_k + SPLIT_K - 1) // SPLIT_K


@triton.jit
def _escape_entries(esc_col_ptr, esc_bits_ptr, first, count, ej, STRIDE: tl.constexpr):
    """Each row's first ESC_ROWS escaped (col, bf16 bits) of _escape_counts' share
    ([BLOCK_N, ESC_ROWS]; ej the entry index [1, ESC_ROWS]); 0 past a row's count."""
    has = ej < count[:, None]
    at = first[:, None] + STRIDE * ej
    col = tl.load(esc_col_ptr + at, mask=has, other=0)
    return col, tl.load(esc_bits_ptr + at, mask=has, other=0)


@triton.jit
def _escape_inputs(x_ptr, rm, m_ok, stride_xm, esc_col, count, ej, nw_ptr, rstd, K, dtype,
                   NORM: tl.constexpr, GLU: tl.constexpr, X_JOIN: tl.constexpr):  # fmt: skip
    """The input at each row's first ESC_ROWS escapes' columns, [BLOCK_M, BLOCK_N, ESC_ROWS]."""
    xm = m_ok[:, None, None] & (ej < count[:, None])[None, :, :]
    return input_tile(x_ptr + rm[:, None, None] * stride_xm, _x_column(esc_col, X_JOIN)[None, :, :],
                      xm, nw_ptr, rstd[:, None], K, dtype, NORM, GLU)  # fmt: skip


@triton.jit
def _escape_products(a, esc_w):
    """x[:, col] * w summed over each row's first ESC_ROWS escapes (0 past its count: both
    masked), fp32 [BLOCK_M, BLOCK_N]."""
    w = esc_w.to(tl.bfloat16, bitcast=True).to(tl.float32)[None, :, :]
    return tl.sum(a.to(tl.float32) * w, axis=2)


@triton.jit
def _rest_escapes(acc, first, count, esc_col_ptr, esc_bits_ptr, m_ok, x_rows, nw_ptr, rstd, K,
                  dtype, NORM: tl.constexpr, GLU: tl.constexpr,
                  X_JOIN: tl.constexpr = False, START: tl.constexpr = 1,
                  STRIDE: tl.constexpr = 1):  # fmt: skip
    """acc plus x[:, col] * w of each row's escaped (col, w) after its first START (entries
    first + STRIDE j of the CSR table for START <= j < count)."""
    for j in range(START, tl.max(count, axis=0)):
        has = j < count
        col = tl.load(esc_col_ptr + first + STRIDE * j, mask=has, other=0)
        w = tl.load(esc_bits_ptr + first + STRIDE * j, mask=has, other=0)
        w = w.to(tl.bfloat16, bitcast=True)
        xm = m_ok[:, None] & has[None, :]
        a = input_tile(x_rows, _x_column(col, X_JOIN)[None, :], xm, nw_ptr, rstd, K, dtype, NORM,
                       GLU)  # fmt: skip
        acc += tl.where(xm, a.to(tl.float32) * w.to(tl.float32)[None, :], 0.0)
    return acc


@triton.jit
def _inner_t(a, SPLIT_IN: tl.constexpr):
    """An input tile [.., BLOCK_M, SLICE] as tl.dot's right operand [.., SLICE, BLOCK_M]
    (batched over the K ranges of SPLIT_IN > 1)."""
    if SPLIT_IN > 1:
        return tl.permute(a, (0, 2, 1))
    return tl.trans(a)


@triton.jit
def _w12_kernel(
    x_ptr,
    low_ptr,
    code_ptr,
    base_ptr,
    row_ptr,
    esc_col_ptr,
    esc_bits_ptr,
    y_ptr,
    res_ptr,
    nw_ptr,
    part_ptr,
    M,
    N,
    K,
    split_steps,
    stride_xm,
    stride_low,
    stride_code,
    stride_base,
    stride_ym,
    stride_rm,
    eps,
    GROUP: tl.constexpr,
    NORM: tl.constexpr,
    GLU: tl.constexpr,
    RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    UNROLL: tl.constexpr,
    SPLIT_K: tl.constexpr,
    USE_DOT: tl.constexpr,
    EVEN_K: tl.constexpr,
    EVEN_N: tl.constexpr,
    ASM: tl.constexpr,
    F32_DOT: tl.constexpr,
    SLICE: tl.constexpr,
    PDL: tl.constexpr = False,
    count_ptr=None,
    SUM_IN_KERNEL: tl.constexpr = False,
    FENCE: tl.constexpr = False,
    ACC_SCALE: tl.constexpr = False,
    ESC_IN_LOOP: tl.constexpr = False,
    HALVES: tl.constexpr = False,
    LOOP_STAGES: tl.constexpr = 1,
    SWIGLU: tl.constexpr = False,
    SPLIT_IN: tl.constexpr = 1,
    SHARED: tl.constexpr = 0,  # launch.ask_shared's bytes (unused here: its own compile)
    TRACE: tl.constexpr = 0,
    trace_ptr=None,
    clock_ptr=None,
    HAND_OUT: tl.constexpr = False,
    u_ptr=None,
    hw_ptr=None,
    sq_out_ptr=None,
    stride_um=0,
    stride_sq_out=0,
    HAND_IN: tl.constexpr = False,
    sq_in_ptr=None,
    stride_sq_in=0,
    slots_in=0,
    SLOTS_IN: tl.constexpr = 1,
    HAND_ROWS: tl.constexpr = 1,
    LATE: tl.constexpr = False,
    JOIN: tl.constexpr = False,
    NO_DECODE: tl.constexpr = False,
    ESC_ROWS: tl.constexpr = 0,
    Y_JOIN: tl.constexpr = False,
):
    trace_mark(trace_ptr, clock_ptr, 0, TRACE)
    pdl_enter(PDL, trace_ptr, clock_ptr, TRACE, LATE)  # LATE: launch.LATE_TRIGGER
    # NOTE: low_ptr and code_ptr are the planes as int32 words (strides in words). A block of
    # 8 SLICE columns is SLICE word positions i; slice J of it is columns SLICE J + i.
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    pid_k = tl.program_id(2)  # SPLIT_K > 1: split_steps loop steps from column pid_k * that
    dtype = y_ptr.dtype.element_ty
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn, n_ok = weight_rows(pid_n, N, BLOCK_N, SWIGLU)
    m_ok = rm < M
    # NOTE: constant masks when the tiles divide the shape (the compiler drops them)
    rows_ok = tl.full([BLOCK_N], 1, tl.int1) if EVEN_N else n_ok
    rstd = tl.zeros([BLOCK_M], dtype=tl.float32)
    if NORM:
        # NOTE: every program recomputes the rows' RMS (x is in L2): wide steps, few reductions
        RSTD_K: tl.constexpr = 2048 // BLOCK_M if BLOCK_M <= 8 else 256
        rstd = row_rstd(x_ptr + rm[:, None] * stride_xm, m_ok, K, eps, BLOCK_M, RSTD_K)
    if HAND_IN:  # x is a handed-on norm's u (linear.Handoff): its squares summed after the loop,
        # or, for a tile of several rows, before it (held through the loop, a 16-row tile's took
        # 17 more registers: 2 programs an SM instead of 3)
        hm = pid_m * BLOCK_M + tl.arange(0, HAND_ROWS)
        squares = handed_squares(sq_in_ptr, hm, hm < M, stride_sq_in, slots_in, SLOTS_IN)
        if HAND_ROWS > 1:
            hand_rstd = handed_rstd(squares, K, eps)
    if USE_DOT and SPLIT_IN > 1:
        # the K split inside the program: SPLIT_IN contiguous K ranges side by side, tiles
        # [SPLIT_IN, BLOCK_N, SLICE] per slice, one batched tl.dot for all of them; the ranges'
        # sums are added once after the loop (no partials in memory, no second launch)
        ri = tl.arange(0, SLICE)[None, None, :]
        x_rows = x_ptr + rm[None, :, None] * stride_xm
        x_ok = m_ok[None, :, None]
        rstd_ = rstd  # input_tile's rstd[:, None] is [BLOCK_M, 1], broadcast over the ranges
        row_ok = rows_ok[None, :, None]
        low_rows = low_ptr + rn[None, :, None] * stride_low
        code_rows = code_ptr + rn[None, :, None] * stride_code
        base_rows = base_ptr + rn[None, :, None] * stride_base
        acc_t = tl.zeros([SPLIT_IN, BLOCK_N, BLOCK_M], dtype=tl.float32)
        k_step: tl.constexpr = 8 * SLICE
        kb0 = (K // SPLIT_IN) * tl.arange(0, SPLIT_IN)[:, None, None]
    elif USE_DOT:
        # tiles [BLOCK_N, SLICE] per slice; acc_t is y^T, the decoded weights the left operand
        ri = tl.arange(0, SLICE)[None, :]
        x_rows = x_ptr + rm[:, None] * stride_xm
        x_ok = m_ok[:, None]
        rstd_ = rstd
        row_ok = rows_ok[:, None]
        low_rows = low_ptr + rn[:, None] * stride_low
        code_rows = code_ptr + rn[:, None] * stride_code
        base_rows = base_ptr + rn[:, None] * stride_base
        acc_t = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)
        k_step: tl.constexpr = 8 * SLICE
        kb0 = 0
        if JOIN:  # x of a half block as [BLOCK_M, 4 slices, SLICE positions]
            x_rows3 = x_ptr + rm[:, None, None, None] * stride_xm
            x_ok3 = m_ok[:, None, None, None]
            rstd3 = rstd[:, None, None]  # input_tile takes rstd[:, None]
            # [BLOCK_M, SLICE (i), 2 (ql), 2 (qh)]: column SLICE q + i of the half block
            cols3 = (SLICE * (tl.arange(0, 2)[None, None, :, None]
                              + 2 * tl.arange(0, 2)[None, None, None, :])
                     + tl.arange(0, SLICE)[None, :, None, None])  # fmt: skip
    else:
        # tiles [1, UNROLL, BLOCK_N, SLICE]: UNROLL blocks side by side. NOTE: with the blocks ahead
        # of the rows, Triton spreads threads along K (positions, then blocks) and keeps rows in
        # registers, so each x value a thread loads serves several rows; the per-slice x tile
        # [BLOCK_M, UNROLL, 1, SLICE] and the scales [1, UNROLL, BLOCK_N, 1] broadcast into the
        # weights' layout (the weights are never reshuffled)
        ri = tl.arange(0, SLICE)[None, None, None, :]
        x_rows = x_ptr + rm[:, None, None, None] * stride_xm
        x_ok = m_ok[:, None, None, None]
        rstd_ = rstd[:, None, None]  # input_tile takes rstd[:, None]
        row_ok = rows_ok[None, None, :, None]
        low_rows = low_ptr + rn[None, None, :, None] * stride_low
        code_rows = code_ptr + rn[None, None, :, None] * stride_code
        base_rows = base_ptr + rn[None, None, :, None] * stride_base
        acc4 = tl.zeros([BLOCK_M, UNROLL, BLOCK_N, SLICE], dtype=tl.float32)
        k_step: tl.constexpr = 8 * SLICE * UNROLL
        kb0 = 8 * SLICE * tl.arange(0, UNROLL)[None, :, None, None]
    # escaped weights of rows rn: entries row_ptr[n] .. row_ptr[n + 1] - 1 of the CSR table,
    # added by the first K split; each row's first entry is fetched ahead, the others after
    # the main loop (most rows have at most one escape). ESC_IN_LOOP: ahead means in the first
    # loop step once the planes' loads are issued, else before the loop (three dependent loads
    # that the first weights then wait for)
    x_rows2 = x_ptr + rm[:, None] * stride_xm
    first = tl.zeros([BLOCK_N], dtype=tl.int32)
    count = tl.zeros([BLOCK_N], dtype=tl.int32)
    esc_sum = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    if ESC_ROWS > 0:  # the escapes spread over the K splits (every SPLIT_K-th of a row in
        # each); each row's first ESC_ROWS of them fetched over the loop's first two steps, one
        # dependent round a step and each used a step later (so no load waits on another inside
        # a step): the offsets, then the entries; the input at their columns after the loop
        ej = tl.arange(0, ESC_ROWS)[None, :]
        esc_col = tl.zeros([BLOCK_N, ESC_ROWS], dtype=tl.int32)
        esc_w = tl.zeros([BLOCK_N, ESC_ROWS], dtype=tl.int16)
    elif not ESC_IN_LOOP:
        first, count, esc_sum = _first_escapes(
            row_ptr, esc_col_ptr, esc_bits_ptr, rn, n_ok, m_ok, pid_k, x_rows2, nw_ptr, rstd, K,
            dtype, NORM, GLU, JOIN == 2,
        )  # fmt: skip
    k_lo = 0
    k_hi = K
    if SPLIT_K > 1:  # NOTE: k_lo a visible multiple of k_step keeps the loads vectorized
        k_lo = pid_k * split_steps * k_step
        k_hi = tl.minimum(K, k_lo + split_steps * k_step)
    if SPLIT_IN > 1:  # each range's steps from its own first column (kb0)
        k_hi = K // SPLIT_IN
    # LOOP_STAGES (the launcher's default: linear.loop_stages): the loop's loads
    # software-pipelined through shared memory (cp.async) this many steps deep. The compiler
    # pipelines loads that feed tl.dot at the launch's num_stages by itself, but the loads of
    # element-wise tiles only in a loop that asks for it
    for k0 in tl.range(k_lo, k_hi, k_step, num_stages=LOOP_STAGES):
        kb = k0 + kb0  # first column of each block
        wm = row_ok
        if not EVEN_K:
            wm = wm & (kb < K)  # the planes are padded to whole blocks: no mask within one
        codes = tl.load(code_rows + kb // 8 + ri, mask=wm, other=0)
        low0 = tl.load(low_rows + kb // 4 + ri, mask=wm, other=0)
        low1 = tl.load(low_rows + kb // 4 + SLICE + ri, mask=wm, other=0)
        if ESC_ROWS > 0:
            if k0 == k_lo:
                first, count = _escape_counts(row_ptr, rn, n_ok, pid_k, SPLIT_K)
            if k0 == k_lo + k_step:
                esc_col, esc_w = _escape_entries(esc_col_ptr, esc_bits_ptr, first, count, ej,
                                                 SPLIT_K)  # fmt: skip
        elif ESC_IN_LOOP:
            if k0 == k_lo:
                first, count, esc_sum = _first_escapes(
                    row_ptr, esc_col_ptr, esc_bits_ptr, rn, n_ok, m_ok, pid_k, x_rows2, nw_ptr,
                    rstd, K, dtype, NORM, GLU, JOIN == 2,
                )  # fmt: skip
        for h in tl.static_range(2):  # slices 4h .. 4h + 3
            low = low0 if h == 0 else low1
            high = _high_bytes(codes, h)
            if ACC_SCALE:  # the weights times 2^ACC_SHIFT, the same for every group
                if ASM:  # bf16 bits
                    scale_h = tl.full([BLOCK_N, 1], (127 + ACC_SHIFT) << 7, tl.int32)
                else:
                    scale_h = tl.full([BLOCK_N, 1], ACC_FACTOR, tl.float32)
                if SPLIT_IN > 1:
                    part = tl.zeros([SPLIT_IN, BLOCK_N, BLOCK_M], dtype=tl.float32)
                else:
                    part = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)
            else:
                scale_h = _scale(base_rows, row_ok, kb + 4 * SLICE * h, K, GROUP, ASM, EVEN_K)
            if JOIN:  # the half block's 4 slices in one tl.dot, K in word order (see _joined)
                w = _joined(low, high, scale_h, ASM, dtype)
                if JOIN == 2:  # x given in that K order (join_order of the natural x)
                    a = _slice_input(x_rows, kb + 4 * SLICE * h + tl.arange(0, 4 * SLICE)[None, :],
                                     x_ok, nw_ptr, rstd_, K, dtype, NORM, GLU, EVEN_K)  # fmt: skip
                else:
                    a3 = _slice_input(x_rows3, kb + 4 * SLICE * h + cols3, x_ok3, nw_ptr, rstd3,
                                      K, dtype, NORM, GLU, EVEN_K)  # fmt: skip
                    a_lo, a_hi = tl.split(a3)  # lanes qh = 0 and 1
                    a = _join_order(a_lo, a_hi)
                part += dot(w, tl.trans(a), F32_DOT)
            for p in tl.static_range(0 if JOIN else 2):
                col = kb + SLICE * (4 * h + 2 * p)  # slices 4h + 2p and 4h + 2p + 1
                scale0, scale1 = _pair_scales(base_rows, row_ok, col, ri, scale_h, K, GROUP, ASM,
                                              EVEN_K, SLICE)  # fmt: skip
                if NO_DECODE:  # a bound only, wrong products (bench/w12_join.py): the words
                    # of both planes as the weights, with no decode
                    raw = low ^ codes if p == 0 else low + codes
                    w0 = raw.to(tl.int16).to(tl.bfloat16, bitcast=True)
                    w1 = (raw >> 16).to(tl.int16).to(tl.bfloat16, bitcast=True)
                else:
                    w0, w1 = _weight_pair(low, high, scale0, scale1, 2 * p, ASM,
                                          HALVES and USE_DOT)  # fmt: skip
                for s in tl.static_range(2):
                    a = _slice_input(x_rows, col + SLICE * s + ri, x_ok, nw_ptr, rstd_, K, dtype,
                                     NORM, GLU, EVEN_K)  # fmt: skip
                    w = w0 if s == 0 else w1
                    if ACC_SCALE:
                        part += dot(w.to(dtype), _inner_t(a, SPLIT_IN), F32_DOT)
                    elif USE_DOT:  # exact: w is a bf16
                        acc_t += dot(w.to(dtype), _inner_t(a, SPLIT_IN), F32_DOT)
                    else:
                        acc4 += a.to(tl.float32) * w.to(tl.float32)
            if ACC_SCALE:  # the half block's sum times its rows' 2^(2b - ACC_SHIFT) (exact)
                col = kb + 4 * SLICE * h
                if SPLIT_IN > 1:  # [SPLIT_IN, BLOCK_N, 1]: each range's group of each row
                    b = tl.load(base_rows + col // GROUP, mask=row_ok, other=0)
                    b = (2 * b.to(tl.int32) + 127 - ACC_SHIFT) << 23
                    acc_t += part * b.to(tl.float32, bitcast=True)
                else:
                    bm = rows_ok if EVEN_K else rows_ok & (col < K)
                    b = tl.load(base_ptr + rn * stride_base + col // GROUP, mask=bm, other=0)
                    b = (2 * b.to(tl.int32) + 127 - ACC_SHIFT) << 23
                    acc_t += part * b.to(tl.float32, bitcast=True)[:, None]
    if USE_DOT and SPLIT_IN > 1:
        acc = tl.trans(tl.sum(acc_t, axis=0))
    elif USE_DOT:
        acc = tl.trans(acc_t)
    else:
        acc = tl.sum(tl.sum(acc4, axis=3), axis=1)
    if ESC_ROWS > 0:
        if k_hi - k_lo <= k_step:  # one loop step: the entries were not fetched in a second
            esc_col, esc_w = _escape_entries(esc_col_ptr, esc_bits_ptr, first, count, ej,
                                             SPLIT_K)  # fmt: skip
        # the input at their columns (in L2) after the loop: in its third step (sm_90, 16-row
        # gate|up) the tile took 214 registers against 136 here, 2 programs an SM against 3
        esc_x = _escape_inputs(x_ptr, rm, m_ok, stride_xm, esc_col, count, ej, nw_ptr, rstd, K,
                               dtype, NORM, GLU, JOIN == 2)  # fmt: skip
        esc_sum = _escape_products(esc_x, esc_w)
    acc += esc_sum
    acc = _rest_escapes(acc, first, count, esc_col_ptr, esc_bits_ptr, m_ok, x_rows2, nw_ptr, rstd,
                        K, dtype, NORM, GLU, JOIN == 2, max(ESC_ROWS, 1),
                        SPLIT_K if ESC_ROWS > 0 else 1)  # fmt: skip
    if HAND_IN:  # (RMSNorm(x) * w) @ W^T = (x * w) @ W^T / RMS(x)
        if HAND_ROWS == 1:
            hand_rstd = handed_rstd(squares, K, eps)
        acc = acc * hand_rstd[:, None]
    if SPLIT_K > 1:  # fp32 partial sums [SPLIT_K, M, N]; _split_sum_kernel finishes, or
        # (SUM_IN_KERNEL) the tile's last program adds them in order
        tile = pid_m * tl.num_programs(0) + pid_n
        store_split(acc, part_ptr, count_ptr, y_ptr, res_ptr, rm, rn, m_ok, n_ok, M, N,
                    stride_ym, stride_rm, pid_k, tile, SPLIT_K, RESIDUAL, SUM_IN_KERNEL,
                    FENCE)  # fmt: skip
    elif SWIGLU:
        store_swiglu(acc, y_ptr, rm, pid_n, N, m_ok, stride_ym, BLOCK_M, BLOCK_N, Y_JOIN)
    else:
        out = store_output(acc, y_ptr, res_ptr, rm, rn, m_ok, n_ok, stride_ym, stride_rm, RESIDUAL)
        if HAND_OUT:
            store_handoff(out, u_ptr, hw_ptr, sq_out_ptr, rm, rn, m_ok, n_ok, stride_um,
                          stride_sq_out, pid_n)  # fmt: skip
    trace_mark(trace_ptr, clock_ptr, 2, TRACE)


@triton.jit
def _split_sum_kernel(
    part_ptr, y_ptr, res_ptr, M, N, stride_ym, stride_rm, SPLIT_K: tl.constexpr,
    RESIDUAL: tl.constexpr, BLOCK_N: tl.constexpr, PDL: tl.constexpr = False,
    TRACE: tl.constexpr = 0, trace_ptr=None, clock_ptr=None, EARLY_TRIGGER: tl.constexpr = False,
    HAND_OUT: tl.constexpr = False, u_ptr=None, hw_ptr=None, sq_ptr=None, stride_um=0,
    stride_sq=0, PAIR: tl.constexpr = False, EARLY_WEIGHT: tl.constexpr = False,
):  # fmt: skip
    """y[m] = sum of the SPLIT_K partial rows (fp32), rounded, plus the residual: the split
    kernel's epilogue. EARLY_TRIGGER: the next kernel may launch before this one's wait
    (launch.WIDE_EARLY). HAND_OUT: the next norm handed on (common.store_handoff: u in pair
    order where PAIR, each program's squares in slot program_id(0)); EARLY_WEIGHT: its norm
    weight's columns read before the PDL wait (SPLIT_SUM_EARLY_WEIGHT)."""
    trace_mark(trace_ptr, clock_ptr, 0, TRACE)
    rm = tl.program_id(1) + tl.arange(0, 1)
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    m_ok = rm < M
    n_ok = rn < N
    if HAND_OUT and EARLY_WEIGHT:
        hw = handoff_weight(hw_ptr, rn, n_ok)  # a constant: asked for while the multiply runs
    pdl_enter(PDL, trace_ptr, clock_ptr, TRACE, EARLY=EARLY_TRIGGER)
    acc = tl.zeros([1, BLOCK_N], dtype=tl.float32)
    for s in tl.static_range(SPLIT_K):
        acc += tl.load(part_ptr + s * M * N + rm[:, None] * N + rn[None, :], mask=n_ok[None, :])
    out = store_output(acc, y_ptr, res_ptr, rm, rn, m_ok, n_ok, stride_ym, stride_rm, RESIDUAL)
    if HAND_OUT:
        if not EARLY_WEIGHT:
            hw = handoff_weight(hw_ptr, rn, n_ok)  # (a load after y's store: one round trip)
        store_handoff_with(out, hw, u_ptr, sq_ptr, rm, rn, m_ok, n_ok, stride_um, stride_sq,
                           tl.program_id(0), PAIR)  # fmt: skip
    trace_mark(trace_ptr, clock_ptr, 2, TRACE)


def tile_config(m: int, n: int, k: int) -> dict:
    """W12 tiles by shape, from the H200 sweeps of bench/w12_speed.py where there is one:
    MEASURED_TILES first (Qwen3-8B's and Llama-3.1-8B's shapes; one row: q|k|v 8 rows x 2
    blocks a step, gate_up and the LM head 16 rows, down 4 rows x 4 blocks on 2 warps, the
    loads pipelined 3 steps deep; 2-16 rows: gate_up and the LM head 64 rows on 4 or 2 warps),
    then these rules. M = 1, N >= 16384 (another model's gate_up or LM head): the measured wide
    tile. M = 1 otherwise: 2 rows (4 where N <= 4096) x 16 blocks (4096 columns) per step, which
    puts the threads along K and the rows in registers: no layout conversion in the loop, ~4.9
    instructions per weight (run 77, with ESC_IN_LOOP and HALVES: q|k|v 2.51, o 2.28, down 3.20
    TB/s of W12 bytes; ONE_ROW_SWEPT_TILES).
    M = 2-16: 64 rows on 2 warps for N >= 16384, else 32 rows per tile on mma.sync, 2 warps
    (below). M > 16:
    64 rows per tile on wgmma, ~5.4 instructions per weight whatever M; the K split gives >= 256
    programs (unmeasured since run 51 at these row counts)."""
    measured = MEASURED_TILES.get((tile_rows(m), n, k))
    # a measured tile (or a tiles file's, kernels/tiles.py) over the rules' for its shape, so
    # that a file may give only the keys it changes (as kernels/linear.tile_config takes them)
    return _rule_tile(m, n, k) | (measured or {})


def _rule_tile(m: int, n: int, k: int) -> dict:
    if m == 1 and ONE_ROW_SWEPT_TILES and n >= 16384:
        # the measured wide tile, 16 rows a program with the loads pipelined: the best or within
        # 1% of it at the four wide shapes swept (runs 88, 123), where run 77's tensor-core
        # tile took 63.9 us at Llama-3.1-8B's gate_up against 45.0
        return dict(_LOOP_ONE_ROW, BLOCK_N=16)
    if m == 1 and n <= 65536:
        # run 77: 4 rows a program where N <= 4096 (o 2.18 -> 2.28 TB/s, down 2.90 -> 3.20)
        rows = 4 if ONE_ROW_SWEPT_TILES and n <= 4096 else 2
        return dict(
            BLOCK_M=1, BLOCK_N=rows, UNROLL=16, SPLIT_K=1, USE_DOT=False, num_warps=4, num_stages=1
        )
    block_m = 16 if m <= 16 else (32 if m <= 32 else 64)
    # (m > 1: one row gets here only with ONE_ROW_SWEPT_TILES off, for the run-19 tiles)
    if block_m == 16 and n >= 16384 and m > 1:
        # 64 rows on 2 warps, 2 stages, ACC_SCALE: within 8% of the best at the four wide
        # shapes swept (runs 115, 123: Qwen3-8B's gate_up 49.0 us against 45.3, its LM head
        # 248.6 against 244.5, Llama-3.1-8B's the best), where the 32-row tile below took 13%
        # (Qwen3's gate_up) to 43% (Llama's) longer
        return dict(_WIDE_SIXTEEN_ROWS, num_warps=2, num_stages=2)
    if block_m == 16:
        # 32 weight rows and 2 warps a program: mma.sync with the decoded weights in registers,
        # little shared memory, many programs an SM. Runs 67-68 (two processes, every shape of
        # Qwen3-8B at 16 rows, 360 tiles): fastest everywhere, +8-15% over 64 rows on wgmma
        # (q|k|v 1.85 -> 2.08-2.11 TB/s, o 1.60 -> 1.71-1.76, gate_up 2.77 -> 2.95-2.98, down
        # 2.23 -> 2.52-2.57, lm_head 3.23 -> 3.50); K split 4 below 256 tiles, 2 stages without
        # a split, 3 with one (q|k|v: 2)
        tiles = -(-n // 32)
        split = 4 if tiles < 256 and k >= 4096 else 1
        stages = 2 if split == 1 or (n, k) == (6144, 4096) else 3
        return dict(BLOCK_M=16, BLOCK_N=32, UNROLL=1, SPLIT_K=split, USE_DOT=True, num_warps=2,
                    num_stages=stages)  # fmt: skip
    tiles = -(-n // 64) * -(-m // block_m)
    split = max(1, min(256 // tiles, k // 1024))
    return dict(
        BLOCK_M=block_m,
        BLOCK_N=64,
        UNROLL=1,
        SPLIT_K=split,
        USE_DOT=True,
        num_warps=4,
        num_stages=3,
        ASM=True,
    )


def _check(w: W12Weight, m: int, x: torch.Tensor, glu: bool) -> None:
    n, k = w.shape
    if x.dim() != 2:
        raise ValueError(f"w12_linear wants a 2-D x, got {tuple(x.shape)}")
    if x.shape[1] != (2 * k if glu else k):
        raise ValueError(f"x has {x.shape[1]} columns; weight [{n}, {k}] glu={glu}")
    if m > MAX_ROWS:
        raise ValueError(f"w12_linear handles at most {MAX_ROWS} rows, got {m}")
    if x.dtype != torch.bfloat16:
        raise ValueError(f"w12_linear wants bf16 x (W12 holds bf16 weights), got {x.dtype}")
    if x.stride(1) != 1:
        raise ValueError("w12_linear wants unit stride along K")
    _check_weight(w, {x.device})


def _check_weight(w: W12Weight, devices: set) -> None:
    """What the kernels need of a W12 weight's arrays (also on `devices`, the other tensors')."""
    for name in ("low", "codes", "base"):
        t = getattr(w, name)
        if t.stride(1) != 1:
            raise ValueError(f"W12 {name} must have unit stride along K")
    for name in ("low", "codes"):  # read as 32-bit words
        t = getattr(w, name)
        if t.stride(0) % 4 or t.storage_offset() % 4:
            raise ValueError(f"W12 {name} rows must start on 4-byte boundaries")
    for name in ("row_ptr", "esc_col", "esc_bits"):
        if getattr(w, name).stride(0) != 1 and getattr(w, name).numel() > 1:
            raise ValueError(f"W12 {name} must be contiguous")
    devices = {t.device for t in w.tensors().values()} | devices
    if len(devices) != 1:
        raise ValueError(f"the W12 arrays (and x) must be on one device, got {devices}")


def launch_tile(cfg: dict, group_size: int, given: bool = False) -> dict:
    """A tile (tile_config's, or `given` by the caller) completed as w12_linear launches it:
    the switches' defaults (ACC_SCALE only for tile_config's tiles), LOOP_STAGES, ASM where
    inline PTX runs. bench/ptxas_audit.py compiles what this returns."""
    cfg = dict(cfg)
    # NOTE: the interpreter cannot run inline PTX; ASM=False is the same decode in plain Triton
    cfg["ASM"] = cfg.get("ASM", True) and not INTERPRETED
    cfg.setdefault("SPLIT_K", 1)
    cfg.setdefault("UNROLL", 1)
    cfg.setdefault("SPLIT_IN", 1)
    if cfg["SPLIT_IN"] > 1 and (not cfg["USE_DOT"] or cfg["SPLIT_K"] > 1):
        raise ValueError("SPLIT_IN (the K split inside a program) needs tl.dot tiles, SPLIT_K 1")
    if cfg["USE_DOT"] and cfg["BLOCK_M"] < 16:
        raise ValueError(f"tl.dot tiles need BLOCK_M >= 16, got {cfg['BLOCK_M']}")
    cfg["LOOP_STAGES"] = loop_stages(cfg)
    cfg.setdefault("ESC_IN_LOOP", ESC_IN_LOOP_TILES)
    cfg.setdefault("HALVES", HALVES_TILES)
    acc_ok = cfg["USE_DOT"] and group_size % (4 * SLICE) == 0
    if not given and ACC_SCALE_TILES and acc_ok:
        cfg.setdefault("ACC_SCALE", True)  # a tile_config entry may turn it off
    if cfg.get("ACC_SCALE") and not acc_ok:
        raise ValueError(f"ACC_SCALE needs tl.dot tiles and a group size multiple of {4 * SLICE}")
    if cfg.get("JOIN") and not (cfg.get("ACC_SCALE") and cfg["SPLIT_IN"] == 1):
        raise ValueError("JOIN (a half block in one tl.dot) needs ACC_SCALE tiles, SPLIT_IN 1")
    return cfg


# where a 16-row W12 multiply takes its input in join_order (join_input, join_between): its
# producer (the rmsnorm launch before it, or a W12 gate|up's SwiGLU epilogue before a W12 down)
# writes it so and the tile reads it with JOIN 2. Runs 265-266 (bench/w12_join.py, standalone):
# with ESC_ROWS 2, gate|up 44.75 -> 43.24 us, down 27.82 -> 26.54; run 269 (the gate|up's input
# only): W12 auto verify 4.118 -> 4.058 ms back to back. Run 270 (the down's input too): verify
# 4.123 -> 4.072 ms back to back (base2 4.117); paired end to end (6 rounds, Qwen3-8B 1k) spec@6.55
# 1.053x [1.020-1.086] bf16 against 1.046x [1.023-1.071] without it, AR level, token forcing
# passed on every arm (runs 273 and 275: +1.4% and +3.4%, inside the W12 arms' own ~2% spread;
# the back-to-back verify is the evidence)
JOIN_INPUT = True


def join_input(weight, m: int) -> bool:
    """Whether w12_linear of m rows by `weight` (a W12Weight; any other takes none) takes
    x_order "join" (JOIN_INPUT, 2-16 rows, K a multiple of 128, a wgmma tile with ACC_SCALE and
    no K split inside the program: 64 weight rows on 4 warps; on the 2-warp mma.sync tiles JOIN
    lost, runs 259 and 266: q|k|v 17.47 -> 26.69 us, down 29.78 -> 35.56)."""
    if not JOIN_INPUT or not isinstance(weight, W12Weight) or not 2 <= m <= 16:
        return False
    n, k = weight.shape
    if k % 128:
        return False
    cfg = launch_tile(tile_config(m, n, k), weight.group_size)
    wgmma = cfg.get("num_warps", 4) >= 4 and cfg["BLOCK_N"] >= 64
    return wgmma and bool(cfg.get("ACC_SCALE")) and cfg["SPLIT_IN"] == 1


def join_between(gate_up, down, m: int) -> bool:
    """Whether the SwiGLU epilogue of w12_linear(m rows, gate_up) writes its output in
    join_order for the down multiply to read (both W12Weights, join_input of the down, and the
    gate|up's tile ends in the epilogue: no K split)."""
    if not isinstance(gate_up, W12Weight) or not join_input(down, m):
        return False
    n, k = gate_up.shape
    if (n // 2) % 128:
        return False
    return swiglu_tile_ok(launch_tile(tile_config(m, n, k), gate_up.group_size))


def join_order(x: torch.Tensor) -> torch.Tensor:
    """x [M, K] (K a multiple of 128) with each 128-column half block's columns in the K order
    of the JOIN tiles' one tl.dot (`_joined`): the input a JOIN 2 tile takes."""
    if x.shape[-1] % 128:
        raise ValueError(f"join_order wants K a multiple of 128, got {x.shape[-1]}")
    k = torch.arange(128, device=x.device)
    c, qh, t, ql = k // 16, (k // 8) % 2, (k // 2) % 4, k % 2
    col = 32 * (2 * qh + ql) + 4 * c + t
    index = (torch.arange(0, x.shape[-1], 128, device=x.device)[:, None] + col).reshape(-1)
    return x[..., index]


def w12_linear(
    x: torch.Tensor,
    weight: W12Weight,
    *,
    norm_weight: torch.Tensor | None = None,
    eps: float = 1e-6,
    glu: bool = False,
    residual: torch.Tensor | None = None,
    config: dict | None = None,
    swiglu: bool = False,
    handoff: Handoff | None = None,
    handed: Handoff | None = None,
    x_order: str = "natural",
    y_order: str = "natural",
    norm_after: NormAfter | None = None,
) -> torch.Tensor:
    """x [M, K] (or [M, 2K] with glu) @ W^T -> [M, N] bf16 ([M, N / 2] with swiglu); the
    contract of skinny_linear (norm hand-off included). x_order "join": x's columns are in
    join_order (a producer wrote them so, where join_input says the multiply takes them), read
    by the tile with JOIN 2. y_order "join" (with swiglu, N / 2 a multiple of 128): y written
    in join_order, for a next multiply that takes x_order "join" (join_between). norm_after
    (with a residual): where the tile splits K, its split sum writes that norm too
    (sum_splits); else it stays unready."""
    m = x.shape[0] if x.dim() == 2 else 0
    n, k = weight.shape
    _check(weight, m, x, glu)
    check_prologue_epilogue(m, n, k, norm_weight, glu, residual, swiglu)
    check_handoff(x, n, norm_weight, glu, residual, swiglu, handoff, handed)
    plain = norm_weight is None and not glu and not swiglu and handoff is None and handed is None
    if (
        plain
        and config is None
        and m <= MMA_ROWS
        and x_order == "natural"
        and w12_mma.mma_usable(x, weight)
    ):
        return w12_mma.w12_mma_linear(x, weight, residual=residual)
    cfg = dict(config or interpreted_tile(tile_config(m, n, k), n))
    if x_order == "join" and config is None:  # the tile reads it so: JOIN 2 (checked below)
        cfg["JOIN"] = 2
    if y_order not in ("natural", "join"):
        raise ValueError(f"y_order is 'natural' or 'join', got {y_order!r}")
    if y_order == "join" and not (swiglu and swiglu_tile_ok(cfg) and (n // 2) % 128 == 0):
        raise ValueError("y_order='join' is the SwiGLU epilogue's (a tile without a K split, "
                         f"N / 2 a multiple of 128; got N {n})")  # fmt: skip
    if swiglu and not swiglu_tile_ok(cfg):
        return silu_mul(w12_linear(x, weight, norm_weight=norm_weight, eps=eps, glu=glu,
                                   config=config, handed=handed, x_order=x_order))  # fmt: skip
    y = torch.empty(m, n // 2 if swiglu else n, device=x.device, dtype=x.dtype)
    cfg = launch_tile(cfg, weight.group_size, given=config is not None)
    if x_order not in ("natural", "join"):
        raise ValueError(f"x_order is 'natural' or 'join', got {x_order!r}")
    if x_order == "join" and cfg.get("JOIN") != 2:
        raise ValueError("x_order='join' with a given tile needs its JOIN 2")
    if x_order == "natural" and cfg.get("JOIN") == 2:
        raise ValueError("a JOIN 2 tile reads x in join_order: pass x_order='join'")
    if cfg.get("JOIN") == 2 and (norm_weight is not None or glu or handed or k % 128):
        # (the prologues and a handed norm read x and its norm weight by column)
        raise ValueError("JOIN 2 (x given in join_order) takes no prologue or handed norm, "
                         f"and K a multiple of 128 (got {k})")  # fmt: skip
    step = BLOCK * (1 if cfg["USE_DOT"] else cfg["UNROLL"])  # columns per loop step
    splits = cfg["SPLIT_K"]
    if cfg["SPLIT_IN"] > 1 and k % (BLOCK * cfg["SPLIT_IN"]):
        raise ValueError(f"SPLIT_IN={cfg['SPLIT_IN']} needs K a multiple of {BLOCK} a range")
    split_steps = triton.cdiv(triton.cdiv(k, splits), step)  # whole steps per split
    if splits > 1 and (splits - 1) * split_steps * step >= k:
        raise ValueError(f"SPLIT_K={splits} leaves a split without columns (K={k}, step {step})")
    part = torch.empty(splits, m, n, device=x.device, dtype=torch.float32) if splits > 1 else y
    grid = (triton.cdiv(n, cfg["BLOCK_N"]), triton.cdiv(m, cfg["BLOCK_M"]), splits)  # as linear
    in_kernel = splits > 1 and SPLIT_SUM_IN_KERNEL
    counters = zeroed_counters(x.device, grid[0] * grid[1]) if in_kernel else weight.row_ptr
    hand_args = hand_arguments(x, n, grid[0], cfg["BLOCK_M"], splits, handoff, handed)
    eps = handed.eps if handed is not None else eps
    programs = grid[0] * grid[1] * grid[2]
    elementwise = not cfg["USE_DOT"]
    launched = launch.multiply(x, programs, elementwise, handed is not None, hand_args["LATE"])
    kernel = _w12_kernel[grid](
        x,
        weight.low.view(torch.int32),
        weight.codes.view(torch.int32),
        weight.base,
        weight.row_ptr,
        *escape_arrays(weight),
        y,
        residual if residual is not None else y,
        norm_weight if norm_weight is not None else x,
        part,
        m,
        n,
        k,
        split_steps,
        x.stride(0),
        weight.low.stride(0) // 4,
        weight.codes.stride(0) // 4,
        weight.base.stride(0),
        y.stride(0),
        residual.stride(0) if residual is not None else 0,
        eps,
        GROUP=weight.group_size,
        NORM=norm_weight is not None,
        GLU=glu,
        RESIDUAL=residual is not None,
        F32_DOT=INTERPRETED,
        EVEN_K=k % step == 0,
        EVEN_N=n % cfg["BLOCK_N"] == 0,  # with swiglu: each half a whole number of half tiles
        SLICE=SLICE,
        **cfg,
        **launched,
        SWIGLU=swiglu,
        Y_JOIN=y_order == "join",
        count_ptr=counters,
        SUM_IN_KERNEL=in_kernel,
        FENCE=in_kernel and not INTERPRETED,
        **trace.arguments(x, "w12_linear", programs, bytes=weight.nbytes_bound(), rows=m, n=n, k=k),
        **hand_args,
    )
    launch.ask_shared(kernel, launched["SHARED"])
    if splits > 1 and not in_kernel:
        sum_splits(part, y, residual, norm_after)
    return y


def sum_splits(
    part: torch.Tensor,
    y: torch.Tensor,
    residual: torch.Tensor | None,
    norm_after: NormAfter | None = None,
) -> None:
    """y [M, N] = the sum of a K split's partial rows part [splits, M, N] (fp32), rounded, plus
    the residual where given: the second launch of a split multiply (w12_linear, w12_tc,
    w12_ws). norm_after (with a residual): the next RMSNorm in the same launch, into its u
    (kernels/elementwise.split_sum_norm), or, where it is handed (NormAfter.handed), handed on:
    u = y times the norm weight and each program's sums of squares, which the next multiply
    scales its sums by (common.store_handoff, w12_tc's handed norm)."""
    norm = norm_after if residual is not None else None
    if norm is not None and not norm.handed:
        split_sum_norm(part, y, residual, norm)
        return
    splits, m, n = part.shape
    # (the interpreter runs programs one after another: wide ones there, the same sums)
    block = max(SPLIT_SUM_BLOCK, 1024) if INTERPRETED else SPLIT_SUM_BLOCK
    grid = (triton.cdiv(n, block), m)
    hand = {}
    if norm is not None:
        hand = norm.hand_arguments(y, grid[0]) | dict(EARLY_WEIGHT=SPLIT_SUM_EARLY_WEIGHT)
    _split_sum_kernel[grid](
        part,
        y,
        residual if residual is not None else y,
        m,
        n,
        y.stride(0),
        residual.stride(0) if residual is not None else 0,
        SPLIT_K=splits,
        RESIDUAL=residual is not None,
        BLOCK_N=block,
        **launch.pdl_early(y, launch.wide_early(y, 4)),
        num_warps=SPLIT_SUM_WARPS,
        **trace.arguments(y, "split_sum", grid[0] * grid[1], rows=m, n=n),
        **hand,
    )


def w12_linear_reference(
    x: torch.Tensor,
    weight: W12Weight,
    *,
    norm_weight: torch.Tensor | None = None,
    eps: float = 1e-6,
    glu: bool = False,
    residual: torch.Tensor | None = None,
    swiglu: bool = False,
) -> torch.Tensor:
    """The same contract in plain PyTorch: decode the weight, then skinny_linear's reference."""
    return skinny_linear_reference(
        x, decode(weight), norm_weight=norm_weight, eps=eps, glu=glu, residual=residual,
        swiglu=swiglu,
    )  # fmt: skip


@triton.jit
def _w12_decode_kernel(
    low_ptr, code_ptr, base_ptr, row_ptr, esc_col_ptr, esc_bits_ptr, out_ptr, N, K,
    stride_low, stride_code, stride_base, stride_out, GROUP: tl.constexpr,
    BLOCK_N: tl.constexpr, SLICE: tl.constexpr,
):  # fmt: skip
    """out[rn, :] = the bf16 weights of rows rn: the multiply's decode (plain Triton), stored,
    then each row's escaped weights written over their zeros."""
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = rn < N
    row_ok = n_ok[:, None]
    ri = tl.arange(0, SLICE)[None, :]
    low_rows = low_ptr + rn[:, None] * stride_low
    code_rows = code_ptr + rn[:, None] * stride_code
    base_rows = base_ptr + rn[:, None] * stride_base
    out_rows = out_ptr + rn[:, None] * stride_out
    for kb in range(0, K, 8 * SLICE):  # the planes are padded to whole blocks
        codes = tl.load(code_rows + kb // 8 + ri, mask=row_ok, other=0)
        for h in tl.static_range(2):
            low = tl.load(low_rows + kb // 4 + SLICE * h + ri, mask=row_ok, other=0)
            high = _high_bytes(codes, h)
            for p in tl.static_range(2):
                col = kb + SLICE * (4 * h + 2 * p) + ri  # slices 4h + 2p and 4h + 2p + 1
                scale0 = _scale(base_rows, row_ok, col, K, GROUP, False, False)
                scale1 = _scale(base_rows, row_ok, col + SLICE, K, GROUP, False, False)
                w0, w1 = _weight_pair(low, high, scale0, scale1, 2 * p, False)
                for s in tl.static_range(2):
                    cols = col + SLICE * s
                    w = w0 if s == 0 else w1
                    tl.store(out_rows + cols, w.to(tl.bfloat16), mask=row_ok & (cols < K))
    tl.debug_barrier()  # the escapes land after every thread's zeros
    first = tl.load(row_ptr + rn, mask=n_ok, other=0)
    count = tl.load(row_ptr + rn + 1, mask=n_ok, other=0) - first
    for j in range(0, tl.max(count, axis=0)):
        has = j < count
        col = tl.load(esc_col_ptr + first + j, mask=has, other=0)
        bits = tl.load(esc_bits_ptr + first + j, mask=has, other=0)
        tl.store(out_ptr + rn * stride_out + col, bits.to(tl.bfloat16, bitcast=True), mask=has)


def w12_decode(weight: W12Weight, block_n: int = 16) -> torch.Tensor:
    """The bf16 [N, K] of a W12 weight, exactly, in one kernel (formats/w12.decode's values
    without its host synchronisations): for multiplies of more rows than w12_linear takes
    (prompts, the drafter's context), which then run on cuBLAS."""
    n, k = weight.shape
    _check_weight(weight, set())
    out = torch.empty(n, k, device=weight.device, dtype=torch.bfloat16)
    _w12_decode_kernel[(triton.cdiv(n, block_n),)](
        weight.low.view(torch.int32), weight.codes.view(torch.int32), weight.base,
        weight.row_ptr, *escape_arrays(weight), out, n, k, weight.low.stride(0) // 4,
        weight.codes.stride(0) // 4, weight.base.stride(0), out.stride(0),
        GROUP=weight.group_size, BLOCK_N=block_n, SLICE=SLICE,
    )  # fmt: skip
    return out
