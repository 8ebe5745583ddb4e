"""W12 multiplies of 1-16 rows on wgmma, the weights decoded straight into its register operand,
fed by a TMA ring (Gluon, sm_90): the verify forwards' W12 multiplies on Hopper GPUs since run
314 (VERIFY; runs 294-317).

Why: issue 7's speculative target needs the verify blocks' (16-row) W12 multiplies near their
12-bit floor. kernels/w12_linear.py's tensor-core tiles hold their loads in registers (3
programs of 4 warps an SM: too few bytes in flight, docs/LOG.md runs 263-277); kernels/w12_ws.py
decodes into shared memory for a wgmma that reads it there (a second pass and a hand-off
between warps, runs 279-285). Here, as in kernels/w12_row.py, the bytes in flight sit in
shared memory (TMA) and the warps that multiply decode each block's words straight into
wgmma's A operand in registers (bench/wgmma_ra_probe.py: ~3 SASS instructions a weight, no
data moved between threads):
- a loader warp copies each block of a tile's 64 weight rows (its two W12 planes) and the input
  block (x in kernels/w12_ws.pair_order, 4 boxes [16 tokens, 64 columns] bf16) by TMA into a
  ring of STAGES stages;
- a meta warp writes each unit's scale words (its rows' 2^(2b) as bf16x2) and its escapes'
  sums [64, 16] (read from the pair-ordered input) into one of two slots;
- one warpgroup decodes each block's 16 k-chunks (`_operand`): the thread that owns k pairs
  l % 4 and + 4 of rows r and r + 8 in wgmma's A fragment loads, for each row, the low and code
  words of positions 8 c + l % 4 and + 4 of a half block, whose pairs of slices (4 h + 2 q, + 1)
  are those k pairs of chunk c of pair-order slot 2 h + q (so the operand is pair order's K
  order), made exact by `mul.bf16x2` with the scale word; 16 wgmma a block (m64n16k16, A in
  registers, B the input chunk in shared memory, K-major), then the escapes and the store as
  w12_ws's (`_store`: a K split's fp32 partials, the residual, SwiGLU, y in pair order).
Work: units of 64 rows (SwiGLU: 32 gates and their ups) and at most MAX_UNIT_BLOCKS blocks of
K (a K split where the tiles alone are too few for the SMs or K is long), persistent.

The input's K order is w12_ws's pair order, which the engine's producers already write
(rmsnorm(pair=True), a SwiGLU epilogue with y_order "pair"); given a natural x, the host
permutes it. Runs 302-310: wrong on the GPU where N is not a multiple of 16 (LLVM's NVPTX
backend miscompiles the meta warp's row offsets in the variant Triton compiles without a
16-divisible N: w12_ws.ROW_MULTIPLE), so the launcher pads such N; with its planes unswizzled it
was slower than the default inside the verify graph (run 302, H100: verify 6.65 against 5.49
ms), swizzled faster (run 310: 5.25 against 5.38; run 314: 5.22 against 5.37, end to end spec
1.073x over bf16 against w12_linear's 1.050x). The engine takes it with VERIFY (on, where a
Hopper GPU runs it): 2-16-row forwards' W12
gate|up and down, and the W12 multiplies after a norm (q|k|v, an exact LM head), verify and
draft forwards alike. tests/test_w12_tc.py (a Hopper GPU, and kernels/emulate.py on the CPU),
tests/test_kernels.py (the fused verify forward) and bench/w12_join.py --tc.
"""

from __future__ import annotations

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import mma_v2
from triton.experimental.gluon.language.nvidia.hopper import (
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from specpilot.formats.w12 import BLOCK, W12Weight
from specpilot.kernels import launch, trace
from specpilot.kernels.common import pair_position, zeroed_counters
from specpilot.kernels.elementwise import NormAfter
from specpilot.kernels.w12_linear import sum_splits
from specpilot.kernels.w12_row import _barriers, _bf16_pair, _high_bytes, _times
from specpilot.kernels.w12_ws import (
    ROW_MULTIPLE,
    _copy_planes,
    _early_inputs,
    _escape_sums,
    _escape_table,
    _escapes,
    _grid_wait,
    _store,
    _tile_rows,
    _trace_mark,
    _unit,
    check_pair_call,
    off_row_multiple,
    pair_chain,
    pair_order,
)

TILE = dict(STAGES=4, SPLIT_K=-1, PERSISTENT=1, ESC_BATCH=4, SWIZZLE=-1, MMA=-1, BOUND=0, PRE=-1,
            MAX_BLOCKS=-1, ESC_EARLY=-1, SUM_IN=-1)  # fmt: skip
# SWIZZLE (bytes, 0 or 128; -1: the switch PLANE_SWIZZLE's): the planes' rows in shared memory
# as TMA writes them. Unswizzled, the multiplying warps' operand loads (ldmatrix: 8 rows of 16
# bytes at once, rows 128 bytes apart) put all 8 rows in one group of 4 banks: 8-way conflicts
# (Triton's count: aot.bank_conflicts, tests/test_w12_tc.py), 32 passes of the shared-memory
# pipe an ldmatrix.x4 where 4 would do. A warp issues 12 a block: ~1,500 cycles an SM a
# 256-column block, against ~1,900 for the block's bytes at the H100's bandwidth, before TMA's
# writes and wgmma's reads. 128: TMA's 128-byte swizzle (a row's 16-byte chunks XOR its row mod
# 8), read back through the same layout: one pass a matrix. Run 309 (H100, 16 rows): 18-33%
# faster than unswizzled (q|k|v unsplit 18.22 us against 27.12); on since run 314 (VERIFY's).
PLANE_SWIZZLE = 128
# MMA (-1: the switch MMA_VERSION's): 3, each 16-k chunk one wgmma of the warpgroup (m64n16k16,
# A in registers: the 4 warps meet at every chunk, WARPGROUP.ARRIVE, so the slowest warp's
# operand sets the pace); 2, each warp's own mma.sync (m16n8k16, twice for 16 tokens) on its 16
# rows, its A the same registers (the fragments own the same rows and k), its B the input chunk
# read from shared memory by ldmatrix: no warp waits on another within a block. Runs 309-310:
# no faster than 3, and wrong with escapes at some shapes (rows 32-47 of a unit): off.
MMA_VERSION = 3
# SPLIT_K (-1: the switch UNIT_SPLIT's; 0: split_plan's choice; n: n splits, or the fewest that
# keep units within MAX_UNIT_BLOCKS). Run 309 (H100, swizzled planes, 16 rows): unsplit q|k|v
# 18.22 us against 24.14 with 4 splits, o level (1 or 2), down 36.25 with 3 against 35.10 with 4.
# Run 326 (the W12 verify graph, Qwen3-8B, with the hand-off): 1 (o unsplit, 64 units on 64
# SMs; the down keeps 2) 4.954 ms against 4.839 / 4.840: o 16.2 us exit to exit and a norm
# kernel after it, against 10.7 and its split sum's 5.4.
UNIT_SPLIT = 0
# split_plan's price of a unit beyond its blocks, in blocks' time (its ring's fill and drain, its
# partial sums' store): fitted to run 309's q|k|v (16 blocks unsplit, one wave of 96 units:
# 18.22 us; 4 a unit, three waves of 384: 24.14), it picks down's 4 splits (3: 2 waves of 21.5;
# 4: 2 of 17.5; 6: 3 of 13.5), o's 2 and gate|up's 1 (run 309's fastest each). The fill rule
# before it (units / waves near 1) took q|k|v's 4 splits.
UNIT_COST_BLOCKS = 5.5
# BOUND (bench/w12_join.py --tc; wrong products, a bound): 1 takes the plane reads and the decode
# out (A all zeros), 2 the multiply (the decoded words folded into one per row, kept alive), 3
# both (the ring's hand-offs with the input's reads by wgmma gone too), 8 the loader's copies
# alone (each stage reissued once its copies landed, no consumer waited on): which of the loads,
# the decode and the multiply holds the kernel.
# On since run 314 (H100, PLANE_SWIZZLE 128, split_plan's splits: the W12 verify graph 5.219
# against 5.374 ms back to back; end to end at 1k, 4 paired rounds with token forcing, spec
# 1.073x [1.071-1.075] over bf16 against w12_linear's 1.050x [1.047-1.054], the control 1.000x
# [0.999-1.001]; run 312 had 1.058x against 1.040x, within its spread): the fused verify forward's
# W12 gate|up (SwiGLU, y in pair order) and down (the residual) on this
# kernel, their input written in pair order by the rmsnorm before them (models/fused.py,
# w12_ws.pair_chain; before w12_ws.VERIFY where both are on), and every other 2-16-row W12
# multiply whose input is a norm's output (q|k|v, a W12 LM head: `pair_input`), the norm then
# written in pair order.
VERIFY = True
# The same for one-row forwards (off, unmeasured: row287.sh times the kernel at one row beside
# kernels/w12_row.py): gate|up and down, the multiplies after a norm and o on this kernel, their
# inputs in pair order. (With w12_row.ONE_ROW on too, that kernel takes q|k|v and a W12 head,
# their norm in its prologue; gate|up, down and o stay here.)
ONE_ROW = False
# PRE (-1: the switch PRE_STAGES's; 0: STAGES): under PDL, the stages whose planes (constants)
# the loader asks for before its wait for the kernel before; their inputs, and every later
# stage, after it. With launch.WIDE_EARLY a launch is resident while the short kernels before
# it (norm, split sum) still wait or run, and its first stages' loads queue ahead of theirs
# (run 319, H100: the norm 1.9 -> 3.7 us exit to exit, o's split sum 2.8 -> 5.7, while q|k|v
# took 17.7 -> 13.9 and gate|up 57.1 -> 52.5): fewer stages ahead, less queued before them?
# Run 320 (the W12 verify graph, back to back): PRE 1 5.000 ms, 2 4.927 against all 4's 4.877 /
# 4.875: the norm and split sum gain less than the multiplies lose. 0 (all) stays. Run 327 (with
# models/fused.SPLIT_SUM_HAND, the split sums the only kernels between): PRE 2 4.805 ms, 3
# 4.732, against 4.725 / 4.726 (the split sums 5.2 -> 4.1 us at 2, the multiplies +0.6-1.4).
PRE_STAGES = 0
# ESC_EARLY (-1: the switch EARLY_ESCAPES's; with ESC_BATCH 4): the meta warp reads each unit's
# escape table (the rows' lists and their first four entries: constants) before PDL's wait and
# only the inputs at those columns after it, so that under launch.WIDE_EARLY a program's first
# escape sums need one round of loads after the kernel before has finished instead of three.
# Off until measured (run 318, H100: o 13.78 us standalone with the escapes emptied against
# 15.48, the down 33.47 against 34.11).
EARLY_ESCAPES = 0
# SUM_IN (-1: the switch SUM_IN_KERNEL's): a K split's tile added up by its last unit (a counter a
# tile: every unit stores its fp32 slice, fences and counts; the one that counts last reads
# the slices back through L2 in split order, the bits of kernels/w12_linear.sum_splits, and
# stores y and, where the next norm is handed on, u and the tile's squares), instead of a
# split-sum launch after the multiply. Runs 325-327 (H100, with models/fused.SPLIT_SUM_HAND):
# that launch took 4.7-5.5 us exit to exit, 72 a 16-row verify (o's and the down's); the same
# in w12_linear (run 275) was level when the launch took 1.7. Run 328 (H100, the W12 verify graph
# back to back): 4.753 ms against 4.720 / 4.722: the launches went (5.1 and 4.3 us exit to exit)
# but o took 10.75 -> 14.91 us and the down 26.08 -> 31.06: each tile's last unit reads its
# slices back and stores after all the others, the kernel's tail ~4-5 us longer. Run 329 (every
# unit reading the residual and the norm weight before its count, `epilogue_inputs`): 4.757 ms
# against 4.675 / 4.675 (the split sums now 2.9 / 2.75 us with SPLIT_SUM_EARLY_WEIGHT; o 10.58
# -> 14.96, the down 25.87 -> 30.43): the loads were not the cost; every unit's fence and
# count at its end, and the last one's slices and stores, are. Off.
SUM_IN_KERNEL = 0
# HANDED_RSTD_LATE: a multiply on a handed norm's u (HAND_IN) asks for the squares right after
# PDL's wait, as now, but sums them into 1 / RMS at each unit's end, where it scales the sums,
# so that their loads are in flight over the first unit's stages instead of holding the
# multiplying warps before their first stage (the Triton kernels' order: common.handed_rstd).
# Why: run 349's verify timeline (H100) has gate|up and q|k|v, the multiplies on a handed norm,
# 2.5-3.2 / 1.9-2.9 us from the kernel before's exit to their first stage, the down 1.4-2.3.
# The same bits either way (tests/test_w12_tc.py). Run 352 (H100, the W12 verify graph back to
# back, Qwen3-8B): 4.619 / 4.626 ms against base's 4.619 / 4.622: no gain (gate|up 56.86 / 56.64
# us exit to exit against 56.34 / 56.32). Off; w12_speed arm rstd_late.
HANDED_RSTD_LATE = 0
SWITCH_RULES = {
    "SUM_IN_KERNEL": (lambda n: n in (0, 1), "0 or 1"),
    "MAX_UNIT_BLOCKS": (lambda n: n in (4, 8, 16, 32), "4, 8, 16 or 32"),
    "PRE_STAGES": (lambda n: 0 <= n <= 8, "0 (all) to 8"),
    "EARLY_ESCAPES": (lambda n: n in (0, 1), "0 or 1"),
    "HANDED_RSTD_LATE": (lambda n: n in (0, 1), "0 or 1"),
}
ROWS = 64  # weight rows a unit: one warpgroup's wgmma M
# MAX_BLOCKS (-1: the switch MAX_UNIT_BLOCKS's): blocks of K a unit at most; each slot of its
# scale words holds 2 groups a block ([2 x MAX_BLOCKS, 64] int32: 512 bytes a block, 16 kB for
# two slots at 16). With 16 the 16-row down (K 12288: 48 blocks) splits at least 3 ways, and
# split_plan takes 4 (256 units, two waves on 132 SMs); at 32, 2 (128 units of 24 blocks, one
# wave: split_plan's price 29.5 blocks against 35) and a split sum of 2 slices. 4, 8, 16 or 32
# (the meta warp views the scale words as [2, 2 x MAX_BLOCKS, 64]: powers of 2; 32 kB at 32).
# Run 322 (H100, the W12 verify graph, back to back): 32 Qwen3-8B 4.824 ms against 4.833 /
# 4.825 at 16 (the down 28.0 -> 26.0 us and its split sum 3.4 -> 1.7 exit to exit, the next
# norm 3.5 -> 4.3), Llama-3.1-8B (down K 14336: 56 blocks, 2 ways of 28) 4.757 against 4.781 /
# 4.776. 32 since run 322.
MAX_UNIT_BLOCKS = 32
WBLOCK = gl.constexpr(BLOCK)
RW = gl.constexpr(ROWS)  # the same, inside kernels
# the operands' words: [64 rows, 8 positions] int32, thread l of warp w holding rows 16 w + l // 4
# and + 8 at positions l % 4 and + 4 (wgmma's bf16 A fragment ownership: k pairs l % 4 and + 4,
# a position's pair of slices being a pair of k)
WORDS = gl.constexpr(gl.DistributedLinearLayout(
    reg_bases=[[0, 4], [8, 0]], lane_bases=[[0, 1], [0, 2], [1, 0], [2, 0], [4, 0]],
    warp_bases=[[16, 0], [32, 0]], block_bases=[], shape=[64, 8],
))  # fmt: skip
ACC = gl.constexpr(gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                             instr_shape=[16, 16, 16]))  # fmt: skip
A_OPERAND = gl.constexpr(gl.DotOperandLayout(operand_index=0, parent=ACC.value, k_width=2))
# MMA 2: mma.sync's accumulator (a warp's 16 rows, 16 tokens as two n8 halves) and operands
ACC2 = gl.constexpr(gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[4, 1],
                                              instr_shape=[16, 8]))  # fmt: skip
A2_OPERAND = gl.constexpr(gl.DotOperandLayout(operand_index=0, parent=ACC2.value, k_width=2))
B2_OPERAND = gl.constexpr(gl.DotOperandLayout(operand_index=1, parent=ACC2.value, k_width=2))


@gluon.jit
def _halves(pair):
    """A bf16x2 word's two halves as bf16 (low first), no arithmetic."""
    lo, hi = gl.inline_asm_elementwise(
        "mov.b32 {$0, $1}, $2;", "=h,=h,r", [pair], dtype=(gl.int16, gl.int16), is_pure=True,
        pack=1,
    )  # fmt: skip
    return lo.to(gl.bfloat16, bitcast=True), hi.to(gl.bfloat16, bitcast=True)


@gluon.jit
def _operand(low, high, scale, Q: gl.constexpr, MMA: gl.constexpr = 3):
    """A 16-k chunk's A operand [64, 16] bf16 from [64, 8] words (WORDS; high: the code words'
    high bytes of the half): k = 2 i + s is slice Q + s of the half at position i (i < 8 of the
    chunk), made exact by the rows' scale words: w12_ws.pair_order's order. MMA 2: as
    mma.sync's A (the same registers)."""
    lo, hi = _halves(_times(_bf16_pair(low, high, Q), scale))
    a = gl.reshape(gl.join(lo, hi), [64, 16])  # k = 2 i + half
    return gl.convert_layout(a, A2_OPERAND if MMA == 2 else A_OPERAND, assert_trivial=True)


@gluon.jit
def _x_block(x_desc, x_buf, ready, s, col, BOUND: gl.constexpr = 0):
    """The input block x^T [256, 16] of columns col.. into stage s (on its barrier in `ready`,
    which expects the planes' bytes too): its 4 pair-order slots of 64 columns. (BOUND: none
    here; w12_ws._early_inputs passes it.)"""
    XBOX: gl.constexpr = x_buf.type.shape[2]
    for p in gl.static_range(WBLOCK // XBOX):
        tma.async_copy_global_to_shared(x_desc, [0, col + XBOX * p], ready.index(s),
                                        x_buf.index(4 * s + p))  # fmt: skip


@gluon.jit
def _loader(descs, bufs, bars, work, SWIGLU: gl.constexpr, PDL: gl.constexpr,
            BOUND: gl.constexpr = 0, PRE: gl.constexpr = 0):  # fmt: skip
    """Each unit's blocks: the tile's two planes (the low plane's halves, the codes) and the
    input block x^T [256, 16], into the ring. PDL: the first PRE stages' planes (constants;
    PRE 0: STAGES) before the wait for the kernel before, their input after it
    (w12_ws._early_inputs)."""
    low_desc, code_desc, x_desc = descs
    low_buf, code_buf, x_buf = bufs
    ready, empty = bars
    STAGES: gl.constexpr = code_buf.type.shape[0]
    AHEAD: gl.constexpr = STAGES if PRE == 0 or PRE > STAGES else PRE  # planes before the wait
    nbytes: gl.constexpr = RW * (WBLOCK + WBLOCK // 2) + WBLOCK * 16 * 2
    UNIT: gl.constexpr = RW // (1 + SWIGLU)  # rows of N a unit
    c = 0
    for u in range(gl.program_id(0), work[0], gl.num_programs(0)):
        row0, k_block0, n_blocks, _ = _unit(u, work, UNIT)
        for i in range(n_blocks):
            s = c % STAGES
            if PDL and c == AHEAD:  # the stages asked for ahead: their inputs (AHEAD <= STAGES:
                _early_inputs(_x_block, x_desc, x_buf, ready, work, AHEAD, UNIT, 0)  # none reused)
            if (BOUND & 8) != 0:  # the copies alone: a stage's copies landed frees it
                mbarrier.wait(ready.index(s), ((c // STAGES) & 1) ^ 1, pred=c >= STAGES)
            else:
                mbarrier.wait(empty.index(s), ((c // STAGES) & 1) ^ 1)
            bar = ready.index(s)
            mbarrier.expect(bar, nbytes)
            col = (k_block0 + i) * WBLOCK
            _copy_planes((low_desc, code_desc), (low_buf, code_buf), s, row0, col, bar, work[4],
                         SWIGLU)  # fmt: skip
            if not PDL or c >= AHEAD:
                _x_block(x_desc, x_buf, ready, s, col)
            c += 1
    if PDL and c <= AHEAD:  # a program of at most AHEAD blocks: the inputs after all of them
        _early_inputs(_x_block, x_desc, x_buf, ready, work, c, UNIT, 0)
    if (BOUND & 8) != 0:  # the last copies landed before the program ends
        for s in gl.static_range(STAGES):
            uses = (c - s + STAGES - 1) // STAGES
            mbarrier.wait(ready.index(s), (uses - 1) & 1, pred=uses > 0)


@gluon.jit
def _meta(bufs, bars, work, n, weights, escapes, x_ptr, stride_x, m, SWIGLU: gl.constexpr,
          ESC_BATCH: gl.constexpr, PDL: gl.constexpr, ESC_EARLY: gl.constexpr = False):  # fmt: skip
    """Each unit's scale words (group 2 k_block0 + j of every row, j < 32: bf16x2 2^(2b); 2^0 past
    the unit's groups) and its rows' escape sums [64, 16] over its columns, into slot unit % 2.
    ESC_EARLY (with ESC_BATCH 4): the escape table's loads (constants) before PDL's wait, the
    inputs' after it."""
    scale_buf, esc_buf = bufs
    scale_ready, esc_ready, meta_empty = bars
    base_ptr, base_stride, groups = weights
    GROUPS: gl.constexpr = scale_buf.type.shape[0] // 2
    # the scale words ([2 x GROUPS, 64]: a group's row as the multiplier reads it) as [slot,
    # group, row]
    slots = scale_buf._reinterpret(gl.int32, [2, GROUPS, RW],
                                   gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))  # fmt: skip
    grid: gl.constexpr = gl.BlockedLayout([1, 2], [8, 4], [1, 1], [1, 0])  # [8 groups, 64 rows]
    sums: gl.constexpr = gl.BlockedLayout([2, 16], [32, 1], [1, 1], [1, 0])  # [64, 16]
    j = 0
    for u in range(gl.program_id(0), work[0], gl.num_programs(0)):
        slot = j % 2
        mbarrier.wait(meta_empty.index(slot), ((j // 2) & 1) ^ 1)
        row0, k_block0, n_blocks, _ = _unit(u, work, RW // (1 + SWIGLU))
        rows, in_rows = _tile_rows(row0, work, n, RW, SWIGLU, gl.SliceLayout(0, grid))
        base_rows = base_ptr + rows.to(gl.int64) * base_stride + 2 * k_block0
        for ch in gl.static_range(GROUPS // 8):  # 8 groups at a time (a pointer an element)
            g = 8 * ch + gl.arange(0, 8, layout=gl.SliceLayout(1, grid))
            live = (g < 2 * n_blocks)[:, None] & (2 * k_block0 + g < groups)[:, None]
            b = gl.load(base_rows[None, :] + g[:, None], mask=live & in_rows[None, :], other=0)
            v = (2 * b.to(gl.int32) + 127) << 7  # bf16 2^(2b)
            slots.index(slot).slice(8 * ch, 8).store(v | (v << 16))
        mbarrier.arrive(scale_ready.index(slot), count=1)
        rows, in_rows = _tile_rows(row0, work, n, RW, SWIGLU, gl.SliceLayout(1, sums))
        col0, col1 = k_block0 * WBLOCK, (k_block0 + n_blocks) * WBLOCK
        zero = gl.zeros([RW, 16], gl.float32, sums)
        if ESC_EARLY and ESC_BATCH == 4:
            table = _escape_table(rows, in_rows, escapes, col0, col1)
            _grid_wait(PDL)  # the escapes read x
            esc = _escape_sums(zero, table, escapes, x_ptr, stride_x, m, col0, col1)
        else:
            _grid_wait(PDL)  # the escapes read x
            esc = _escapes(zero, rows, in_rows, escapes, x_ptr, stride_x, m, col0, col1,
                           ESC_BATCH)  # fmt: skip
        esc_buf.index(slot).store(esc)
        mbarrier.arrive(esc_ready.index(slot), count=1)
        j += 1


@gluon.jit
def _block_products(acc, low_buf, code_buf, x_buf, scale_buf, s, g0, MMA: gl.constexpr = 3,
                    BOUND: gl.constexpr = 0):  # fmt: skip
    """acc plus one block's products (ring stage s, scale words g0 and g0 + 1): 16 wgmma, A
    decoded from the planes' words (`_operand`: positions 8 c .. 8 c + 7 of half h give the
    chunks c of pair-order slots 2 h and 2 h + 1), B the input's chunk of 16 pair-order columns
    ([16 tokens, 16 k] in shared memory, transposed); waited for. The planes' words are read
    through the swizzle TMA wrote them with (SWIZZLE). MMA 2: each warp's mma.sync instead, B
    read into registers from the same chunk. BOUND 1: A all zeros, no plane read; 2: no
    multiply, the decoded words xor-folded into one a row, which adds 1.0 to its row where it
    is exactly 1 and 0.0 elsewhere (so that the decode is not dead code)."""
    planes: gl.constexpr = gl.NVMMASharedLayout(
        swizzle_byte_width=code_buf.type.layout.swizzle_byte_width, element_bitwidth=32, rank=2
    )
    zero = gl.zeros([RW, 8], gl.int32, WORDS)
    kept = zero  # BOUND 2: the decoded words, folded
    code_words = code_buf.index(s)._reinterpret(gl.int32, [RW, 32], planes)
    for h in gl.static_range(2):
        scale = zero + scale_buf.index(g0 + h).load(gl.SliceLayout(1, WORDS))[:, None]
        low_words = low_buf.index(2 * s + h)._reinterpret(gl.int32, [RW, 32], planes)
        for c in gl.static_range(4):  # positions 8 c .. 8 c + 7
            if (BOUND & 1) == 0:
                low = low_words.slice(8 * c, 8, dim=1).load(WORDS)
                high = _high_bytes(code_words.slice(8 * c, 8, dim=1).load(WORDS), h)
            for q in gl.static_range(2):  # slices 4 h + 2 q, + 1: pair-order slot 2 h + q
                if (BOUND & 1) != 0:
                    a = gl.zeros([RW, 16], gl.bfloat16, A2_OPERAND if MMA == 2 else A_OPERAND)
                elif (BOUND & 2) != 0:
                    kept = kept ^ _times(_bf16_pair(low, high, 2 * q), scale)
                else:
                    a = _operand(low, high, scale, 2 * q, MMA)
                if (BOUND & 2) == 0:  # (BOUND 2: no multiply)
                    b = x_buf.index(4 * s + 2 * h + q).slice(16 * c, 16, dim=1).permute((1, 0))
                    if MMA == 2:
                        acc = mma_v2(a, b.load(B2_OPERAND), acc)
                    else:
                        acc = warpgroup_mma(a, b, acc, is_async=True)
    if (BOUND & 2) != 0:
        if (BOUND & 1) == 0:  # one word a row, as acc's rows: 0.0 unless all fold to 1
            folded = gl.convert_layout(gl.xor_sum(kept, axis=1), gl.SliceLayout(1, acc.type.layout))
            acc = acc + gl.where(folded == 1, 1.0, 0.0)[:, None]
        return acc
    if MMA == 2:
        return acc
    return warpgroup_mma_wait(num_outstanding=0, deps=[acc])


@gluon.jit
def _handed_squares(hand, m, PDL: gl.constexpr, SLOTS: gl.constexpr):
    """The squares a split sum handed on, [16 tokens, SLOTS] (hand: their pointer, row stride,
    slots and the norm's eps), asked for after PDL's wait."""
    sq_ptr, stride_sq, slots, eps = hand
    grid: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [gl.num_warps(), 1], [1, 0])
    tokens = gl.arange(0, 16, layout=gl.SliceLayout(1, grid))
    rs = gl.arange(0, SLOTS, layout=gl.SliceLayout(0, grid))
    mask = (tokens < m)[:, None] & (rs < slots)[None, :]
    _grid_wait(PDL)  # (the squares: the kernel before's)
    return gl.load(sq_ptr + tokens[:, None] * stride_sq + rs[None, :], mask=mask, other=0.0)


@gluon.jit
def _rstd_of(sq, k, eps, layout: gl.constexpr):
    """The tokens' 1 / RMS [16] (in `layout`) from their handed squares (kernels/common
    .handed_rstd's sum)."""
    return gl.convert_layout(gl.rsqrt(gl.sum(sq, axis=1) / k + eps), layout)


@gluon.jit
def _counted_last(count_ptr, any_tensor, SPLITS: gl.constexpr, FENCE: gl.constexpr):
    """After the warpgroup stored its unit's slice: count it on the tile's counter and return
    whether it is the tile's last of SPLITS (kernels/common.count_done's order: a fence in each
    thread, the warpgroup's barrier, one acq_rel atomic)."""
    if FENCE:
        gl.inline_asm_elementwise("fence.acq_rel.gpu; mov.u32 $0, $1;", "=r,r", [any_tensor],
                                  dtype=gl.int32, is_pure=False, pack=1)  # fmt: skip
    gl.thread_barrier()
    return gl.atomic_add(count_ptr, 1, sem="acq_rel", scope="gpu") == SPLITS - 1


@gluon.jit
def epilogue_inputs(rows, in_rows, m, residual, hw_ptr, layout: gl.constexpr,
                    RESIDUAL: gl.constexpr, HAND_OUT: gl.constexpr):  # fmt: skip
    """What a tile's epilogue adds besides its sums, read before they are ready (so that the
    store waits on no load of them): the residual [rows, 16 tokens] (residual: its pointer and
    row stride; fp32, zeros without one) and the next norm's weight at the rows (fp32; zeros
    without HAND_OUT). SUM_IN's units read them before they store and count; kernels/
    w12_tokens' tiles before their stages."""
    res_ptr, stride_r = residual
    N_ROWS: gl.constexpr = rows.type.shape[0]
    tokens = gl.arange(0, 16, layout=gl.SliceLayout(0, layout))
    mask = in_rows[:, None] & (tokens[None, :] < m)
    res = gl.zeros([N_ROWS, 16], gl.float32, layout)
    if RESIDUAL:
        res = gl.load(res_ptr + tokens[None, :] * stride_r + rows[:, None], mask=mask,
                      other=0.0).to(gl.float32)  # fmt: skip
    hw = gl.zeros([N_ROWS], gl.float32, gl.SliceLayout(1, layout))
    if HAND_OUT:
        hw = gl.load(hw_ptr + rows, mask=in_rows, other=0.0).to(gl.float32)
    return res, hw


@gluon.jit
def _sum_tile(rows, in_rows, tile, m, output, summed, res, hw, layout: gl.constexpr,
              SPLITS: gl.constexpr, RESIDUAL: gl.constexpr, HAND_OUT: gl.constexpr):  # fmt: skip
    """The tile's last unit (SUM_IN): y = its SPLITS fp32 slices added in split order (read
    through L2), rounded, plus the residual (kernels/w12_linear.sum_splits's bits); HAND_OUT: the
    next norm handed on as that launch's (kernels/common.store_handoff_with, u in pair order),
    the tile's sums of squares in slot `tile`. res, hw: `epilogue_inputs`'. Then the tile's counter
    back to 0."""
    part_ptr, stride_y, stride_split, _, _ = output
    y_ptr, count_ptr, u_ptr, _, sq_ptr, stride_u, stride_sq = summed
    tokens = gl.arange(0, 16, layout=gl.SliceLayout(0, layout))
    mask = in_rows[:, None] & (tokens[None, :] < m)
    at = tokens[None, :] * stride_y + rows[:, None]
    total = gl.zeros([RW, 16], gl.float32, layout)
    for s in gl.static_range(SPLITS):
        total += gl.load(part_ptr + s * stride_split + at, mask=mask, other=0.0,
                         cache_modifier=".cg")  # fmt: skip
    y = total.to(gl.bfloat16)
    if RESIDUAL:
        y = (y.to(gl.float32) + res).to(gl.bfloat16)
    gl.store(y_ptr + at, y, mask=mask)
    if HAND_OUT:
        hand_out(y, hw, rows, tokens, mask, m, tile, (u_ptr, stride_u, sq_ptr, stride_sq))
    gl.atomic_xchg(count_ptr + tile, 0, sem="relaxed", scope="gpu")


@gluon.jit
def hand_out(y, hw, rows, tokens, mask, m, slot, hand):
    """The next norm handed on from a tile's output y [rows, 16 tokens] bf16 (kernels/common
    .store_handoff_with's bits): u = y times the norm weight at the rows (hw, fp32), rounded,
    at the rows' pair_position, and the tile's sums of squares of y per token into `slot` of
    the squares (hand: u's pointer and row stride, the squares' pointer and row stride); only
    where `mask` (the rows in N, the tokens under m)."""
    u_ptr, stride_u, sq_ptr, stride_sq = hand
    o = y.to(gl.float32)
    u = (o * hw[:, None]).to(gl.bfloat16)
    gl.store(u_ptr + tokens[None, :] * stride_u + pair_position(rows)[:, None], u, mask=mask)
    squares = gl.sum(gl.where(mask, o * o, 0.0), axis=0)
    gl.store(sq_ptr + tokens * stride_sq + slot, squares, mask=tokens < m)


@gluon.jit
def _multiplier(bufs, bars, work, n, m, output, OUT_F32: gl.constexpr, EPILOGUE: gl.constexpr,
                PDL: gl.constexpr, MMA: gl.constexpr, BOUND: gl.constexpr, marks,
                TRACE: gl.constexpr, hand, k, HAND_IN: gl.constexpr = 0, summed=None,
                SUM_IN: gl.constexpr = (0, 1, False, False),
                HAND_LATE: gl.constexpr = False):  # fmt: skip
    """The default partition (one warpgroup): each unit's blocks (`_block_products`), its
    escapes, the store (w12_ws's `_store`). marks, TRACE: the kernel timeline's
    (kernels/trace.py, w12_ws._trace_mark): the program's entry, its first stage landed (its
    input copied after PDL's wait), its exit. HAND_IN (the squares' slots, a power of 2; 0:
    none): the input is a handed norm's u, each unit's sums scaled by the tokens' 1 / RMS
    (`_rstd_of` its squares, read once a program; HAND_LATE: summed at each unit's end, their
    loads in flight over the first unit's stages) before the store. SUM_IN (on, splits, HAND_OUT,
    FENCE): a split tile's last unit adds its slices (`_sum_tile`; summed: y, the counters and
    the hand-off's u, norm weight, squares and strides)."""
    _trace_mark(marks, 0, TRACE)
    low_buf, code_buf, x_buf, scale_buf, esc_buf = bufs
    ready, empty, scale_ready, esc_ready, meta_empty = bars
    STAGES: gl.constexpr = code_buf.type.shape[0]
    GROUPS: gl.constexpr = scale_buf.type.shape[0] // 2
    SWIGLU: gl.constexpr = EPILOGUE[0]
    acc_layout: gl.constexpr = ACC2 if MMA == 2 else ACC
    if HAND_IN > 0:
        sq = _handed_squares(hand, m, PDL, HAND_IN)
        if not HAND_LATE:
            rstd = _rstd_of(sq, k, hand[3], gl.SliceLayout(0, acc_layout))
    c = 0
    j = 0
    for u in range(gl.program_id(0), work[0], gl.num_programs(0)):
        slot = j % 2
        row0, k_block0, n_blocks, split = _unit(u, work, RW // (1 + SWIGLU))
        mbarrier.wait(scale_ready.index(slot), (j // 2) & 1)
        acc = gl.zeros([RW, 16], gl.float32, acc_layout)
        # (BOUND 8: no blocks: the loader frees its own stages)
        for i in range(n_blocks * ((BOUND & 8) == 0)):
            s = c % STAGES
            mbarrier.wait(ready.index(s), (c // STAGES) & 1)
            if TRACE > 0:  # "go": the first stage's planes and input landed (the loader's
                if c == 0:  # copy of the input waits for the kernel before under PDL)
                    _trace_mark(marks, 1, TRACE)
            acc = _block_products(acc, low_buf, code_buf, x_buf, scale_buf, s,
                                  slot * GROUPS + 2 * i, MMA, BOUND)  # fmt: skip
            mbarrier.arrive(empty.index(s), count=1)
            c += 1
        mbarrier.wait(esc_ready.index(slot), (j // 2) & 1)
        acc = acc + esc_buf.index(slot).load(acc.type.layout)
        mbarrier.arrive(meta_empty.index(slot), count=1)
        if HAND_IN > 0:
            if HAND_LATE:
                rstd = _rstd_of(sq, k, hand[3], gl.SliceLayout(0, acc_layout))
            acc = acc * rstd[None, :]
        rows, in_rows = _tile_rows(row0, work, n, RW, SWIGLU, gl.SliceLayout(1, acc.type.layout))
        _grid_wait(PDL)  # (the residual, and y's memory, the kernel before's to finish with)
        if SUM_IN[0]:
            res, hw = epilogue_inputs(rows, in_rows, m, (output[3], output[4]), summed[3],
                                      acc_layout, EPILOGUE[1], SUM_IN[2])  # fmt: skip
        _store(acc, rows, in_rows, row0, split, m, work[4], output, OUT_F32, EPILOGUE)
        if SUM_IN[0]:
            tile = u % work[1]
            if _counted_last(summed[1] + tile, rows, SUM_IN[1], SUM_IN[3]):
                _sum_tile(rows, in_rows, tile, m, output, summed, res, hw, acc_layout,
                          SUM_IN[1], EPILOGUE[1], SUM_IN[2])  # fmt: skip
        j += 1
    _trace_mark(marks, 2, TRACE)


@gluon.jit
def _w12_tc_kernel(
    low_desc, code_desc, x_desc,
    x_ptr, base_ptr, row_ptr, esc_col_ptr, esc_bits_ptr, y_ptr, res_ptr,
    m, n, k, units, tiles, blocks_per_split, stride_x, base_stride, groups, stride_y,
    stride_split, stride_r,
    STAGES: gl.constexpr, SPLIT_K: gl.constexpr, ESC_BATCH: gl.constexpr, SWIGLU: gl.constexpr,
    RESIDUAL: gl.constexpr, Y_PAIR: gl.constexpr, PDL: gl.constexpr, MMA: gl.constexpr = 3,
    BOUND: gl.constexpr = 0, TRACE: gl.constexpr = 0, trace_ptr=None, clock_ptr=None,
    PRE: gl.constexpr = 0, MAX_BLOCKS: gl.constexpr = 16, ESC_EARLY: gl.constexpr = False,
    HAND_IN: gl.constexpr = 0, sq_ptr=None, stride_sq=0, slots=0, eps=0.0,
    HAND_LATE: gl.constexpr = False, SUM_IN: gl.constexpr = False,
    HAND_OUT: gl.constexpr = False, FENCE: gl.constexpr = False,
    sum_ptr=None, count_ptr=None, u_ptr=None, hw_ptr=None, sq_out_ptr=None, stride_um=0,
    stride_sq_out=0,
):  # fmt: skip
    """Each program takes units pid, pid + programs, ...; the partitions run on across them.
    HAND_IN, HAND_LATE: the multiplier's (a handed norm's squares); SUM_IN, HAND_OUT, FENCE:
    its in-kernel split sum's (y at sum_ptr, the tiles' counters, the next norm handed on)."""
    work = (units, tiles, blocks_per_split, gl.cdiv(k, WBLOCK), n // 2)
    half: gl.constexpr = WBLOCK // 2
    low_buf = gl.allocate_shared_memory(gl.uint8, [2 * STAGES, RW, half], low_desc.layout)
    code_buf = gl.allocate_shared_memory(gl.uint8, [STAGES, RW, half], code_desc.layout)
    x_buf = gl.allocate_shared_memory(gl.bfloat16, [4 * STAGES, 16, WBLOCK // 4], x_desc.layout)
    GROUPS: gl.constexpr = 2 * MAX_BLOCKS
    scale_buf = gl.allocate_shared_memory(gl.int32, [2 * GROUPS, RW],
                                          gl.SwizzledSharedLayout(1, 1, 1, [0]))  # fmt: skip
    esc_buf = gl.allocate_shared_memory(gl.float32, [2, RW, 16],
                                        gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))  # fmt: skip
    ready, empty = _barriers(STAGES), _barriers(STAGES)
    scale_ready, esc_ready, meta_empty = _barriers(2), _barriers(2), _barriers(2)
    gl.warp_specialize(
        [
            (_multiplier, ((low_buf, code_buf, x_buf, scale_buf, esc_buf),
                           (ready, empty, scale_ready, esc_ready, meta_empty), work, n, m,
                           (y_ptr, stride_y, stride_split, res_ptr, stride_r), SPLIT_K > 1,
                           (SWIGLU, RESIDUAL, Y_PAIR), PDL, MMA, BOUND, (trace_ptr, clock_ptr),
                           TRACE, (sq_ptr, stride_sq, slots, eps), k, HAND_IN,
                           (sum_ptr, count_ptr, u_ptr, hw_ptr, sq_out_ptr, stride_um,
                            stride_sq_out), (SUM_IN, SPLIT_K, HAND_OUT, FENCE), HAND_LATE)),
            (_meta, ((scale_buf, esc_buf), (scale_ready, esc_ready, meta_empty), work, n,
                     (base_ptr, base_stride, groups), (row_ptr, esc_col_ptr, esc_bits_ptr),
                     x_ptr, stride_x, m, SWIGLU, ESC_BATCH, PDL, ESC_EARLY)),
            (_loader, ((low_desc, code_desc, x_desc), (low_buf, code_buf, x_buf), (ready, empty),
                       work, SWIGLU, PDL, BOUND, PRE)),
        ],
        [1, 1],
        [192, 40],  # (the meta warp: 80 spilled its escapes' batch of 4 x [64, 16], 168 with
        # their columns in pair order; the loader: 24 with SwiGLU's copies)
    )  # fmt: skip


def _switched(x: torch.Tensor) -> bool:
    """Whether a switch sends forwards of x's rows here: ONE_ROW (one row), VERIFY (2-16)."""
    return ONE_ROW if x.shape[0] == 1 else VERIFY and x.shape[0] <= 16


def verify_route(gate_up, down, x: torch.Tensor) -> bool:
    """Whether a forward of x's rows takes its W12 gate|up and down through w12_tc (VERIFY or
    ONE_ROW on, w12_ws.pair_chain)."""
    return _switched(x) and pair_chain(gate_up, down, x, min_rows=1)


def pair_input(weight, x: torch.Tensor) -> bool:
    """Whether a multiply of x's rows by `weight`, its input a norm's or the attention's output,
    runs here (VERIFY or ONE_ROW on), that input written in pair order (models/fused
    .normed_input, attend): a W12 weight of group size 128, K a multiple of 256 and N of 16, on
    a Hopper GPU (or the emulator)."""
    if not _switched(x) or not isinstance(weight, W12Weight) or weight.group_size != BLOCK // 2:
        return False
    # N a multiple of 16 (w12_ws.ROW_MULTIPLE: where it is not, the launcher pads the weight)
    if weight.shape[0] % ROW_MULTIPLE:
        return False
    return weight.columns % BLOCK == 0 and launch.gluon_routes(x)


def layouts(swizzle: int = -1) -> tuple:
    """The shared layouts TMA writes: the planes' (rows of 128 bytes, swizzled `swizzle` bytes
    wide: 0 or 128; -1: PLANE_SWIZZLE's) and the input's boxes ([16 tokens, 64 pair-order
    columns] bf16, 128-byte swizzle: wgmma's B, K-major)."""
    swizzle = PLANE_SWIZZLE if swizzle == -1 else swizzle
    if swizzle not in (0, 128):
        raise ValueError(f"w12_tc: SWIZZLE is 0 or 128 (bytes), not {swizzle}")
    planes = gl.NVMMASharedLayout(swizzle_byte_width=swizzle, element_bitwidth=8, rank=2)
    return planes, gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)


def split_plan(
    n: int, k: int, swiglu: bool, split: int, sms: int, max_blocks: int = 0
) -> tuple[int, int, int]:
    """(tiles, blocks a split, splits) for N x K: at most max_blocks (0: MAX_UNIT_BLOCKS) blocks
    a unit; unless `split` is given (or SwiGLU, which takes none past that), the K split whose
    waves cost least, a wave costing its units' blocks plus UNIT_COST_BLOCKS (ties: the fewest
    splits)."""
    tiles = triton.cdiv(n // 2 if swiglu else n, ROWS // (2 if swiglu else 1))
    blocks = triton.cdiv(k, BLOCK)
    least = triton.cdiv(blocks, max_blocks or MAX_UNIT_BLOCKS)
    if split or swiglu:
        choices = [max(split or 1, least)]
    else:
        choices = range(least, blocks + 1)
    plans = []
    for splits in choices:
        per_split = triton.cdiv(blocks, splits)
        units = tiles * triton.cdiv(blocks, per_split)
        plans.append((triton.cdiv(units, sms) * (per_split + UNIT_COST_BLOCKS), per_split))
    per_split = min(plans, key=lambda plan: plan[0])[1]  # (the first: the fewest splits)
    return tiles, per_split, triton.cdiv(blocks, per_split)


def w12_tc_linear(
    x: torch.Tensor,
    weight: W12Weight,
    tile: dict | None = None,
    *,
    x_order: str = "natural",
    swiglu: bool = False,
    residual: torch.Tensor | None = None,
    y_order: str = "natural",
    norm_after: NormAfter | None = None,
    handed_norm: NormAfter | None = None,
) -> torch.Tensor:
    """x [M, K] bf16 (M 1-16, CUDA, sm_90) @ weight.T -> [M, N] bf16 on the register-operand
    wgmma kernel (w12_linear's contract: swiglu, y = silu(gate) * up of [gate | up]; residual
    [M, N], y = residual + x @ weight.T). tile: TILE's keys to change. The kernel reads its input
    in kernels/w12_ws.pair_order (its operand's K order): x_order "pair", x is that [M, Kp]
    already (rmsnorm(pair=True) writes it, or a SwiGLU here or in w12_ws with y_order "pair");
    else the host permutes it. y_order "pair" (swiglu, N / 2 a multiple of 256): y in pair
    order, a down's input. norm_after: as w12_linear's (kernels/w12_linear.sum_splits), handed
    on where it says so. handed_norm: a split sum handed the norm on (a filled, handed NormAfter
    whose u is x, in pair order): the sums scaled by the tokens' 1 / RMS from its squares."""
    cfg = TILE | (tile or {})
    unknown = set(cfg) - set(TILE)
    if unknown:
        raise ValueError(f"w12_tc_linear: unknown tile keys {sorted(unknown)}")
    cfg = _resolved(cfg)
    m, k, n = x.shape[0], weight.columns, weight.shape[0]
    check_pair_call("w12_tc_linear", x, weight, x_order, swiglu, residual, y_order)
    hand = _handed_arguments(x, x_order, handed_norm)
    cut = off_row_multiple(w12_tc_linear, x, weight, tile, swiglu, residual, x_order=x_order,
                           handed_norm=handed_norm)  # fmt: skip
    if cut is not None:  # (N off 16: w12_ws.ROW_MULTIPLE)
        return cut
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    sms = launch._sm_count(x.device.index or 0)
    most = cfg["MAX_BLOCKS"]
    tiles, per_split, splits = split_plan(n, k, swiglu, cfg["SPLIT_K"], sms, most)
    if swiglu and splits > 1:
        raise ValueError(f"w12_tc_linear swiglu takes at most {most * BLOCK} columns")
    planes, x_layout = layouts(cfg["SWIZZLE"])
    rows = ROWS // (2 if swiglu else 1)  # of N a unit covers (SwiGLU: and their ups)
    low = TensorDescriptor.from_tensor(weight.low, [rows, BLOCK // 2], planes)
    codes = TensorDescriptor.from_tensor(weight.codes, [rows, BLOCK // 2], planes)
    xp = pair_order(x) if x_order == "natural" else x.contiguous()
    xd = TensorDescriptor.from_tensor(xp, [16, BLOCK // 4], x_layout)
    y = torch.empty(m, n // 2 if swiglu else n, device=x.device, dtype=torch.bfloat16)
    out = y if splits == 1 else torch.empty(splits, m, n, device=x.device, dtype=torch.float32)
    summed = _summed_arguments(y, tiles, splits, cfg["SUM_IN"], residual, norm_after)
    # the residual added in this launch: unsplit, or a split added up here (else sum_splits')
    res_here = residual is not None and (splits == 1 or bool(summed))
    res = residual.contiguous() if res_here else y
    units = tiles * splits
    grid = (min(units, sms * cfg["PERSISTENT"]) if cfg["PERSISTENT"] else units,)
    launched = launch.pdl(x, multiply=True, programs=grid[0])
    _w12_tc_kernel[grid](
        low, codes, xd, xp, weight.base, weight.row_ptr, weight.esc_col, weight.esc_bits, out, res,
        m, n, k, units, tiles, per_split, xp.stride(0), weight.base.stride(0),
        weight.base.shape[1], y.stride(0), m * n, res.stride(0), STAGES=cfg["STAGES"],
        SPLIT_K=splits, ESC_BATCH=cfg["ESC_BATCH"], SWIGLU=int(swiglu), MMA=cfg["MMA"],
        BOUND=cfg["BOUND"], PRE=cfg["PRE"], MAX_BLOCKS=most, ESC_EARLY=bool(cfg["ESC_EARLY"]),
        RESIDUAL=res_here, Y_PAIR=y_order == "pair",
        PDL=launched["PDL"], launch_pdl=launched["launch_pdl"], num_warps=4, **hand,
        **trace.arguments(x, "w12_tc", grid[0], bytes=weight.nbytes_bound(), rows=m, n=n, k=k),
        **summed,
    )  # fmt: skip
    if splits > 1 and not summed:
        sum_splits(out, y, residual, norm_after)
    return y


def _summed_arguments(
    y: torch.Tensor,
    tiles: int,
    splits: int,
    sum_in: int,
    residual: torch.Tensor | None,
    norm_after: NormAfter | None,
) -> dict:
    """The launch's keywords for a K split added up in the kernel (SUM_IN): y, the tiles'
    counters and, where the norm after is handed on (the only norm the kernel writes), its u
    and squares [M, tiles]; {} where the split (if any) is left to a split-sum launch: no
    split, SUM_IN off, or a norm after that is not handed (SPLIT_SUM_NORM's)."""
    norm = norm_after if residual is not None else None
    if splits == 1 or not sum_in or (norm is not None and not norm.handed):
        return {}
    out = dict(SUM_IN=True, sum_ptr=y, count_ptr=zeroed_counters(y.device, tiles),
               FENCE=y.is_cuda)  # fmt: skip
    if norm is not None:
        hand = norm.hand_arguments(y, tiles)
        out |= dict(HAND_OUT=True, u_ptr=hand["u_ptr"], hw_ptr=hand["hw_ptr"],
                    sq_out_ptr=hand["sq_ptr"], stride_um=hand["stride_um"],
                    stride_sq_out=hand["stride_sq"])  # fmt: skip
    return out


def _handed_arguments(x: torch.Tensor, x_order: str, handed: NormAfter | None) -> dict:
    """The launch's keywords for a handed norm (`_handed_squares`'), checked: a filled, handed
    NormAfter whose u is x, in pair order."""
    if handed is None:
        return {}
    if not handed.handed or not handed.ready or handed.u is not x or x_order != "pair":
        raise ValueError("w12_tc_linear: a handed norm's multiply takes its filled u as x, in "
                         "pair order")  # fmt: skip
    sq = handed.squares
    if sq is None or sq.shape[0] != x.shape[0] or sq.dtype != torch.float32:
        raise ValueError("w12_tc_linear: a handed norm's squares are [M, slots] fp32")
    late = HANDED_RSTD_LATE
    if not SWITCH_RULES["HANDED_RSTD_LATE"][0](late):
        raise ValueError(f"w12_tc: HANDED_RSTD_LATE is 0 or 1, not {late}")
    return dict(HAND_IN=triton.next_power_of_2(sq.shape[1]), sq_ptr=sq, stride_sq=sq.stride(0),
                slots=sq.shape[1], eps=float(handed.eps), HAND_LATE=bool(late))  # fmt: skip


def _resolved(cfg: dict) -> dict:
    """A tile with its -1 keys taken from the switches (SWIZZLE: PLANE_SWIZZLE, MMA:
    MMA_VERSION, SPLIT_K: UNIT_SPLIT, PRE: PRE_STAGES, MAX_BLOCKS: MAX_UNIT_BLOCKS, ESC_EARLY:
    EARLY_ESCAPES, SUM_IN: SUM_IN_KERNEL), checked."""
    switches = dict(MMA=MMA_VERSION, SPLIT_K=UNIT_SPLIT, PRE=PRE_STAGES,
                    MAX_BLOCKS=MAX_UNIT_BLOCKS, ESC_EARLY=EARLY_ESCAPES,
                    SUM_IN=SUM_IN_KERNEL)  # fmt: skip
    out = cfg | {key: value for key, value in switches.items() if cfg[key] == -1}
    allowed, which = SWITCH_RULES["MAX_UNIT_BLOCKS"]  # (the scale words' shape: powers of 2)
    if not allowed(out["MAX_BLOCKS"]):
        raise ValueError(f"w12_tc_linear: MAX_BLOCKS is {which}, not {out['MAX_BLOCKS']}")
    if not 0 <= out["PRE"] <= out["STAGES"]:
        stages, pre = out["STAGES"], out["PRE"]
        raise ValueError(f"w12_tc_linear: PRE is 0 (all) to STAGES ({stages}), not {pre}")
    if out["MMA"] not in (2, 3):
        raise ValueError(f"w12_tc_linear: MMA is 2 (mma.sync) or 3 (wgmma), not {out['MMA']}")
    if out["BOUND"] & ~11:
        raise ValueError(f"w12_tc_linear: BOUND is a sum of 1, 2 and 8, not {out['BOUND']}")
    out["SWIZZLE"] = layouts(out["SWIZZLE"])[0].swizzle_byte_width  # (checks it)
    return out


def compile_sm90(tile: dict | None = None, swiglu: bool = False, residual: bool = False,
                 split: int = 1, y_pair: bool = False, pdl: bool = False,
                 traced: bool = False, hand_in: int = 0, sum_in: int = 0,
                 hand_late: bool = False):  # fmt: skip
    """The kernel compiled for sm_90a without a GPU (kernels/aot.compile_kernel); pdl: with
    programmatic dependent launch's waits; traced: with the kernel timeline's marks; hand_in: a
    handed norm's squares of that many slots (a power of 2; hand_late: HANDED_RSTD_LATE's
    order); sum_in (with a split): 1 the split added up in the kernel, 2 and the next norm
    handed on from there."""
    from specpilot.kernels import aot

    cfg = _resolved(TILE | (tile or {}))
    rows = ROWS // (2 if swiglu else 1)
    planes, x_layout = layouts(cfg["SWIZZLE"])
    types = dict(
        low_desc=f"tensordesc<u8[{rows}, {BLOCK // 2}],{planes!r}>",
        code_desc=f"tensordesc<u8[{rows}, {BLOCK // 2}],{planes!r}>",
        x_desc=f"tensordesc<bf16[16, {BLOCK // 4}],{x_layout!r}>",
        x_ptr="*bf16", base_ptr="*u8", row_ptr="*i32", esc_col_ptr="*i32", esc_bits_ptr="*i16",
        y_ptr="*fp32" if split > 1 else "*bf16", res_ptr="*bf16",
    ) | (dict(trace_ptr="*i64", clock_ptr="*i64") if traced else {})  # fmt: skip
    if hand_in:
        types |= dict(sq_ptr="*fp32", eps="fp32")
    if sum_in:
        types |= dict(sum_ptr="*bf16", count_ptr="*i32", res_ptr="*bf16")
    if sum_in == 2:
        types |= dict(u_ptr="*bf16", hw_ptr="*bf16", sq_out_ptr="*fp32")
    consts = dict(STAGES=cfg["STAGES"], SPLIT_K=split, ESC_BATCH=cfg["ESC_BATCH"], MMA=cfg["MMA"],
                  BOUND=cfg["BOUND"], PRE=cfg["PRE"], MAX_BLOCKS=cfg["MAX_BLOCKS"],
                  ESC_EARLY=bool(cfg["ESC_EARLY"]),
                  SWIGLU=int(swiglu), RESIDUAL=residual, Y_PAIR=y_pair, PDL=pdl,
                  TRACE=int(traced), HAND_IN=hand_in, HAND_LATE=hand_late, SUM_IN=bool(sum_in),
                  HAND_OUT=sum_in == 2, FENCE=bool(sum_in), num_warps=4)  # fmt: skip
    return aot.compile_kernel(_w12_tc_kernel, types, consts)
