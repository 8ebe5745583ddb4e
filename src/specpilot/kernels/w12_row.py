"""One-row W12 multiplies fed by a TMA ring (Gluon, sm_90): a prototype, not yet measured.

Why: issue 7's AR target (W12 1.25x bf16) needs every one-row multiply near its 12-bit bytes'
floor, q|k|v and o included. The one-row tiles of kernels/w12_linear.py hold each block's plane
words in registers and wait a full memory latency a block (docs/LOG.md runs 220-225: latency
bound, not issue bound; o 10.9 us and q|k|v 14.3 against their floors ~6.2 and ~9.3 at Qwen3-8B's
shapes), and every way of keeping more blocks in flight through registers or Triton's pipeline
lost. TMA copies from one program an SM with ~64 kB in flight stream at ~4.07 TB/s (runs
283-284, bench/tma_probe.py). Here each program (one an SM, persistent over row tiles of
BLOCK_N = ROWS x WARPS rows and all of K) splits its work over partitions (`gl.warp_specialize`):
- the loader (1 warp) copies x once (all of it, into shared memory) and then each stage of SB
  blocks of 256 columns of the tile's two planes by TMA into a ring of STAGES stages;
- the meta warp (1 warp) writes each tile's scale words (its rows' 2^(2b) as bf16x2, a group's
  two halves alike) and its escapes' sum (their columns' x times their exact values, x read from
  global memory) into one of its slots (META_SLOTS), so that no dependent global load lies on
  the path of the warps that multiply;
- the default partition (WARPS warps, a row of the tile on each of its lanes' 32 word positions,
  ROWS rows a thread) turns each block's words into bf16 pairs with their exponents taken down
  (4 SWAR ops for 4 high bytes, one prmt a pair), makes them the exact weights with one
  `mul.rn.bf16x2` by the scale word (a power of two on normal numbers: formats/w12.py), widens
  them to fp32 and multiplies them by x from shared memory; at the tile's end it sums the lanes,
  adds the escapes and stores (plain, residual, or SwiGLU's silu(gate) * up). With the tile key
  MMA (ROW_TILES 12, 13) 4 warps instead, a block of each stage a warp, multiply on mma.sync
  with the exact weights decoded into its A registers (`_mma_stage`; with MMA 2, ROW_TILES 14,
  15, the scale deferred to each half block's sum instead; off: they lost as run 343 timed them,
  their plane reads 8-way bank-conflicted; since session 71 the planes are swizzled and each
  lane's words read at once, not yet timed).
Products are of the exact weights (zeros and escapes as +-0; MMA 2: of their pairs and x by
powers of two that its half block sums undo exactly), so the sums differ from w12_linear's only
in order. PDL: the loader asks for the weights' first stages before waiting
for the kernel before. NORM: the multiplying warps norm x in shared memory first (the norm
prologue, with the norm weight copied beside x). `bf16_row_linear`: the same ring, prologue
and epilogues for bf16 weights (no meta warp).

Work: a tile's rows are BLOCK_N consecutive rows of N (SwiGLU: BLOCK_N / 2 gates and their ups,
half N further on); programs take tiles pid, pid + programs, ... (units). K is not split: at
BLOCK_N 16 Qwen3-8B's shapes have 256-1,536 tiles (97% of the last wave busy).

BOUND (a bound, wrong products, bench/w12_join.py --row): 8 the loader's copies alone (each stage
reissued once its copies landed, no consumer waited on), 2 the hand-off alone (the multiplying
warps wait for each stage and free it, reading nothing), 4 (NORM) the norm prologue left out:
the products of x as it is, the norm weight copied but unread (what the prologue costs), 16
(W12, with 2 or 8) the meta warp left out: no scale words or escape sums made or waited on.

CUDA sm_90 only. tests/test_w12_row.py emulates the bit work on the CPU (every weight back, bit
for bit), compiles the kernel for sm_90a, runs the kernel's own code on kernels/emulate.py (the
CPU, every tile and epilogue, with and without PDL's branches) and on a Hopper GPU, against
w12_linear_reference. The engine takes it with ONE_ROW (W12) or BF16_ONE_ROW (bf16), both on
since run 299 (H200), on Hopper GPUs.
"""

from __future__ import annotations

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma

from specpilot.formats.w12 import BLOCK, SLICE, W12Weight, padded
from specpilot.kernels import launch, trace
from specpilot.kernels.w12_mma import X_SHIFT
from specpilot.kernels.w12_ws import (
    _copy_planes,
    _copy_rows,
    _escape_entry,
    _escape_lists,
    _escape_table,
    _grid_wait,
    _let_next_launch,
    _table_entries,
    _tile_rows,
    _trace_mark,
    prmt,
    prmt_words,
)

# On (1) since run 299 (H200; runs 296-298 on an H100): the engine's one-row W12 multiplies
# (formats/w12_engine.linear, `routed`) whose input is x or RMSNorm(x) * w (natural order, no
# SwiGLU prologue, no norm hand-off, no given tile) run on this kernel, with their SwiGLU or
# residual epilogue, on Hopper GPUs (group size 128: a group a half block); and the fused
# one-row forwards there give their W12 q|k|v and gate|up the norm in that prologue
# (`prologue_rows`), so no rmsnorm launch precedes them (W12 takes none otherwise:
# models/fused.W12_PROLOGUE_ROWS; no hand-off: NORM_HANDOFF_W12). Standalone it was level with
# w12_linear (run 294); inside the decode graph, where the weights' first stages are asked for
# before PDL's wait, W12 every matrix decodes in 3.551 ms against 3.682 / 3.689 back to back and
# runs AR 1.112x over bf16 paired against 1.060x / 1.074x (run 299; forcing passed). 2: only
# the multiplies ending in the residual add (o, down; run 296: -1.6%, less than 1's -4.6%), so
# the norm stays where it was. ONE_ROW_TILE: which of ROW_TILES they run on (run 296: 1 level);
# 7 (stages of 4 blocks, 3 of them) since run 338 (H200, Qwen3-8B end to end, 3 paired rounds
# over bf16: AR 1.172x [1.170-1.173] against 1.146x on 0, spec level at 1.101x / 1.106x; run
# 340, Llama-3.1-8B: 1.175x against 1.152x, spec 1.099x / 1.097x; forcing passed; run 339's
# decode graph back to back 3.300 ms against 3.363 / 3.369; H100 run 337: 4.277 against 4.293).
ONE_ROW = 1
ONE_ROW_TILE = 7
# ONE_ROW_SWIGLU_TILE: the tile (an index of ROW_TILES; -1: ONE_ROW_TILE's) of the one-row
# multiplies with the SwiGLU epilogue (gate|up). Why: run 341 (H200, decode graph, exit to
# exit, us a layer): gate|up 38.66 on ROW_TILES 1 (32-row tiles, x in fp32) against 39.17 on 7
# and 41.57 on 0, where 1 loses at q|k|v (12.42 against 11.90) and at the down (21.18 against
# 19.63).
ONE_ROW_SWIGLU_TILE = -1
# The same for bf16 weights (bf16_row_linear), on since run 299: the engine's one-row bf16
# multiplies (no SwiGLU prologue, no hand-off, no rope epilogue, no given tile) on this ring; the
# fused one-row forwards then norm in its prologue instead of handing the norm on
# (models/fused.handoff_for, prologue_rows), on Hopper GPUs. Run 299 (H200): decode 3.959 ms
# against 4.025 / 4.022 back to back, Qwen3-8B paired AR 1.019x [1.008-1.032], spec level;
# pipelined AR 249.9 / spec@6.55 1,310 (Qwen3), 257.5 / 1,321 (Llama), forcing passed.
BF16_ONE_ROW = True
BF16_ONE_ROW_TILE = 0
# MAXNREG (tile key; -1: the switch MAXNREG's for W12, BF16_MAXNREG's for bf16; 0: none): the
# kernel compiled with at most this many registers a thread (Triton's maxnreg). At 168 (ptxas's
# own choice) one program of 12 warps takes the SM's 64k registers, so the next multiply's
# programs, launched early under PDL, become resident only as this one's exit: each one-row
# multiply starts with a ramp (run 323's decode, exit to exit, us a layer: q|k|v 16.1 against a
# 12.6 bound, o 9.9 against 8.4, gate|up 54.9 against 50.3, down 26.2 against 25.2). At 80 two
# programs fit an SM (shared memory: 95 kB at K 4096 with the norm, 115 kB at 12288), so the
# next multiply's loader can ask for its first stages while this one runs; sm_90 compile: no
# spills at K 4096, 12 bytes at 12288 with the residual. Off: it loses. Run 325 (H100, the W12
# decode graph back to back): 5.440 ms against 4.384 / 4.384; exit to exit gate|up 69.4 us a
# layer against 55.0, o 12.8 against 9.5, down 29.8 against 26.2: the multiplying warps on 80
# registers lose more than the early residency gives (q|k|v level at 16.1). A knob for the
# tuner.
MAXNREG = 0
BF16_MAXNREG = 0

# the prototype's default tile: 2 rows a thread on 8 warps (16-row tiles), 6 stages of 2 blocks
# (12 kB each: ~72 kB in flight an SM), one program an SM
TILE = dict(ROWS=2, WARPS=8, STAGES=6, SB=2, PERSISTENT=1, BOUND=0, ESC_BATCH=4, FENCE=-1, X32=0,
            MAXNREG=-1, ESC_EARLY=-1, PRE=0, SLOTS=-1, MMA=0)  # fmt: skip
# ONE_ROW_TILE 1: 4 rows a thread (32-row tiles), 3 stages, x in fp32 (run 294, H100: the best
# or within 2% of it at o, gate|up and down, 12.40 / 54.08 / 29.72 us against w12_linear's
# 13.17 / 54.17 / 30.48)
# 2: 4 stages (run 294: W12 q|k|v's best, bf16's within 1%; runs 300 and 302 in the decode
# graph: bf16 +0.4%, W12 -0.6%). 3: 10 stages (~120 kB in flight an SM); 4: 8-row tiles (1
# row a thread: twice the tiles); 5: 15 stages, the deepest W12 ring that fits beside a K of
# 4096 with the norm (~180 kB in flight, 205 kB of shared memory; bf16's falls back: row_tile).
# 6: 10 stages of which the first 6 before PDL's wait (PRE): ~120 kB in flight once running, the
# default's 72 kB asked for early (run 313's deeper rings, every stage asked for before the
# wait, lost: whether the early requests or the depth did it). PRE (0: STAGES): the stages the
# loader asks for before PDL's wait; the rest after it. 7: stages of 4 blocks, 3 of them (the
# default's 72 kB in flight in half the hand-offs); 8: 4 of them (96 kB, bf16_row's default
# bytes in flight). Why: run 334's decode graph with the hand-off alone (ROW_BOUND 2: copies and
# stage barriers, no reads) took W12's q|k|v 14.27 us a layer against a 12.6 bound, where
# bf16_row's whole multiply runs at its bound on as many stages of 4/3 the bytes. 9: 7 with x in
# fp32 (X32); 10: 32-row tiles (4 rows a thread), 2 stages of 4 blocks, X32; 11: 32-row tiles,
# 4 stages of 2, X32 (run 339, H200: the multiplying warps' work, not the ring, is most of what
# W12 loses there: the hand-off alone, ROW_BOUND 2, decodes in 3.102 ms against 3.363; ROW_TILES
# 1's 32-row tiles with X32 took gate|up 38.66 us a layer against 41.57, run 341). 12 / 13:
# MMA (the multiplying warps on mma.sync, below), 4 / 2 stages of 4 blocks: 2.57 SASS
# instructions a weight in the stage loop against 7's 5.53 (bench/sass_one_row.py --row:
# bench/results/2026-12-06-sass-one-row-mma). 14 / 15: 12 / 13 with MMA 2 (the scale deferred to
# each half block's sum: no bf16x2 multiply a pair, and two chains of 8 mmas a stage, not one of
# 16). All four lose (run 343, H100, the W12 decode graph back to back: 12 4.664 ms, 14 4.723,
# 13 4.785, 15 4.842 against 7's 4.284 / 4.276; the down +6.1 us a layer on 12, o +2.1): not
# bound by issue but by shared memory: a k-step's 4 word loads (lane 4 g + c: row g's position
# 8 c + p) hit 4 banks 8 ways in the unswizzled 128-byte rows, ~0.13 passes a weight, 8.5-10
# us for o at one pass a clock (docs/LOG.md session 71; a count that fits, not a measurement).
# Since then they read swizzled planes conflict-free (`_words`), not yet timed; knobs for now.
# 16: 0 without the proxy fence (FENCE 0; -1 puts it in bf16's tiles): BF16_ONE_ROW_TILE 16
# times what bf16's fence costs.
# kernels/w12_tokens.py builds on their decode.
# BF16_ONE_ROW_TILE: the bf16 route's (X32 does not apply to bf16 weights)
ROW_TILES = (TILE, TILE | dict(ROWS=4, STAGES=3, X32=1), TILE | dict(STAGES=4),
             TILE | dict(STAGES=10), TILE | dict(ROWS=1), TILE | dict(STAGES=15),
             TILE | dict(STAGES=10, PRE=6), TILE | dict(SB=4, STAGES=3),
             TILE | dict(SB=4, STAGES=4), TILE | dict(SB=4, STAGES=3, X32=1),
             TILE | dict(ROWS=4, SB=4, STAGES=2, X32=1),
             TILE | dict(ROWS=4, STAGES=4, X32=1),
             TILE | dict(ROWS=4, WARPS=4, SB=4, STAGES=4, MMA=1),
             TILE | dict(ROWS=4, WARPS=4, SB=4, STAGES=2, MMA=1),
             TILE | dict(ROWS=4, WARPS=4, SB=4, STAGES=4, MMA=2),
             TILE | dict(ROWS=4, WARPS=4, SB=4, STAGES=2, MMA=2),
             TILE | dict(FENCE=0))  # fmt: skip
# ONE_ROW_SMALL_TILE / BF16_ONE_ROW_SMALL_TILE: the tile (an index of ROW_TILES; -1: the one
# above) of the small one-row multiplies, N x K at most SMALL_WEIGHTS (the 8B shapes' q|k|v and
# o). Run 306's kernel timeline (H100, W12 decode): q|k|v 15.60 us against a 12.64 bound, o
# 11.07 against 8.43, where gate|up and down run within 8% and 2% of theirs.
ONE_ROW_SMALL_TILE = -1
BF16_ONE_ROW_SMALL_TILE = -1
# ONE_ROW_NORMED_SMALL_TILE: the same for the small W12 ones with the norm prologue alone (q|k|v;
# -1: ONE_ROW_SMALL_TILE's). Why: run 334's s10p6 (ROW_TILES 6 everywhere) took q|k|v 14.43 us a
# layer against 15.74 / 15.47 but o 11.20 against 9.92 / 9.81.
ONE_ROW_NORMED_SMALL_TILE = -1
SMALL_WEIGHTS = 6144 * 4096
SHARED_LIMIT = 220 * 1024  # bytes of shared memory a tile may take (Hopper: 227 kB an SM)
# NORM_BOUND (a bound: wrong outputs): 1 gives every launch with a norm prologue BOUND 4, the
# norm left out, so that a decode graph's exit-to-exit times tell the prologue's cost. Run 329's
# W12 decode (H100, us a layer, from the PDL wait to the exit): q|k|v 15.26 against a 12.6
# bound and gate|up 53.17 against 50.3 (both with the prologue), o 8.37 against 8.4 and the
# down 25.17 against 25.2 (neither). Run 330 (H100, exit to exit): the prologue costs ~2.3 us a
# layer (q|k|v 15.84 -> 14.67, gate|up 54.10 -> 52.99; bf16 17.10 -> 16.26, 67.15 -> 66.16),
# of which NORM_WEIGHT_EARLY takes ~1.3: not the difference, and ~1 us a layer left does not
# pay for handing the norm on to the one-row multiplies.
NORM_BOUND = 0
# ROW_BOUND (a bound: wrong outputs): every launch of either kernel with BOUND this (0 none; 8
# the loader's copies alone; 2 the hand-off alone: the multiplying warps wait for each stage and
# free it, reading nothing; 18: that without W12's meta warp, whose scale words and escape sums
# 2 still waits on), so that a decode graph's exit-to-exit times tell the ring's feed apart
# from the work on it. Why: run 330's decode (H100, against the copy-bandwidth bounds) has W12
# q|k|v at 82% and gate|up at 94% where bf16_row's run at ~100% on the same ring; run 334's rb2
# took W12's q|k|v 14.27 us a layer against a 12.6 bound.
ROW_BOUND = 0
# ESC_EARLY (tile key; -1: the switch EARLY_ESCAPES's; W12 with ESC_BATCH 4): the meta warp asks
# for each tile's escape lists beside its scale words' bases and for their first four entries
# right after (constants, all before PDL's wait on the first tile), so that a tile's escape
# sums wait on the inputs' loads alone after the wait; without it the lists, the entries and the
# inputs are three rounds of loads in a row after the wait, and a tile's chain (the bases, the
# lists, the entries, the inputs) four. Why: a one-row q|k|v or gate|up tile (16 rows of K 4096)
# takes ~4 us, about four loaded round trips, and the multiplying warps wait for its escape
# sums at its end (run 330's W12 q|k|v at 82% of its bound, gate|up 94%, the down's 12 us
# tiles 97%). 2: a tile ahead (`_meta_ahead`): the next tile's lists, scale words and entries
# asked for before this tile's inputs, so that after the first tile each one's sums wait on one
# round of loads behind the tile before's. The same bits. 1 since run 334 (H100, decode graph back
# to back: 4.288 ms against 4.343 / 4.348 without, q|k|v 15.15 us a layer against 15.74 / 15.47,
# gate|up 53.55 against 54.42 / 54.72; 2: 4.309) and run 335 (Qwen3-8B end to end, 3 paired
# rounds over bf16: AR 1.215x against 1.193x without, spec level at 1.151x / 1.150x).
EARLY_ESCAPES = 1
# NORM_WEIGHT_EARLY: the norm prologue's weight (a constant, K bf16) copied first of all, before
# the ring's first stages and PDL's wait (`_norm_weight_copies`), instead of beside x after the
# wait (XB more TMA copies issued on the path to the first multiply). On since run 330 (H100,
# decode back to back): W12 4.278 ms against 4.313 / 4.317 without, bf16 5.145 against 5.177;
# verify level (its norms are handed on, no prologue).
NORM_WEIGHT_EARLY = 1
# META_SLOTS (tile key SLOTS; -1: this switch's): the meta warp's slots of scale words and escape
# sums, so that it runs up to SLOTS - 1 tiles ahead of the multiplying warps. Why: a tile's
# chain on the meta warp is three rounds of loads (its scale words' bases with its escape lists,
# the lists' first entries, the inputs at their columns) and, with 2 slots, the next tile's
# begins only once the multiplying warps have freed the slot before; a one-row q|k|v or gate|up
# tile (16 rows of K 4096) takes ~4 us, about as long as three loaded round trips. 4 slots take
# 2 kB more shared memory a slot at K 4096, 8 at 12288. Off (2): it loses. Run 339 (H200, W12
# decode graph back to back): 3.384 ms against 3.363 / 3.369 (o 8.06 us a layer against 7.79);
# there the meta warp's whole chain costs 0.03 ms (ROW_BOUND 18 against 2). A knob for the tuner.
META_SLOTS = 2
# EVEN_PROGRAMS: the fewest programs that still take as many waves of tiles as one an SM would
# (cdiv(units, waves)), so that every program takes the same count: Qwen3-8B's one-row gate|up
# has 1,536 tiles, on 132 SMs 84 programs of 12 and 48 of 11 (the launch ends with the twelfth
# wave on 84 SMs), on 128 programs 12 each; q|k|v's 384, o's and the down's 256 the same on 128.
# The SMs left free take the next multiply's first programs early (PDL). Off: it loses. Run 332
# (H100, decode back to back): W12 4.311 ms against 4.286 / 4.284, bf16 5.187 against 5.132
# (exit to exit gate|up 54.2 us a layer against 53.5, the down 26.0 against 25.9): the last
# wave's SMs already draw the full bandwidth, and four SMs fewer read less. A knob for the tuner.
EVEN_PROGRAMS = 0
_TILE_INDEX = (lambda n: 0 <= n < len(ROW_TILES), f"an index of ROW_TILES (0-{len(ROW_TILES) - 1})")
_SMALL_INDEX = (
    lambda n: -1 <= n < len(ROW_TILES),
    f"-1 or an index of ROW_TILES (0-{len(ROW_TILES) - 1})",
)
_MAXNREG_RULE = (lambda n: n == 0 or (24 <= n <= 256 and n % 8 == 0),
                 "0 (none) or a multiple of 8, 24-256")  # fmt: skip
SWITCH_RULES = {
    "ONE_ROW": (lambda n: n in (0, 1, 2), "0 (off), 1 (every one-row multiply) or 2 (residual)"),
    "MAXNREG": _MAXNREG_RULE,
    "BF16_MAXNREG": _MAXNREG_RULE,
    "ONE_ROW_TILE": _TILE_INDEX,
    "ONE_ROW_SWIGLU_TILE": _SMALL_INDEX,
    "BF16_ONE_ROW_TILE": _TILE_INDEX,
    "ONE_ROW_SMALL_TILE": _SMALL_INDEX,
    "BF16_ONE_ROW_SMALL_TILE": _SMALL_INDEX,
    "ONE_ROW_NORMED_SMALL_TILE": _SMALL_INDEX,
    "NORM_BOUND": (lambda n: n in (0, 1), "0 or 1 (a bound: wrong outputs)"),
    "ROW_BOUND": (lambda n: n in (0, 2, 8, 18), "0, 2, 8 or 18 (a bound: wrong outputs)"),
    "EARLY_ESCAPES": (lambda n: n in (0, 1, 2), "0, 1 or 2"),
    "NORM_WEIGHT_EARLY": (lambda n: n in (0, 1), "0 or 1"),
    "EVEN_PROGRAMS": (lambda n: n in (0, 1), "0 or 1"),
    "META_SLOTS": (lambda n: n in (2, 4), "2 or 4 (Gluon's shapes: powers of 2)"),
}
# FENCE: a proxy fence after a stage's reads, before it is freed for TMA's next writes (w12_ws
# has one; CUTLASS's TMA pipelines free a stage with the barrier's release alone). -1: on for
# bf16 weights, off for W12. Why: the SASS of bf16_row's residual tile frees a stage with its
# last ldmatrix loads of it still in flight (bench/sass_inflight.py), the order run 346 found
# missing in w12_tokens (a TMA copy into the freed stage may land before they read); the W12
# tiles' loads of a stage are all read before its free (test_bench_smoke holds them to that).
# Run 353 (H100): bf16_row's residual tile at one token, N 4096, K 4096 and 12288, 3 seeds,
# PDL on and off, runs alternating two problems: 0 of 120 runs off with the fence and 0 of 120
# without (no race seen; the order is missing all the same, so the fence stays); the bf16
# decode graph back to back 5.139 / 5.154 ms with it against 5.142 / 5.143 without: no cost.
# X32 (W12 only): the multiplying warps widen x to fp32 in shared memory once (the norm
# prologue writes it so), so that the loop loads x's columns as they multiply (16 IMAD.U32
# widenings less a stage: `python bench/sass_one_row.py --row`, 16r8w6s2b's stage loop 188 ->
# 172 instructions for 32 weights a thread)
WBLOCK = gl.constexpr(BLOCK)
# prmt selectors of a half block's pair of slices Q, Q + 1 (Q 0, 2): bytes low[Q], high[Q],
# low[Q + 1], high[Q + 1] of the words {low, high}
SELECT_Q0, SELECT_Q2 = gl.constexpr(0x5140), gl.constexpr(0x7362)
GROUP_CHUNK = gl.constexpr(32)  # the meta warp's scale words, 32 groups (16 blocks) at a time


@gluon.jit
def _high_bytes(code_word, H: gl.constexpr):
    """The high bytes s << 7 | d of slices 4H .. 4H + 3 of a code word's position (one a byte):
    the nibbles s << 3 | d moved apart with no carry across bytes."""
    nib = (code_word >> (4 * H)) & 0x0F0F0F0F
    return nib + (nib & 0x08080808) * 15


@gluon.jit
def _bf16_pair(low_word, high, Q: gl.constexpr):
    """Slices Q and Q + 1 (of a half block, Q 0 or 2) of a position as a bf16x2 word (slice Q in
    the low half), exponents taken down by 2b: bytes low[Q], high[Q], low[Q + 1], high[Q + 1]."""
    return prmt_words(low_word, high, SELECT_Q0 if Q == 0 else SELECT_Q2)


@gluon.jit
def _times(pair, scale):
    """A bf16x2 word times a scale word (both halves 2^(2b)): the exact weights."""
    return gl.inline_asm_elementwise(
        "mul.rn.bf16x2 $0, $1, $2;", "=r,r,r", [pair, scale], dtype=gl.int32, is_pure=True,
        pack=1,
    )  # fmt: skip


@gluon.jit
def _barriers(COUNT: gl.constexpr):
    """COUNT mbarriers of one arrival each, initialized: [COUNT, 1], one a ring stage or slot."""
    bars = gl.allocate_shared_memory(gl.int64, [COUNT, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(COUNT):
        mbarrier.init(bars.index(i), count=1)
    return bars


@gluon.jit
def _x_copies(x_desc, x_buf, x_ready, XB: gl.constexpr, PDL: gl.constexpr, norm,
              NORM: gl.constexpr, NW_EARLY: gl.constexpr = False):  # fmt: skip
    """x's XB blocks into shared memory (after the kernel before has written it: PDL's wait,
    then the next kernel let launch); NORM: the norm weight's too (norm: its descriptor and
    buffer), on the same barrier, unless NW_EARLY (`_norm_weight_copies` asked for them and
    for x's bytes at the program's start)."""
    _grid_wait(PDL)
    if PDL:
        _let_next_launch()
    WITH_NW: gl.constexpr = NORM and not NW_EARLY
    copies: gl.constexpr = 2 if WITH_NW else 1
    if not (NORM and NW_EARLY):
        mbarrier.expect(x_ready, copies * XB * x_desc.block_type.nbytes)
    for t in range(XB):
        tma.async_copy_global_to_shared(x_desc, [8 * t, 0], x_ready, x_buf.index(t))
        if WITH_NW:
            tma.async_copy_global_to_shared(norm[0], [8 * t, 0], x_ready, norm[1].index(t))


@gluon.jit
def _norm_weight_copies(x_desc, x_ready, XB: gl.constexpr, norm):
    """NW_EARLY: the norm weight's XB blocks (a constant) asked for at the program's start,
    before the ring's first stages and PDL's wait, on x's barrier, which expects x's bytes
    too (one arrival: the phase completes when both have landed; `_x_copies` adds x's)."""
    mbarrier.expect(x_ready, 2 * XB * x_desc.block_type.nbytes)
    for t in range(XB):
        tma.async_copy_global_to_shared(norm[0], [8 * t, 0], x_ready, norm[1].index(t))


@gluon.jit
def stacked_planes(descs, bufs, s, b, row0, col, bar, half_n, BN: gl.constexpr,
                   SWIGLU: gl.constexpr):  # fmt: skip
    """Block b of ring stage s (columns col.., the tile's BN rows from row0) under the stage's
    blocks before it (the MMA tiles' ring, and kernels/w12_tokens'): its low plane halves into
    rows BN b .. of buffers 2 s and 2 s + 1, its codes into rows BN b .. of buffer s, so that
    the warps read the stage's blocks as one view (`_words`). descs, bufs: the low plane's and
    the codes'."""
    low = bufs[0].index(2 * s).slice(BN * b, BN)
    high = bufs[0].index(2 * s + 1).slice(BN * b, BN)
    _copy_rows(descs[0], row0, col, bar, low, half_n, SWIGLU)
    _copy_rows(descs[0], row0, col + WBLOCK // 2, bar, high, half_n, SWIGLU)
    _copy_rows(descs[1], row0, col // 2, bar, bufs[1].index(s).slice(BN * b, BN), half_n, SWIGLU)


@gluon.jit
def _loader(descs, bufs, bars, work, XB: gl.constexpr, SB: gl.constexpr, SWIGLU: gl.constexpr,
            BOUND: gl.constexpr, PDL: gl.constexpr, norm, NORM: gl.constexpr,
            BF16: gl.constexpr, NW_EARLY: gl.constexpr = False, PRE: gl.constexpr = 0,
            MMA: gl.constexpr = 0):  # fmt: skip
    """x once (XB blocks of it), then each tile's stages of SB blocks: of its two W12 planes
    (descs and bufs: the low plane's, the codes', x's), or with BF16 of its bf16 weights as 4
    boxes of 64 columns a block (the weight's, x's). PDL: the weights' first STAGES stages
    (constants) before the wait for the kernel before (PRE of them where PRE is set), x after
    it. NORM: the norm weight's too (norm: its descriptor and buffer; `_x_copies`), with NW_EARLY
    first of all. MMA: a stage's SB blocks one under the other: block b's low plane halves into
    rows BN b .. of buffers 2 s and 2 s + 1, its codes into buffer s (`_mma_stage` reads the
    warps' blocks as one view)."""
    ready, empty, x_ready = bars
    units, tiles_rows, n_stages, half_n = work
    x_desc, x_buf = descs[-1], bufs[-1]
    # (BF16: 4 boxes a block; W12: the low plane's 2 halves a block, [2 STAGES SB, BN, 128]; MMA:
    # a stage's blocks one under the other, [2 STAGES, SB BN, 128])
    STAGES: gl.constexpr = bufs[0].type.shape[0] // (2 if MMA else (4 * SB if BF16 else 2 * SB))
    BN: gl.constexpr = bufs[0].type.shape[1] // (SB if MMA else 1)
    WAIT_AT: gl.constexpr = STAGES if PRE == 0 else PRE  # stages asked for before PDL's wait
    if NORM and NW_EARLY:
        _norm_weight_copies(x_desc, x_ready, XB, norm)
    if not PDL:
        _x_copies(x_desc, x_buf, x_ready, XB, PDL, norm, NORM, NW_EARLY)
    nbytes: gl.constexpr = SB * BN * (2 * WBLOCK if BF16 else WBLOCK + WBLOCK // 2)
    c = 0
    for u in range(gl.program_id(0), units, gl.num_programs(0)):
        row0 = u * tiles_rows
        for st in range(n_stages):
            s = c % STAGES
            if PDL and c == WAIT_AT:  # (the ring full: x before the first stage is reused)
                _x_copies(x_desc, x_buf, x_ready, XB, PDL, norm, NORM, NW_EARLY)
            if (BOUND & 8) != 0:  # the copies alone: a stage's copies landed frees it
                mbarrier.wait(ready.index(s), ((c // STAGES) & 1) ^ 1, pred=c >= STAGES)
            else:
                mbarrier.wait(empty.index(s), ((c // STAGES) & 1) ^ 1)
            bar = ready.index(s)
            mbarrier.expect(bar, nbytes)
            for b in gl.static_range(SB):
                col = (st * SB + b) * WBLOCK
                i = s * SB + b
                if BF16:
                    for p in gl.static_range(4):
                        _copy_rows(descs[0], row0, col + 64 * p, bar, bufs[0].index(4 * i + p),
                                   half_n, SWIGLU)  # fmt: skip
                elif MMA:
                    stacked_planes(descs, bufs, s, b, row0, col, bar, half_n, BN, SWIGLU)
                else:
                    _copy_planes((descs[0], descs[1]), (bufs[0], bufs[1]), i, row0, col, bar,
                                 half_n, SWIGLU)  # fmt: skip
            c += 1
    if PDL and c <= WAIT_AT:  # a program of at most WAIT_AT stages: x after all of them
        _x_copies(x_desc, x_buf, x_ready, XB, PDL, norm, NORM, NW_EARLY)
    if (BOUND & 8) != 0:  # the last copies landed before the program ends
        for s in gl.static_range(STAGES):
            uses = (c - s + STAGES - 1) // STAGES
            mbarrier.wait(ready.index(s), (uses - 1) & 1, pred=uses > 0)


@gluon.jit
def _meta(bufs, bars, work, n, weights, escapes, x_ptr, k, ESC_BATCH: gl.constexpr,
          SWIGLU: gl.constexpr, PDL: gl.constexpr, norm, NORM: gl.constexpr,
          ESC_EARLY: gl.constexpr = 0):  # fmt: skip
    """Each tile's scale words [2 x blocks, BLOCK_N] (group g of every row: bf16x2 2^(2b), both
    halves; 2^0 past the row's groups) and its rows' escape sums, into slot tile % SLOTS
    (esc_buf's first dimension: `META_SLOTS`).
    NORM: the escapes' inputs normed as the multiplying warps norm x, with their 1 / RMS (norm:
    the norm weight's pointer, rstd's buffer, its barrier). ESC_EARLY (with ESC_BATCH 4): the
    escape lists asked for beside the scale words' bases, their first entries right after, before
    PDL's wait (`_tabled_escapes`: the same sums)."""
    scale_buf, esc_buf = bufs
    esc_ready = bars[1]
    units, tiles_rows, n_stages, half_n = work
    BN: gl.constexpr = scale_buf.type.shape[1]
    SLOTS: gl.constexpr = esc_buf.type.shape[0]
    GROUPS: gl.constexpr = scale_buf.type.shape[0] // SLOTS
    # the scale words ([SLOTS x GROUPS, BN, 1]: a group's [BN, 1] column as the multiplier reads
    # it) as [slot, group, row]
    slots = scale_buf._reinterpret(gl.int32, [SLOTS, GROUPS, BN], scale_buf.type.layout)
    grid: gl.constexpr = gl.BlockedLayout([1, 1], [32 // BN, BN], [1, 1], [1, 0])
    lanes: gl.constexpr = gl.BlockedLayout([1], [32], [1], [0])
    EARLY: gl.constexpr = ESC_EARLY == 1 and ESC_BATCH == 4
    if ESC_EARLY == 2 and ESC_BATCH == 4:
        _meta_ahead(slots, bars, esc_buf, work, n, weights, escapes, x_ptr, k, SWIGLU, PDL, norm,
                    NORM, grid, lanes)  # fmt: skip
    else:
        j = 0  # tiles so far: the slots' positions and phases
        for u in range(gl.program_id(0), units, gl.num_programs(0)):
            row0 = u * tiles_rows
            if EARLY:  # the escape lists (constants) asked for before the scale words' bases
                rows, in_rows = _tile_rows(row0, (0, 0, 0, 0, half_n), n, BN, SWIGLU, lanes)
                start, count = _escape_lists(rows, in_rows, escapes)
            _scale_words(slots, j, u, bars, work, n, weights, SWIGLU, grid)
            if EARLY:  # their first four entries (constants): before PDL's wait on the first tile
                table = _table_entries(start, count, escapes, 0, k)
            # the escapes read x: PDL's wait for the kernel before (the scale words, constants,
            # need none: the first tile's are made while that kernel ends; once done it is free)
            _grid_wait(PDL)
            rstd = _input_rstd(norm, lanes, NORM)
            if EARLY:
                sums = _tabled_escapes(table, escapes, x_ptr, k, (norm[0], rstd), NORM)
            else:
                sums = _row_escapes(escapes, x_ptr, k, row0, half_n, n, BN, lanes, ESC_BATCH,
                                    SWIGLU, (norm[0], rstd), NORM)  # fmt: skip
            esc_buf.index(j % SLOTS).store(sums)
            mbarrier.arrive(esc_ready.index(j % SLOTS), count=1)
            j += 1


@gluon.jit
def _input_rstd(norm, lanes: gl.constexpr, NORM: gl.constexpr):
    """NORM: x's 1 / RMS, once the multiplying warps have it (norm: the norm weight's pointer,
    rstd's buffer, its barrier); else 1.0."""
    rstd = 1.0
    if NORM:
        mbarrier.wait(norm[2], 0)
        rstd = gl.max(norm[1].load(lanes), axis=0)
    return rstd


@gluon.jit
def _meta_ahead(slots, bars, esc_buf, work, n, weights, escapes, x_ptr, k, SWIGLU: gl.constexpr,
                PDL: gl.constexpr, norm, NORM: gl.constexpr, grid: gl.constexpr,
                lanes: gl.constexpr):  # fmt: skip
    """ESC_EARLY 2: `_meta` a tile ahead. Tile j + 1's constants (its escape lists, then its
    scale words into the other slot and its lists' first four entries) load while tile j's
    inputs do, so that after the first tile each tile's escape sums wait on about one round of
    loads behind the tile before's, not four; the same sums (`_first_inputs`, `_escape_total`:
    `_tabled_escapes`'s). Past the last tile the lists' loads are masked off (no rows) and no
    scale words are made."""
    esc_ready = bars[1]
    units, tiles_rows, n_stages, half_n = work
    BN: gl.constexpr = slots.type.shape[2]
    SLOTS: gl.constexpr = slots.type.shape[0]
    u0 = gl.program_id(0)
    step = gl.num_programs(0)
    rows, in_rows = _tile_rows(u0 * tiles_rows, (0, 0, 0, 0, half_n), n, BN, SWIGLU, lanes)
    start, count = _escape_lists(rows, in_rows, escapes)
    _scale_words(slots, 0, u0, bars, work, n, weights, SWIGLU, grid)
    start, count, cols, values = _table_entries(start, count, escapes, 0, k)
    c0, c1, c2, c3 = cols
    v0, v1, v2, v3 = values
    j = 0
    for u in range(u0, units, step):
        nxt = u + step  # the next tile's lists (none past the last), asked for first
        rows, in_rows = _tile_rows(nxt * tiles_rows, (0, 0, 0, 0, half_n), n, BN, SWIGLU, lanes)
        s1, n1 = _escape_lists(rows, in_rows & (nxt < units), escapes)
        # this tile's inputs at its four entries' columns: after PDL's wait (a wait once done is
        # free) and x's 1 / RMS; then, while they load, the next tile's scale words and entries
        _grid_wait(PDL)
        normed = (norm[0], _input_rstd(norm, lanes, NORM))
        table = (start, count, (c0, c1, c2, c3), (v0, v1, v2, v3))
        inputs = _first_inputs(table, x_ptr, normed, NORM)
        if nxt < units:
            _scale_words(slots, j + 1, nxt, bars, work, n, weights, SWIGLU, grid)
        s1, n1, cols, values = _table_entries(s1, n1, escapes, 0, k)
        sums = _escape_total(table, inputs, escapes, x_ptr, k, normed, NORM)
        esc_buf.index(j % SLOTS).store(sums)
        mbarrier.arrive(esc_ready.index(j % SLOTS), count=1)
        start, count = s1, n1
        c0, c1, c2, c3 = cols
        v0, v1, v2, v3 = values
        j += 1


@gluon.jit
def fence_cta(ON: gl.constexpr):
    """With ON, a fence.acq_rel.cta: this thread's shared and global accesses before it ordered
    before those after it for the whole CTA (kernels/w12_tokens.FENCE's hand-offs)."""
    if ON:
        gl.inline_asm_elementwise("fence.acq_rel.cta; // $0", "=r", [], dtype=gl.int32,
                                  is_pure=False, pack=1)  # fmt: skip


@gluon.jit
def fence_proxy(ON: gl.constexpr):
    """With ON, `fence_async_shared` (fence.proxy.async.shared::cta): this thread's
    generic-proxy shared-memory accesses before it ordered against async-proxy (TMA) ones after
    it (w12_tokens.FENCE 4: before a ring stage is freed for the next copy)."""
    if ON:
        fence_async_shared()


@gluon.jit
def fence_init(ON: gl.constexpr):
    """With ON, a fence.mbarrier_init.release.cluster: the mbarrier.inits before it visible to
    the async proxy (TMA's complete-tx) and the other threads (w12_tokens.FENCE 2)."""
    if ON:
        gl.inline_asm_elementwise("fence.mbarrier_init.release.cluster; // $0", "=r", [],
                                  dtype=gl.int32, is_pure=False, pack=1)  # fmt: skip


@gluon.jit
def _scale_words(slots, j, u, bars, work, n, weights, SWIGLU: gl.constexpr, grid: gl.constexpr,
                 FENCE: gl.constexpr = False):  # fmt: skip
    """Tile u's scale words (the program's tile j) into slot j % SLOTS, once the multiplying warps
    have freed it: `_meta`'s, for `_meta_ahead`. FENCE: `fence_cta` before the slot is handed
    on (kernels/w12_tokens.FENCE)."""
    scale_ready, meta_empty = bars[0], bars[2]
    units, tiles_rows, n_stages, half_n = work
    base_ptr, base_stride, groups = weights
    GROUPS: gl.constexpr = slots.type.shape[1]
    BN: gl.constexpr = slots.type.shape[2]
    SLOTS: gl.constexpr = slots.type.shape[0]
    slot = j % SLOTS
    mbarrier.wait(meta_empty.index(slot), ((j // SLOTS) & 1) ^ 1)
    rows, in_rows = _tile_rows(u * tiles_rows, (0, 0, 0, 0, half_n), n, BN, SWIGLU,
                               gl.SliceLayout(0, grid))  # fmt: skip
    base_rows = base_ptr + rows.to(gl.int64) * base_stride
    for ch in gl.static_range(GROUPS // GROUP_CHUNK):
        g = ch * GROUP_CHUNK + gl.arange(0, GROUP_CHUNK, layout=gl.SliceLayout(1, grid))
        live = (g[:, None] < groups) & in_rows[None, :]
        b = gl.load(base_rows[None, :] + g[:, None], mask=live, other=0).to(gl.int32)
        v = (2 * b + 127) << 7  # bf16 2^(2b)
        slots.index(slot).slice(ch * GROUP_CHUNK, GROUP_CHUNK).store(v | (v << 16))
    fence_cta(FENCE)
    mbarrier.arrive(scale_ready.index(slot), count=1)


@gluon.jit
def _row_escapes(escapes, x_ptr, k, row0, half_n, n, BN: gl.constexpr, layout: gl.constexpr,
                 BATCH: gl.constexpr, SWIGLU: gl.constexpr, normed,
                 NORM: gl.constexpr):  # fmt: skip
    """The tile's rows' escape sums [BN] fp32: each escaped weight's exact value times x at its
    column (BATCH 4: each row's first 4 at once, then the rest in turn); normed: (the norm
    weight's pointer, x's 1 / RMS): with NORM x normed there first (`_input_at`)."""
    rows, in_rows = _tile_rows(row0, (0, 0, 0, 0, half_n), n, BN, SWIGLU, layout)
    if BATCH == 4:
        total = _tabled_escapes(_escape_table(rows, in_rows, escapes, 0, k), escapes, x_ptr, k,
                                normed, NORM)  # fmt: skip
    else:
        start, count = _escape_lists(rows, in_rows, escapes)
        total = gl.zeros([BN], gl.float32, layout)
        for e in range(0, gl.max(count, axis=0)):
            col, value = _escape_entry(escapes, start, count, e, 0, k)
            total = total + value * _input_at(x_ptr, col, value != 0.0, normed, NORM)
    return total


@gluon.jit
def _tabled_escapes(table, escapes, x_ptr, k, normed, NORM: gl.constexpr):
    """The rows' escape sums [BN] fp32 from ESC_BATCH 4's table: the four entries' inputs at
    once, then the rest of each row's list in turn (`_input_at`'s inputs)."""
    inputs = _first_inputs(table, x_ptr, normed, NORM)
    return _escape_total(table, inputs, escapes, x_ptr, k, normed, NORM)


@gluon.jit
def _first_inputs(table, x_ptr, normed, NORM: gl.constexpr):
    """The inputs at a table's four entries' columns (`_input_at`), asked for at once."""
    c0, c1, c2, c3 = table[2]
    v0, v1, v2, v3 = table[3]
    x0 = _input_at(x_ptr, c0, v0 != 0.0, normed, NORM)
    x1 = _input_at(x_ptr, c1, v1 != 0.0, normed, NORM)
    x2 = _input_at(x_ptr, c2, v2 != 0.0, normed, NORM)
    x3 = _input_at(x_ptr, c3, v3 != 0.0, normed, NORM)
    return x0, x1, x2, x3


@gluon.jit
def _escape_total(table, inputs, escapes, x_ptr, k, normed, NORM: gl.constexpr):
    """A table's escape sums from its four entries' inputs (`_first_inputs`), then the rest of
    each row's list in turn."""
    start, count, cols, values = table
    v0, v1, v2, v3 = values
    x0, x1, x2, x3 = inputs
    total = gl.zeros_like(v0) + v0 * x0 + v1 * x1 + v2 * x2 + v3 * x3
    for e in range(4, gl.max(count, axis=0)):
        col, value = _escape_entry(escapes, start, count, e, 0, k)
        total = total + value * _input_at(x_ptr, col, value != 0.0, normed, NORM)
    return total


@gluon.jit
def _input_at(x_ptr, col, live, normed, NORM: gl.constexpr):
    """The multiply's input at columns col (0.0 where not live), fp32: x, or with NORM x normed
    as `_normed_input` norms it (normed: the norm weight's pointer, x's 1 / RMS)."""
    x = gl.load(x_ptr + col, mask=live, other=0.0)
    if not NORM:
        return x.to(gl.float32)
    w = gl.load(normed[0] + col, mask=live, other=0.0).to(gl.float32)
    h = (x.to(gl.float32) * normed[1]).to(gl.bfloat16).to(gl.float32)
    return (h * w).to(gl.bfloat16).to(gl.float32)


@gluon.jit
def _normed_input(x_buf, nw_buf, k, eps, XB: gl.constexpr, num_warps: gl.constexpr, out):
    """x in shared memory normed into out (x_buf itself, or X32's fp32 buffer) as the rmsnorm
    kernel norms it (kernels/elementwise: h = bf16(x / RMS), then bf16(h * w)), by the
    multiplying warps (their barrier after the writes, before any reads another's); -> 1 / RMS."""
    tile: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [num_warps, 1], [1, 0])
    squares = gl.zeros([8, 32], gl.float32, tile)
    for t in gl.static_range(XB):
        v = x_buf.index(t).load(tile).to(gl.float32)
        squares = squares + v * v
    rstd = gl.rsqrt(gl.sum(gl.sum(squares, axis=1), axis=0) / k + eps)
    for t in gl.static_range(XB):
        h = (x_buf.index(t).load(tile).to(gl.float32) * rstd).to(gl.bfloat16).to(gl.float32)
        w = nw_buf.index(t).load(tile).to(gl.float32)
        out.index(t).store((h * w).to(gl.bfloat16).to(out.dtype))
    gl.thread_barrier()
    return rstd


@gluon.jit
def _widened(x_buf, x32_buf, XB: gl.constexpr, num_warps: gl.constexpr):
    """x's XB blocks [8, 32] bf16 in shared memory widened into x32_buf's fp32 (X32 without the
    norm prologue), by the multiplying warps (their barrier after the writes, before any reads
    another's)."""
    tile: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [num_warps, 1], [1, 0])
    for t in gl.static_range(XB):
        x32_buf.index(t).store(x_buf.index(t).load(tile).to(gl.float32))
    gl.thread_barrier()


@gluon.jit
def _pair_sums(acc, low, high, scale, x_blk, H: gl.constexpr, Q: gl.constexpr):
    """acc [BN, 32] plus the products of slices 4H + Q and 4H + Q + 1 of a block: their pair
    decoded, made exact by its group's scale word, widened, times x at their columns."""
    w = _times(_bf16_pair(low, high, Q), scale)
    wa = (w << 16).to(gl.float32, bitcast=True)  # slice 4H + Q
    wb = (w & -65536).to(gl.float32, bitcast=True)  # slice 4H + Q + 1
    layout: gl.constexpr = acc.type.layout
    xa = x_blk.slice(4 * H + Q, 1).load(layout).to(gl.float32)  # [1, 32] (X32: fp32 already)
    xb = x_blk.slice(4 * H + Q + 1, 1).load(layout).to(gl.float32)
    return acc + wa * xa + wb * xb


@gluon.jit
def _plane_words(buf, i, words: gl.constexpr):
    """Buffer i's [BN, 128] plane bytes as [BN, 32] 32-bit words in registers (layout words)."""
    planes: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=2)
    return buf.index(i)._reinterpret(gl.int32, [buf.type.shape[1], 32], planes).load(words)


@gluon.jit
def _w12_block(acc, bufs, i, t, g, words: gl.constexpr):
    """acc (4 sums [BN, 32]) plus W12 block t's products (stage buffer i, scale words g and
    g + 1): each pair decoded, made exact and widened (`_pair_sums`), 4 sums so that each FMA
    chain is a quarter of the block's."""
    low_buf, code_buf, x_buf, scale_buf = bufs[:4]
    code_word = _plane_words(code_buf, i, words)
    low0 = _plane_words(low_buf, 2 * i, words)
    low1 = _plane_words(low_buf, 2 * i + 1, words)
    zero_words = gl.zeros_like(code_word)
    scale0 = zero_words + scale_buf.index(g).load(words)  # the rows' [BN, 1] words, broadcast
    scale1 = zero_words + scale_buf.index(g + 1).load(words)
    high0 = _high_bytes(code_word, 0)
    high1 = _high_bytes(code_word, 1)
    x_blk = x_buf.index(t)
    return (_pair_sums(acc[0], low0, high0, scale0, x_blk, 0, 0),
            _pair_sums(acc[1], low0, high0, scale0, x_blk, 0, 2),
            _pair_sums(acc[2], low1, high1, scale1, x_blk, 1, 0),
            _pair_sums(acc[3], low1, high1, scale1, x_blk, 1, 2))  # fmt: skip


@gluon.jit
def _bf16_block(acc, bufs, i, t, words: gl.constexpr):
    """acc (4 sums [BN, 32]) plus bf16 block t's products (stage boxes 4i .. 4i + 3 of [BN,
    32] words, two columns each) times x's words at the same columns."""
    w_buf, x_buf = bufs
    flat: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=2)
    # the block's x as [4, 32] words: word (p, i) holds columns 64 p + 2 i and 64 p + 2 i + 1
    xw = x_buf.index(t)._reinterpret(gl.int32, [4, 32], flat)
    return (_word_products(acc[0], _plane_words(w_buf, 4 * i, words), xw.slice(0, 1).load(words)),
            _word_products(acc[1], _plane_words(w_buf, 4 * i + 1, words),
                           xw.slice(1, 1).load(words)),
            _word_products(acc[2], _plane_words(w_buf, 4 * i + 2, words),
                           xw.slice(2, 1).load(words)),
            _word_products(acc[3], _plane_words(w_buf, 4 * i + 3, words),
                           xw.slice(3, 1).load(words)))  # fmt: skip


# MMA (tile key, W12, 16-row tiles on 4 warps, stages of 4 blocks, no X32): each multiplying
# warp takes one block of each stage and multiplies it on mma.sync m16n8k16 (the tile's 16 rows
# as A, x in B's every column), its weights decoded straight into A's registers as
# kernels/w12_mma.py decodes them (k permuted: in mma p of half h, lane 4 g + c's k slots 2c,
# 2c + 1 and 2c + 8, 2c + 9 are slices 4h .. 4h + 3 at word position 8c + p of rows g and g + 8;
# B's the same columns of x, paired once a program in shared memory), made exact by the scale
# words as `_pair_sums` makes them; the warps' row sums added in shared memory at the tile's end.
# Their planes: a stage's 4 blocks one under the other, TMA's 128-byte swizzle, each lane's 8
# words of its two rows of a half block read at once (`_words`: no bank conflicts).
# Why: run 339 (H200) put most of what W12 loses at one row in the multiplying warps' work a
# weight (5.0-5.5 SASS instructions a weight on the FFMA tiles; w12_mma's decode ~2.6).
# [warps, 8 g, 4 c, 1]: one element a thread, lane 4 g + c (the mma's operands, `_lanes`)
MMA_WARPS = gl.constexpr(4)
# MMA 2 (ROW_TILES 14, 15; w12_mma's ACC_SCALE): the decoded pairs are the weights times 2^(-2b)
# (normal bf16, exponents 1..15), x is taken times 2^X_SHIFT (|x| < 2^64), each half block's 8
# mmas sum into fresh registers (it lies in one group), and that sum times 2^(2b - X_SHIFT) (a
# normal fp32: 2b <= 126) is added to the row's: only the summation order differs from MMA 1's
# products of the exact weights (products under 2^-126, |x| below ~2^-64, are the exception).
X_SCALE = gl.constexpr(2.0**X_SHIFT.value)  # (X_SHIFT: kernels/w12_mma.py's)
LANES4 = gl.constexpr(gl.BlockedLayout([1, 1, 1, 1], [1, 8, 4, 1], [4, 1, 1, 1], [3, 2, 1, 0]))
LANES2 = gl.constexpr(gl.BlockedLayout([1, 1], [1, 32], [4, 1], [1, 0]))  # [warps, lane]
# unswizzled shared layouts of 4 and 2 dimensions (a view's layout: its rank, or one less for a
# view to be indexed)
PLAIN4 = gl.constexpr(gl.SwizzledSharedLayout(1, 1, 1, [3, 2, 1, 0]))
PLAIN2 = gl.constexpr(gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))
# MMA tiles' planes (and kernels/w12_tokens' x boxes) in shared memory: TMA's 128-byte swizzle,
# so that a lane's 8 words of a row read at once hit no bank twice (`_words`). Why: one word a
# lane a k-step from unswizzled 128-byte rows (the MMA tiles as run 343 timed them) put the 8
# rows of a fragment on each of 4 banks: ~0.13 shared-memory passes a weight (docs/LOG.md
# session 71).
SWIZZLE = gl.constexpr(128)
# such a buffer's [64 rows, 128 bytes] as [64, 32] int32 words, through the swizzle (`_words`)
SWIZZLED_WORDS = gl.constexpr(gl.NVMMASharedLayout(swizzle_byte_width=SWIZZLE.value,
                                                   element_bitwidth=32, rank=2))  # fmt: skip
# a [64, 32] word view (the 4 warps' 16 rows, 32 positions) as the multiplying warps read it
# at once: lane 4 g + c holds rows g and g + 8 of its warp's 16 at positions 8 c .. 8 c + 7 (16
# registers: two 16-byte loads a row, through the 128-byte swizzle: no bank conflicts)
WORDS16 = gl.constexpr(gl.DistributedLinearLayout(
    reg_bases=[[0, 1], [0, 2], [0, 4], [8, 0]],
    lane_bases=[[0, 8], [0, 16], [1, 0], [2, 0], [4, 0]],
    warp_bases=[[16, 0], [32, 0]], block_bases=[], shape=[64, 32],
))  # fmt: skip


@gluon.jit
def _lanes(view):
    """A [warps, 8, 4, 1] (or [warps, 8 or 1, 1 or 4, 1]: broadcast) shared view as the mma's
    [warps, 32] operand: lane 4 g + c's element."""
    v = view.load(LANES4)
    v = v + gl.zeros([MMA_WARPS, 8, 4, 1], v.dtype, LANES4)
    return gl.convert_layout(gl.reshape(v, [MMA_WARPS, 32]), LANES2)


@gluon.jit
def _mma_sync(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
    """One mma.sync m16n8k16 a warp (bf16 in, fp32 sums) on [warps, 32] operands, a lane an
    element, as PTX lays its fragments out (kernels/emulate.py models the same)."""
    return gl.inline_asm_elementwise(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {$0, $1, $2, $3}, "
        "{$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};",
        "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3", [a0, a1, a2, a3, b0, b1, c0, c1, c2, c3],
        dtype=(gl.float32, gl.float32, gl.float32, gl.float32), is_pure=True, pack=1,
    )  # fmt: skip


@gluon.jit
def _lane_words(v):
    """[warps, 8 g, 4 c] -> the mma's [warps, 32] operand, lane 4 g + c's element (no data
    moved: the lanes already hold them)."""
    return gl.convert_layout(gl.reshape(v, [MMA_WARPS, 32]), LANES2)


@gluon.jit
def _positions(v):
    """[warps, 8 g, 4 c, 2, 2, 2] (position 8 c + 4 b2 + 2 b1 + b0, registers) -> the 8
    operands of positions 8 c + p, p = 0 .. 7 (register picks)."""
    e, o = gl.split(v)  # b0
    ee, eo = gl.split(e)  # b1
    oe, oo = gl.split(o)
    p0, p4 = gl.split(ee)  # b2
    p2, p6 = gl.split(eo)
    p1, p5 = gl.split(oe)
    p3, p7 = gl.split(oo)
    return (_lane_words(p0), _lane_words(p1), _lane_words(p2), _lane_words(p3),
            _lane_words(p4), _lane_words(p5), _lane_words(p6), _lane_words(p7))  # fmt: skip


@gluon.jit
def _words(view):
    """A swizzled [64, 32] int32 view (warp w's rows 16 w ..: a block's plane words, or 16
    tokens' x words of one pair slot) read at once (WORDS16) -> its operands: rows g (tokens
    0-7), then rows g + 8 (tokens 8-15), each 8 by position 8 c + p."""
    v = gl.reshape(view.load(WORDS16), [MMA_WARPS, 2, 8, 4, 2, 2, 2])  # w, rh, g, c, b2, b1, b0
    lo, hi = gl.split(gl.permute(v, (0, 2, 3, 4, 5, 6, 1)))  # (rh last)
    return _positions(lo), _positions(hi)


@gluon.jit
def a_operand(lows, codes, P: gl.constexpr, H: gl.constexpr):
    """k-step P of half H: the mma's A registers a0..a3 (rows g, g + 8 at slices 4 H, + 1 and
    4 H + 2, + 3) as bf16 pairs with their exponents taken down, from `_words`' operands of the
    half's low words and of the stage's code words (rows g: [0], rows g + 8: [1])."""
    hb0 = _high_bytes(codes[0][P], H)
    hb1 = _high_bytes(codes[1][P], H)
    a0 = _bf16_pair(lows[0][P], hb0, 0)
    a1 = _bf16_pair(lows[1][P], hb1, 0)
    a2 = _bf16_pair(lows[0][P], hb0, 2)
    a3 = _bf16_pair(lows[1][P], hb1, 2)
    return a0, a1, a2, a3


@gluon.jit
def _shifted(x, SHIFT: gl.constexpr):
    """bf16 x's bits as int16, times 2^X_SHIFT where SHIFT (exact: a power of two)."""
    if SHIFT:
        x = (x.to(gl.float32) * X_SCALE).to(gl.bfloat16)
    return x.to(gl.int16, bitcast=True)


@gluon.jit
def _x_pairs(x_buf, pairs, XB: gl.constexpr, num_warps: gl.constexpr, SHIFT: gl.constexpr = False):
    """x's blocks [8 slices, 32] bf16 in shared memory as pairs [XB / 4, 16, 32] int32: word m
    of block t (row 4 (t % 4) + m of stage t // 4) at position i holds slices 2m and 2m + 1 (the
    lower in the low half), B's operand words; by the multiplying warps (their barrier after the
    writes). SHIFT (MMA 2): x times 2^X_SHIFT (exact for |x| < 2^64)."""
    row: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [num_warps, 1], [1, 0])
    for st in range(XB // 4):
        words = pairs.index(st)
        for w in gl.static_range(4):
            x_blk = x_buf.index(4 * st + w)
            for m in gl.static_range(4):
                lo = _shifted(x_blk.slice(2 * m, 1).load(row), SHIFT)
                hi = _shifted(x_blk.slice(2 * m + 1, 1).load(row), SHIFT)
                word = (lo.to(gl.int32) & 0xFFFF) | (hi.to(gl.int32) << 16)
                words.slice(4 * w + m, 1).store(word)
    gl.thread_barrier()


@gluon.jit
def _deferred_scale(scale_word):
    """MMA 2: a scale word (bf16x2 2^(2b)) as the fp32 2^(2b - X_SHIFT) (its low half's bits
    moved up, the exponent taken down)."""
    return ((scale_word << 16) - (X_SHIFT << 23)).to(gl.float32, bitcast=True)


@gluon.jit
def _mma_stage(acc, bufs, s, st, g8, DEFER: gl.constexpr = False):
    """acc (the mma's c0..c3, [warps, 32]) plus ring stage s's products: warp w's block w of the
    stage (x's block st x 4 + w), both halves, 8 mmas each (`MMA`); g8: the stage's first scale
    word group over 8 (its tile's slot's first, plus 8 st). The planes' words of the 4 warps'
    blocks read as one swizzled [64, 32] view a half (`_words`: each lane's 8 words of rows g
    and g + 8 at once, no bank conflicts), k-step p taking position 8 c + p.
    DEFER (MMA 2): each half's mmas on the pairs as decoded, from zero, its sums scaled then
    (rows g in c0, g + 8 in c2; c1, c3 left as they were)."""
    low_buf, code_buf, scale_buf, pairs = bufs
    SLOTS_GROUPS: gl.constexpr = scale_buf.type.shape[0]
    codes = _words(code_buf.index(s)._reinterpret(gl.int32, [64, 32], SWIZZLED_WORDS))
    # the scale words of x's blocks st x 4 .. + 3, rows h x 16 + rh x 8 + g
    scales = scale_buf._reinterpret(gl.int32, [SLOTS_GROUPS // 8, MMA_WARPS, 32, 1, 1], PLAIN4)
    scale = scales.index(g8)
    xp = pairs.index(st)._reinterpret(gl.int32, [MMA_WARPS, 4, 4, 8], PLAIN4)
    c0, c1, c2, c3 = acc
    for h in gl.static_range(2):
        s0 = _lanes(scale.slice(16 * h, 8, dim=1))
        s1 = _lanes(scale.slice(16 * h + 8, 8, dim=1))
        lows = _words(low_buf.index(2 * s + h)._reinterpret(gl.int32, [64, 32], SWIZZLED_WORDS))
        d0, d1, d2, d3 = c0, c1, c2, c3
        if DEFER:
            d0 = gl.zeros_like(c0)
            d1, d2, d3 = d0, d0, d0
        for p in gl.static_range(8):
            a0, a1, a2, a3 = a_operand(lows, codes, p, h)
            if not DEFER:
                a0, a1, a2, a3 = _times(a0, s0), _times(a1, s1), _times(a2, s0), _times(a3, s1)
            b0 = _lanes(xp.slice(2 * h, 1, dim=1).slice(p, 1, dim=3))
            b1 = _lanes(xp.slice(2 * h + 1, 1, dim=1).slice(p, 1, dim=3))
            d0, d1, d2, d3 = _mma_sync(a0, a1, a2, a3, b0, b1, d0, d1, d2, d3)
        if DEFER:
            c0 = c0 + d0 * _deferred_scale(s0)
            c2 = c2 + d2 * _deferred_scale(s1)
        else:
            c0, c1, c2, c3 = d0, d1, d2, d3
    return c0, c1, c2, c3


@gluon.jit
def _mma_row_sums(acc, red, rows_layout: gl.constexpr):
    """The tile's 16 row sums from the warps' mma sums (every column of D alike: c0 row g, c2 row
    g + 8), added over the warps through shared memory red [2, warps, 32]."""
    red.index(0).store(acc[0])
    red.index(1).store(acc[2])
    gl.thread_barrier()
    parts: gl.constexpr = gl.BlockedLayout([1, 1, 1, 1], [1, 1, 8, 4], [2, 2, 1, 1], [3, 2, 1, 0])
    v = red._reinterpret(gl.float32, [2, MMA_WARPS, 8, 4], PLAIN4).slice(0, 1, dim=3).load(parts)
    sums = gl.reshape(gl.sum(v, axis=1), [16])
    gl.thread_barrier()  # (the next tile's stores after every warp's loads)
    return gl.convert_layout(sums, rows_layout)


@gluon.jit
def _multiplier(bufs, bars, work, n, output, SB: gl.constexpr, BOUND: gl.constexpr,
                FENCE: gl.constexpr, PDL: gl.constexpr, EPILOGUE: gl.constexpr,
                num_warps: gl.constexpr, norm, NORM: gl.constexpr, BF16: gl.constexpr,
                X32: gl.constexpr, marks, TRACE: gl.constexpr,
                MMA: gl.constexpr = 0):  # fmt: skip
    """The default partition: each tile's blocks' products (`_w12_block`, or with BF16
    `_bf16_block`), then the lanes' sums, the escapes (W12) and the store (`_store_row`).
    bufs: the ring's buffers and x's (W12: then the scale words' and the escape sums'); bars:
    ready, empty, x_ready (W12: then scale_ready, esc_ready, meta_empty). NORM: x normed in
    shared memory first (`_normed_input`; norm: the norm weight's buffer, rstd's buffer, its
    barrier, K, eps), its 1 / RMS handed on (to the meta warp). X32 (W12): x (normed) in fp32
    in bufs[5] (`_widened`, or the norm's output), which the blocks read instead. marks,
    TRACE: the kernel timeline's (kernels/trace.py; `_trace_mark`), for the whole program."""
    ready, empty, x_ready = bars[:3]
    units, tiles_rows, n_stages, half_n = work
    ring = bufs[0]  # (the loader's shapes: `_loader`)
    STAGES: gl.constexpr = ring.type.shape[0] // (2 if MMA else (4 * SB if BF16 else 2 * SB))
    BN: gl.constexpr = ring.type.shape[1] // (SB if MMA else 1)
    SWIGLU: gl.constexpr = EPILOGUE[0]
    words: gl.constexpr = gl.BlockedLayout([BN // num_warps, 1], [1, 32], [num_warps, 1], [1, 0])
    rows_layout: gl.constexpr = gl.SliceLayout(1, words)
    x_buf = bufs[1] if BF16 else bufs[2]
    x_read = bufs[5] if X32 else x_buf  # what the blocks read
    XB: gl.constexpr = x_buf.type.shape[0]
    _trace_mark(marks, 0, TRACE)
    _grid_wait(PDL)  # (before its stores)
    _trace_mark(marks, 1, TRACE)
    mbarrier.wait(x_ready, 0)
    if NORM and (BOUND & 4) == 0:
        nw_buf, rstd_buf, norm_ready, k, eps = norm
        rstd = _normed_input(x_buf, nw_buf, k, eps, XB, num_warps, x_read)
        one: gl.constexpr = gl.BlockedLayout([1], [32], [num_warps], [0])
        rstd_buf.store(gl.zeros([1], gl.float32, one) + rstd)
        mbarrier.arrive(norm_ready, count=1)
    elif X32:
        _widened(x_buf, x_read, XB, num_warps)
    if X32:
        bufs = (bufs[0], bufs[1], x_read, bufs[3], bufs[4])
    if MMA:  # B's words: x (normed) in pairs, once
        _x_pairs(x_buf, bufs[6], XB, num_warps, MMA == 2)
    SLOTS: gl.constexpr = 1 if BF16 else bufs[4].type.shape[0]  # the meta warp's (W12)
    c = 0
    j = 0
    for u in range(gl.program_id(0), units, gl.num_programs(0)):
        slot = j % SLOTS
        if not BF16 and (BOUND & 16) == 0:  # the tile's scale words
            mbarrier.wait(bars[3].index(slot), (j // SLOTS) & 1)
        if MMA:
            zero = gl.zeros([MMA_WARPS, 32], gl.float32, LANES2)
        else:
            zero = gl.zeros([BN, 32], gl.float32, words)
        acc = (zero, zero, zero, zero)
        # (BOUND 8: none of the stages: the loader frees its own, and its phases run ahead)
        for st in range(n_stages * ((BOUND & 8) == 0)):
            s = c % STAGES
            mbarrier.wait(ready.index(s), (c // STAGES) & 1)
            if MMA and (BOUND & 2) == 0:
                g8 = slot * (bufs[3].type.shape[0] // SLOTS) // 8 + st
                acc = _mma_stage(acc, (bufs[0], bufs[1], bufs[3], bufs[6]), s, st, g8, MMA == 2)
            elif (BOUND & 2) == 0:
                for b in gl.static_range(SB):
                    if BF16:
                        acc = _bf16_block(acc, bufs, s * SB + b, st * SB + b, words)
                    else:
                        g = slot * (bufs[3].type.shape[0] // SLOTS) + 2 * (st * SB + b)
                        acc = _w12_block(acc, bufs, s * SB + b, st * SB + b, g, words)
                if FENCE:
                    fence_async_shared()  # the reads before TMA's next writes of the stage
            mbarrier.arrive(empty.index(s), count=1)
            c += 1
        if MMA:
            sums = _mma_row_sums(acc, bufs[7], rows_layout)
        else:
            sums = gl.sum((acc[0] + acc[1]) + (acc[2] + acc[3]), axis=1)
        if not BF16 and (BOUND & 16) == 0:  # the escapes' sums, then their slot freed
            mbarrier.wait(bars[4].index(slot), (j // SLOTS) & 1)
            sums = sums + bufs[4].index(slot).load(rows_layout)
            mbarrier.arrive(bars[5].index(slot), count=1)
        row0 = u * tiles_rows
        rows, in_rows = _tile_rows(row0, (0, 0, 0, 0, half_n), n, BN, SWIGLU, rows_layout)
        _store_row(sums, rows, in_rows, row0, half_n, output, EPILOGUE)
        j += 1
    _trace_mark(marks, 2, TRACE)


@gluon.jit
def _store_row(sums, rows, in_rows, row0, half_n, output, EPILOGUE: gl.constexpr):
    """A tile's sums [BN] rounded to bf16 and stored: plain, plus the residual (rounded again),
    or SwiGLU's silu(gate) * up of its BN / 2 gates and ups (each rounded first, as
    kernels/common.store_swiglu)."""
    SWIGLU: gl.constexpr = EPILOGUE[0]
    RESIDUAL: gl.constexpr = EPILOGUE[1]
    y_ptr, res_ptr = output
    if SWIGLU:
        BN: gl.constexpr = sums.type.shape[0]
        HALF: gl.constexpr = BN // 2
        every: gl.constexpr = gl.BlockedLayout([BN], [32], [gl.num_warps()], [0])
        a = gl.convert_layout(sums, every).to(gl.bfloat16).to(gl.float32)
        g, up = gl.split(gl.permute(gl.reshape(a, [2, HALF]), (1, 0)))
        silu = (g / (1.0 + gl.exp(-g))).to(gl.bfloat16).to(gl.float32)
        y = (silu * up).to(gl.bfloat16)
        cols = row0 + gl.arange(0, HALF, layout=y.type.layout)
        gl.store(y_ptr + cols, y, mask=cols < half_n)
    elif RESIDUAL:
        res = gl.load(res_ptr + rows, mask=in_rows, other=0.0)
        y = sums.to(gl.bfloat16).to(gl.float32) + res.to(gl.float32)
        gl.store(y_ptr + rows, y.to(gl.bfloat16), mask=in_rows)
    else:
        gl.store(y_ptr + rows, sums.to(gl.bfloat16), mask=in_rows)


@gluon.jit
def _w12_row_kernel(
    low_desc, code_desc, x_desc, nw_desc,
    x_ptr, nw_ptr, base_ptr, row_ptr, esc_col_ptr, esc_bits_ptr, y_ptr, res_ptr,
    n, k, units, tiles_rows, n_stages, base_stride, groups, eps,
    ROWS: gl.constexpr, SB: gl.constexpr, STAGES: gl.constexpr, XB: gl.constexpr,
    GROUPS: gl.constexpr, BOUND: gl.constexpr, ESC_BATCH: gl.constexpr, FENCE: gl.constexpr,
    PDL: gl.constexpr, NORM: gl.constexpr, SWIGLU: gl.constexpr,
    RESIDUAL: gl.constexpr, num_warps: gl.constexpr, X32: gl.constexpr = 0,
    TRACE: gl.constexpr = 0, trace_ptr=None, clock_ptr=None, NW_EARLY: gl.constexpr = False,
    ESC_EARLY: gl.constexpr = 0, PRE: gl.constexpr = 0, SLOTS: gl.constexpr = 2,
    MMA: gl.constexpr = 0,
):  # fmt: skip
    """Each program takes tiles pid, pid + programs, ...; the partitions run on across them.
    NORM: the multiply's input is RMSNorm(x) * the norm weight (nw_desc, nw_ptr; eps), normed
    by the multiplying warps in shared memory (w12_linear's norm prologue, once a program);
    NW_EARLY: the norm weight's copies asked for first (the loader's `_norm_weight_copies`).
    X32: x widened to fp32 in shared memory by the multiplying warps before their loop. SLOTS:
    the meta warp's slots of scale words and escape sums (`META_SLOTS`)."""
    BN: gl.constexpr = ROWS * num_warps
    work = (units, tiles_rows, n_stages, n // 2)
    # BOUND 16: the meta warp takes no tiles (nor, with ESC_EARLY 2, the first one ahead)
    META: gl.constexpr = (BOUND & 16) == 0
    meta_work = (units * META, tiles_rows, n_stages, n // 2)
    half: gl.constexpr = WBLOCK // 2  # a plane's row in a buffer: 128 bytes
    # (MMA: a stage's blocks one under the other, swizzled: `_loader`, `_mma_stage`)
    RING: gl.constexpr = [2 * STAGES, SB * BN, half] if MMA else [2 * STAGES * SB, BN, half]
    CODES: gl.constexpr = [STAGES, SB * BN, half] if MMA else [STAGES * SB, BN, half]
    low_buf = gl.allocate_shared_memory(gl.uint8, RING, low_desc.layout)
    code_buf = gl.allocate_shared_memory(gl.uint8, CODES, code_desc.layout)
    x_buf = gl.allocate_shared_memory(gl.bfloat16, [XB, 8, 32], x_desc.layout)
    plain: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    scale_buf = gl.allocate_shared_memory(gl.int32, [SLOTS * GROUPS, BN, 1], plain)
    esc_buf = gl.allocate_shared_memory(gl.float32, [SLOTS, BN],
                                        gl.SwizzledSharedLayout(1, 1, 1, [0]))  # fmt: skip
    x32_buf = gl.allocate_shared_memory(gl.float32, [XB if X32 else 1, 8, 32], plain)
    # MMA: x's pairs (B's words) and the warps' row sums
    pairs_buf = gl.allocate_shared_memory(gl.int32, [XB // 4 if MMA else 1, 16, 32], PLAIN2)
    red_buf = gl.allocate_shared_memory(gl.float32, [2, MMA_WARPS if MMA else 1, 32], PLAIN2)
    ready, empty, x_ready = _barriers(STAGES), _barriers(STAGES), _barriers(1)
    scale_ready, esc_ready, meta_empty = _barriers(SLOTS), _barriers(SLOTS), _barriers(SLOTS)
    # NORM: the norm weight's blocks (one unread block without), x's 1 / RMS and its barrier
    nw_buf = gl.allocate_shared_memory(gl.bfloat16, [XB if NORM else 1, 8, 32], nw_desc.layout)
    rstd_buf = gl.allocate_shared_memory(gl.float32, [1], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    norm_ready = _barriers(1)
    norm_loader = (nw_desc, nw_buf)
    norm_multiplier = (nw_buf, rstd_buf, norm_ready.index(0), k, eps)
    norm_meta = (nw_ptr, rstd_buf, norm_ready.index(0))

    gl.warp_specialize(
        [
            (_multiplier, ((low_buf, code_buf, x_buf, scale_buf, esc_buf, x32_buf, pairs_buf,
                            red_buf),
                           (ready, empty, x_ready.index(0), scale_ready, esc_ready, meta_empty),
                           work, n, (y_ptr, res_ptr), SB, BOUND, FENCE, PDL,
                           (SWIGLU, RESIDUAL), num_warps, norm_multiplier, NORM, False, X32,
                           (trace_ptr, clock_ptr), TRACE, MMA)),
            (_meta, ((scale_buf, esc_buf), (scale_ready, esc_ready, meta_empty), meta_work, n,
                     (base_ptr, base_stride, groups), (row_ptr, esc_col_ptr, esc_bits_ptr),
                     x_ptr, k, ESC_BATCH, SWIGLU, PDL, norm_meta, NORM and (BOUND & 4) == 0,
                     ESC_EARLY * META)),
            (_loader, ((low_desc, code_desc, x_desc), (low_buf, code_buf, x_buf),
                       (ready, empty, x_ready.index(0)), work, XB, SB, SWIGLU, BOUND, PDL,
                       norm_loader, NORM, False, NW_EARLY, PRE, MMA)),
        ],
        [1, 1],
        [80, 24],
    )  # fmt: skip


@gluon.jit
def _word_products(acc, w, xw):
    """acc plus two columns' products: bf16 pairs of weights w [BN, 32] and of x xw [1, 32]."""
    wa = (w << 16).to(gl.float32, bitcast=True)
    wb = (w & -65536).to(gl.float32, bitcast=True)
    xa = (xw << 16).to(gl.float32, bitcast=True)
    xb = (xw & -65536).to(gl.float32, bitcast=True)
    return acc + wa * xa + wb * xb


@gluon.jit
def _bf16_row_kernel(
    w_desc, x_desc, nw_desc, y_ptr, res_ptr, n, k, units, tiles_rows, n_stages, eps,
    ROWS: gl.constexpr, SB: gl.constexpr, STAGES: gl.constexpr, XB: gl.constexpr,
    BOUND: gl.constexpr, FENCE: gl.constexpr, PDL: gl.constexpr, NORM: gl.constexpr,
    SWIGLU: gl.constexpr, RESIDUAL: gl.constexpr, num_warps: gl.constexpr,
    TRACE: gl.constexpr = 0, trace_ptr=None, clock_ptr=None, NW_EARLY: gl.constexpr = False,
    PRE: gl.constexpr = 0,
):  # fmt: skip
    """_w12_row_kernel's ring, loader, norm prologue and epilogue for a bf16 weight (no meta
    warp)."""
    BN: gl.constexpr = ROWS * num_warps
    work = (units, tiles_rows, n_stages, n // 2)
    w_buf = gl.allocate_shared_memory(gl.bfloat16, [4 * STAGES * SB, BN, 64], w_desc.layout)
    x_buf = gl.allocate_shared_memory(gl.bfloat16, [XB, 8, 32], x_desc.layout)
    ready, empty, x_ready = _barriers(STAGES), _barriers(STAGES), _barriers(1)
    bars = (ready, empty, x_ready.index(0))
    nw_buf = gl.allocate_shared_memory(gl.bfloat16, [XB if NORM else 1, 8, 32], nw_desc.layout)
    rstd_buf = gl.allocate_shared_memory(gl.float32, [1], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    norm_ready = _barriers(1)  # (no one waits)
    norm = (nw_buf, rstd_buf, norm_ready.index(0), k, eps)
    gl.warp_specialize(
        [
            (_multiplier, ((w_buf, x_buf), bars, work, n, (y_ptr, res_ptr), SB, BOUND, FENCE,
                           PDL, (SWIGLU, RESIDUAL), num_warps, norm, NORM, True, False,
                           (trace_ptr, clock_ptr), TRACE)),
            (_loader, ((w_desc, x_desc), (w_buf, x_buf), bars, work, XB, SB, SWIGLU, BOUND, PDL,
                       (nw_desc, nw_buf), NORM, True, NW_EARLY, PRE)),
        ],
        [1],
        [32],  # (24 spilled with the norm weight's copies at three sites: NORM, PDL, SwiGLU)
    )  # fmt: skip


def routed(x: torch.Tensor, weight, kw: dict, hand: dict) -> torch.Tensor | None:
    """formats/w12_engine.linear's one-row call (its prologue and epilogue keywords `kw`, the
    rest `hand`) on this kernel where ONE_ROW (a W12 weight, `one_row_route`) or BF16_ONE_ROW (a
    bf16 one, `bf16_route`) takes it: no SwiGLU prologue, and of `hand` only natural input and
    output orders (no norm hand-off, rope epilogue or given tile); else None."""
    if kw["glu"] or any(not isinstance(v, str) or v != "natural" for v in hand.values()):
        return None
    args = dict(swiglu=kw["swiglu"], residual=kw["residual"], norm_weight=kw["norm_weight"],
                eps=kw["eps"])  # fmt: skip
    norm = kw["norm_weight"] is not None
    if isinstance(weight, W12Weight):
        if not one_row_route(x, weight, residual=kw["residual"] is not None):
            return None
        normed = norm and ONE_ROW_NORMED_SMALL_TILE >= 0
        small = ONE_ROW_NORMED_SMALL_TILE if normed else ONE_ROW_SMALL_TILE
        glu = kw["swiglu"] and ONE_ROW_SWIGLU_TILE >= 0
        tile = row_tile(*weight.shape, ONE_ROW_SWIGLU_TILE if glu else ONE_ROW_TILE, small, False,
                        norm)  # fmt: skip
        return w12_row_linear(x, weight, tile, **args)
    if isinstance(weight, torch.Tensor) and bf16_route(x, weight):
        tile = row_tile(*weight.shape, BF16_ONE_ROW_TILE, BF16_ONE_ROW_SMALL_TILE, True, norm)
        return bf16_row_linear(x, weight, tile, **args)
    return None


def row_tile(n: int, k: int, index: int, small: int, bf16: bool, norm: bool) -> dict:
    """The ROW_TILES entry of an N x K one-row multiply (bf16: a bf16 weight, X32 off, which is
    W12's only; norm: with the norm prologue): `small`'s where it is one (-1: none), N x K is at
    most SMALL_WEIGHTS and its shared memory fits (a deep ring with a long K may not), else
    `index`'s."""
    w12_only = dict(X32=0) if bf16 else {}
    if small >= 0 and n * k <= SMALL_WEIGHTS:
        tile = ROW_TILES[small] | w12_only
        if geometry(TILE | tile, k, bf16, norm)["shared"] <= SHARED_LIMIT:
            return tile
    return ROW_TILES[index] | w12_only


def one_row_route(x: torch.Tensor, weight: W12Weight, residual: bool = False) -> bool:
    """Whether ONE_ROW takes x @ weight: one row, group size 128, compiled on a Hopper GPU; with
    ONE_ROW 2 only a multiply ending in the residual add (`residual`)."""
    if not ONE_ROW or (ONE_ROW == 2 and not residual) or x.dim() != 2 or x.shape[0] != 1:
        return False
    return weight.group_size == BLOCK // 2 and launch.gluon_routes(x)


def prologue_rows(weight: W12Weight | torch.Tensor, kind: str) -> int:
    """The most rows of a fused forward whose multiply by `weight` takes the `kind` prologue
    itself on this kernel (models/fused.prologue_rows): one for the norm with ONE_ROW (W12,
    group size 128) or BF16_ONE_ROW (a bf16 weight) where the kernels run (a Hopper GPU)."""
    if kind != "norm" or not launch.gluon_routes(_tensor(weight)):
        return 0
    if isinstance(weight, W12Weight):
        return int(ONE_ROW == 1 and weight.group_size == BLOCK // 2)
    return int(BF16_ONE_ROW and weight.dtype == torch.bfloat16)


def bf16_takes_the_norm(weight: W12Weight | torch.Tensor) -> bool:
    """Whether BF16_ONE_ROW's kernel norms in the prologue of one-row multiplies on the device of
    `weight` (so models/fused.handoff_for hands no norm on at one row there)."""
    return BF16_ONE_ROW and launch.gluon_routes(_tensor(weight))


def _tensor(weight: W12Weight | torch.Tensor) -> torch.Tensor:
    return weight.low if isinstance(weight, W12Weight) else weight


def bf16_route(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """Whether BF16_ONE_ROW takes x @ weight on bf16_row_linear: one bf16 row, a bf16 weight TMA
    can read, compiled on a Hopper GPU."""
    if not BF16_ONE_ROW or x.dim() != 2 or x.shape[0] != 1:
        return False
    if x.dtype != torch.bfloat16 or weight.dtype != torch.bfloat16 or weight.shape[1] % 8:
        return False
    aligned = weight.stride(0) % 8 == 0 and weight.data_ptr() % 16 == 0
    return aligned and weight.stride(1) == 1 and launch.gluon_routes(x)


def _plane_descriptors(weight: W12Weight, box_rows: int, swizzle: int = 0) -> tuple:
    """TMA descriptors of the planes: [box_rows, 128] bytes, the low plane's block in two boxes,
    the codes' in one; unswizzled, or (the MMA tiles) with `swizzle` bytes."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    planes, _ = layouts(swizzle)
    low = TensorDescriptor.from_tensor(weight.low, [box_rows, BLOCK // 2], planes)
    codes = TensorDescriptor.from_tensor(weight.codes, [box_rows, BLOCK // 2], planes)
    return low, codes


def _blocks_descriptor(v: torch.Tensor):
    """The TMA descriptor of a row viewed as [Kp / 32, 32] (`_blocks_view`): a block's 8
    slices a box."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    return TensorDescriptor.from_tensor(v, [8, SLICE], layouts()[1])


def layouts(swizzle: int = 0) -> tuple:
    """The shared layouts TMA writes: the planes' bytes (unswizzled, or with `swizzle` bytes: the
    MMA tiles') and x's bf16 (unswizzled)."""
    planes = gl.NVMMASharedLayout(swizzle_byte_width=swizzle, element_bitwidth=8, rank=2)
    return planes, gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=16, rank=2)


def geometry(cfg: dict, k: int, bf16: bool = False, norm: bool = False) -> dict:
    """A tile's sizes for K columns: rows a tile (BN), stages of SB blocks a tile (n_stages),
    x's blocks in shared memory (XB: every stage's, zeros past K) and the scale words' groups
    a slot (GROUPS: a power of 2, at least GROUP_CHUNK), and the shared memory they take
    (bf16: a bf16 weight's ring, no scale words; norm: the norm weight's blocks too)."""
    bn = cfg["ROWS"] * cfg["WARPS"]
    n_stages = triton.cdiv(padded(k) // BLOCK, cfg["SB"])
    xb = n_stages * cfg["SB"]
    groups = max(GROUP_CHUNK, triton.next_power_of_2(2 * xb))
    ring = cfg["STAGES"] * cfg["SB"] * bn * (2 * BLOCK if bf16 else BLOCK + BLOCK // 2)
    meta = 0 if bf16 else meta_slots(cfg) * (groups * bn * 4 + bn * 4)
    wide = 0 if bf16 else cfg["X32"] * xb * BLOCK * 4  # X32: x widened to fp32
    wide += 0 if bf16 or not cfg["MMA"] else xb * BLOCK * 2 + 2 * 4 * 32 * 4  # MMA: pairs, sums
    shared = ring + (2 if norm else 1) * xb * BLOCK * 2 + meta + wide
    return dict(BN=bn, n_stages=n_stages, XB=xb, GROUPS=groups, shared=shared)


def _blocks_view(v: torch.Tensor) -> torch.Tensor:
    """A [1, K] row as [Kp / 32, 32] for TMA's boxes of a block: zero columns to Kp, 16-byte
    aligned (a copy where it is not)."""
    k = v.shape[1]
    kp = padded(k)
    v = v if kp == k else torch.nn.functional.pad(v, (0, kp - k))
    if v.data_ptr() % 16 or not v.is_contiguous():  # TMA reads from 16-byte aligned rows
        v = v.clone(memory_format=torch.contiguous_format)
    return v.view(kp // SLICE, SLICE)


def even_programs(units: int, most: int) -> int:
    """A persistent launch's programs for `units` tiles on at most `most` programs: `most`
    (or `units`, fewer), or with EVEN_PROGRAMS the fewest that keep its waves, each program
    taking the same count of tiles where `units` allows."""
    programs = min(units, most)
    if EVEN_PROGRAMS:
        programs = triton.cdiv(units, triton.cdiv(units, programs))
    return programs


def _launch_plan(what: str, x: torch.Tensor, n: int, k: int, tile: dict | None, swiglu: bool,
                 residual: torch.Tensor | None, bf16: bool,
                 norm_weight: torch.Tensor | None = None) -> dict:  # fmt: skip
    """The checks and host work shared by the W12 and bf16 launchers: the tile (cfg), its
    geometry, the TMA descriptors of x and of the norm weight (x's where there is none) as
    [Kp / 32, 32] (`_blocks_view`), the tile's rows of N, the units and programs, y, the
    residual (or y), the norm prologue's constants (NORM, NW_EARLY) and launch.pdl's answer."""
    cfg = TILE | (tile or {})
    unknown = set(cfg) - set(TILE)
    if unknown:
        raise ValueError(f"{what}: unknown tile keys {sorted(unknown)}")
    if NORM_BOUND and norm_weight is not None:
        cfg["BOUND"] |= 4
    cfg["BOUND"] |= ROW_BOUND
    if not 0 <= cfg["PRE"] <= cfg["STAGES"]:
        raise ValueError(f"{what}: PRE is 0 (every stage) or 1-STAGES, not {cfg['PRE']}")
    if bf16:  # (no meta warp, no MMA)
        cfg["BOUND"] &= ~16
        cfg["MMA"] = 0
    mma_shape = cfg["WARPS"] == 4 and cfg["ROWS"] == 4 and cfg["SB"] == 4 and not cfg["X32"]
    mma_shape = mma_shape and cfg["STAGES"] in (2, 4)
    if cfg["MMA"] not in (0, 1, 2) or (cfg["MMA"] and not mma_shape):
        raise ValueError(f"{what}: MMA is 0, or 1 or 2 with ROWS 4, WARPS 4, SB 4, STAGES 2 or 4 "
                         f"and X32 0: {cfg}")  # fmt: skip
    bound = cfg["BOUND"]
    if bound & ~30 or (bound & 4 and norm_weight is None) or (bound & 16 and not bound & 10):
        raise ValueError(f"{what}: BOUND is a sum of 2, 4 (with a norm), 8 and 16 (with 2 or 8), "
                         f"not {bound}")  # fmt: skip
    if x.shape != (1, k) or x.dtype != torch.bfloat16 or not launch.gluon_device(x):
        raise ValueError(f"{what} wants x [1, {k}] bf16 on CUDA, got {tuple(x.shape)} "
                         f"{x.dtype} on {x.device}")  # fmt: skip
    if swiglu and (n % 2 or residual is not None):
        raise ValueError(f"{what} swiglu wants an even N and no residual")
    if residual is not None and (residual.shape != (1, n) or residual.dtype != torch.bfloat16):
        raise ValueError(f"{what}: residual must be [1, {n}] bf16")
    if norm_weight is not None and (norm_weight.shape != (k,) or norm_weight.dtype != x.dtype):
        raise ValueError(f"{what}: norm_weight must be [{k}] bf16")
    geo = geometry(cfg, k, bf16, norm_weight is not None)
    bn = geo["BN"]
    if cfg["WARPS"] not in (4, 8) or bn > 32 or 32 % bn and bn % 32 or (swiglu and bn < 2):
        raise ValueError(f"{what}: WARPS 4 or 8 and ROWS x WARPS <= 32, got {cfg}")
    if geo["shared"] > SHARED_LIMIT:
        raise ValueError(f"{what}: the tile takes {geo['shared']} bytes of shared memory")
    rows = bn // (2 if swiglu else 1)  # of N a tile covers (SwiGLU: and their ups)
    units = triton.cdiv(n // 2 if swiglu else n, rows)
    programs = even_programs(units, launch._sm_count(x.device.index or 0) * cfg["PERSISTENT"])
    y = torch.empty(1, n // 2 if swiglu else n, device=x.device, dtype=torch.bfloat16)
    res = residual.contiguous() if residual is not None else y
    xd = _blocks_descriptor(_blocks_view(x))
    nwd = xd if norm_weight is None else _blocks_descriptor(_blocks_view(norm_weight[None, :]))
    norm = dict(NORM=norm_weight is not None,
                NW_EARLY=bool(NORM_WEIGHT_EARLY) and norm_weight is not None)  # fmt: skip
    return dict(cfg=cfg, geo=geo, xd=xd, nwd=nwd, rows=rows, units=units, programs=programs,
                y=y, res=res, norm=norm,
                launched=launch.pdl(x, multiply=True, programs=programs))  # fmt: skip


def w12_row_linear(
    x: torch.Tensor,
    weight: W12Weight,
    tile: dict | None = None,
    *,
    swiglu: bool = False,
    residual: torch.Tensor | None = None,
    norm_weight: torch.Tensor | None = None,
    eps: float = 1e-6,
) -> torch.Tensor:
    """x [1, K] bf16 (CUDA, sm_90) @ weight.T -> [1, N] bf16 on the TMA-fed one-row kernel.
    tile: TILE's keys to change. swiglu: weight is [gate | up] (N even), y = silu(gate) * up
    [1, N / 2]. residual [1, N]: y = residual + x @ weight.T. norm_weight [K]: the input is
    RMSNorm(x) * norm_weight (w12_linear's contract, its norm prologue)."""
    k, n = weight.columns, weight.shape[0]
    if weight.group_size != BLOCK // 2:
        raise ValueError(f"w12_row_linear wants group size {BLOCK // 2}, got {weight.group_size}")
    if weight.low.device != x.device:
        raise ValueError(f"w12_row_linear: weight on {weight.low.device}, x on {x.device}")
    plan = _launch_plan("w12_row_linear", x, n, k, tile, swiglu, residual, False, norm_weight)
    geo, launched = plan["geo"], plan["launched"]
    swizzle = SWIZZLE.value if plan["cfg"]["MMA"] else 0
    low, codes = _plane_descriptors(weight, plan["rows"], swizzle)
    nw = x if norm_weight is None else norm_weight.contiguous()  # (x: unread without a norm)
    _w12_row_kernel[(plan["programs"],)](
        low, codes, plan["xd"], plan["nwd"], x, nw, weight.base, weight.row_ptr, weight.esc_col,
        weight.esc_bits, plan["y"], plan["res"], n, k, plan["units"], plan["rows"],
        geo["n_stages"], weight.base.stride(0), weight.base.shape[1], eps,
        **kernel_constants(plan["cfg"], geo), **plan["norm"], SWIGLU=int(swiglu),
        RESIDUAL=residual is not None, PDL=launched["PDL"], launch_pdl=launched["launch_pdl"],
        **trace.arguments(x, "w12_row", plan["programs"], bytes=weight.nbytes_bound(), rows=1,
                          n=n, k=k),
    )  # fmt: skip
    return plan["y"]


def bf16_row_linear(
    x: torch.Tensor,
    weight: torch.Tensor,
    tile: dict | None = None,
    *,
    swiglu: bool = False,
    residual: torch.Tensor | None = None,
    norm_weight: torch.Tensor | None = None,
    eps: float = 1e-6,
) -> torch.Tensor:
    """The same kernel's ring, norm prologue and epilogues for a bf16 weight [N, K] (K a
    multiple of 8): x [1, K] @ weight.T (skinny_linear's contract, its plain, norm prologue,
    SwiGLU and residual forms). bench/w12_join.py --row times it beside skinny_linear; the
    engine takes it with BF16_ONE_ROW."""
    n, k = weight.shape
    if weight.dtype != torch.bfloat16 or weight.device != x.device or weight.stride(1) != 1:
        raise ValueError(f"bf16_row_linear wants a bf16 weight on {x.device}, unit stride")
    if k % 8 or weight.stride(0) % 8 or weight.data_ptr() % 16:
        raise ValueError("bf16_row_linear wants K and the row stride multiples of 8 (TMA)")
    plan = _launch_plan("bf16_row_linear", x, n, k, tile, swiglu, residual, True, norm_weight)
    geo, launched = plan["geo"], plan["launched"]
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    wd = TensorDescriptor.from_tensor(weight, [plan["rows"], 64], layouts()[1])
    _bf16_row_kernel[(plan["programs"],)](
        wd, plan["xd"], plan["nwd"], plan["y"], plan["res"], n, k, plan["units"], plan["rows"],
        geo["n_stages"], eps, **kernel_constants(plan["cfg"], geo, bf16=True),
        PDL=launched["PDL"], **plan["norm"], SWIGLU=int(swiglu),
        RESIDUAL=residual is not None, launch_pdl=launched["launch_pdl"],
        **trace.arguments(x, "bf16_row", plan["programs"], bytes=weight.nbytes, rows=1, n=n, k=k),
    )  # fmt: skip
    return plan["y"]


def kernel_constants(cfg: dict, geo: dict, bf16: bool = False) -> dict:
    """The kernel's constexprs (but PDL's, NORM and the epilogue's) from a tile and its geometry
    (bf16: _bf16_row_kernel's, which has no meta warp)."""
    if cfg["FENCE"] not in (-1, 0, 1):
        raise ValueError(f"w12_row: FENCE is -1, 0 or 1, not {cfg['FENCE']}")
    fence = int(bf16) if cfg["FENCE"] == -1 else cfg["FENCE"]
    out = dict(ROWS=cfg["ROWS"], SB=cfg["SB"], STAGES=cfg["STAGES"], XB=geo["XB"],
               BOUND=cfg["BOUND"], FENCE=fence, num_warps=cfg["WARPS"],
               PRE=cfg["PRE"])  # fmt: skip
    most = cfg["MAXNREG"] if cfg["MAXNREG"] != -1 else (BF16_MAXNREG if bf16 else MAXNREG)
    if not _MAXNREG_RULE[0](most):
        raise ValueError(f"w12_row: MAXNREG is -1, {_MAXNREG_RULE[1]}, not {most}")
    if most:
        out["maxnreg"] = most
    early = EARLY_ESCAPES if cfg["ESC_EARLY"] == -1 else cfg["ESC_EARLY"]
    return out if bf16 else out | dict(GROUPS=geo["GROUPS"], ESC_BATCH=cfg["ESC_BATCH"],
                                       X32=cfg["X32"], ESC_EARLY=int(early),
                                       SLOTS=meta_slots(cfg), MMA=cfg["MMA"])  # fmt: skip


def meta_slots(cfg: dict) -> int:
    """A W12 tile's meta-warp slots: its SLOTS, or with -1 the switch META_SLOTS's."""
    slots = META_SLOTS if cfg["SLOTS"] == -1 else cfg["SLOTS"]
    if not SWITCH_RULES["META_SLOTS"][0](slots):
        raise ValueError(f"w12_row: SLOTS is -1 or {SWITCH_RULES['META_SLOTS'][1]}, not {slots}")
    return int(slots)


def compile_sm90(tile: dict | None = None, k: int = 4096, swiglu: bool = False,
                 residual: bool = False, pdl: bool = False, bf16: bool = False,
                 norm: bool = False, traced: bool = False, nw_early: bool = False):  # fmt: skip
    """The kernel compiled for sm_90a without a GPU (kernels/aot.compile_kernel; aot.usage reads
    its registers and shared memory), for K columns; pdl: with programmatic dependent launch's
    waits; bf16: bf16_row_linear's kernel; norm: with the norm prologue (NORM; nw_early: its
    weight copied first, NW_EARLY); traced: with the kernel timeline's marks (TRACE 1)."""
    from specpilot.kernels import aot

    cfg = TILE | (tile or {})
    geo = geometry(cfg, k, bf16)
    rows = geo["BN"] // (2 if swiglu else 1)
    planes, x_layout = layouts(SWIZZLE.value if cfg["MMA"] and not bf16 else 0)
    x_desc = f"tensordesc<bf16[8, {SLICE}],{x_layout!r}>"
    epilogue = dict(SWIGLU=int(swiglu), RESIDUAL=residual, PDL=pdl)
    consts = kernel_constants(cfg, geo, bf16) | epilogue | dict(NORM=norm, TRACE=int(traced),
                                                                 NW_EARLY=nw_early)  # fmt: skip
    marks = dict(trace_ptr="*i64", clock_ptr="*i64") if traced else {}
    if bf16:
        types = dict(w_desc=f"tensordesc<bf16[{rows}, 64],{x_layout!r}>", x_desc=x_desc,
                     nw_desc=x_desc, y_ptr="*bf16", res_ptr="*bf16", eps="fp32")  # fmt: skip
        return aot.compile_kernel(_bf16_row_kernel, types | marks, consts)
    types = marks | dict(
        low_desc=f"tensordesc<u8[{rows}, {BLOCK // 2}],{planes!r}>",
        code_desc=f"tensordesc<u8[{rows}, {BLOCK // 2}],{planes!r}>", x_desc=x_desc,
        nw_desc=x_desc, x_ptr="*bf16", nw_ptr="*bf16", base_ptr="*u8", row_ptr="*i32",
        esc_col_ptr="*i32", esc_bits_ptr="*i16", y_ptr="*bf16", res_ptr="*bf16", eps="fp32",
    )  # fmt: skip
    return aot.compile_kernel(_w12_row_kernel, types, consts)


def row_words(weight: W12Weight) -> torch.Tensor:
    """The bit work of `_pair_sums` in PyTorch (int32 words, any device): every block's pairs
    as `_high_bytes`, `_bf16_pair` and `_times` make them, put back in natural column order:
    [N, Kp] bf16, every weight's own bits where it is not escaped (escaped ones +0)."""
    n, kp = weight.low.shape
    low = weight.low.view(torch.int32).view(n, kp // BLOCK, 2, SLICE)  # [N, block, half, i]
    codes = weight.codes.view(torch.int32).view(n, kp // BLOCK, SLICE)
    base = torch.nn.functional.pad(weight.base, (0, 2 * (kp // BLOCK) - weight.base.shape[1]))
    base = base.view(n, kp // BLOCK, 2).to(torch.int32)  # [N, block, group]
    out = torch.empty(n, kp // BLOCK, 8, SLICE, dtype=torch.bfloat16, device=weight.low.device)
    for h in range(2):
        nib = (codes >> (4 * h)) & 0x0F0F0F0F
        high = nib + (nib & 0x08080808) * 15
        scale = (2 * base[:, :, h, None] + 127) << 7  # bf16 2^(2b), one half of the word
        for q in range(2):
            pair = prmt(low[:, :, h], high, (SELECT_Q0 if q == 0 else SELECT_Q2).value)
            halves = pair.view(torch.bfloat16).view(n, kp // BLOCK, SLICE, 2)
            exact = halves * scale.to(torch.int16).view(torch.bfloat16)[..., None]  # exact
            out[:, :, 4 * h + 2 * q] = exact[..., 0]
            out[:, :, 4 * h + 2 * q + 1] = exact[..., 1]
    return out.view(n, kp)
