"""W12 multiplies of 2-16 rows with the decode in warps of its own (Gluon, sm_90): a prototype.

Why: the 16-row W12 tiles of kernels/w12_linear.py decode in the warps that feed the tensor
cores. Their registers (147-168 a thread) hold 3 programs of 4 warps an SM, and those warps
cannot both keep enough bytes in flight and decode them (docs/LOG.md runs 263-277: the decode
itself is not the bound, the loads are; one program of 2 warps an SM ran at half speed, run 277).
Here each program splits its work over partitions (`gl.warp_specialize`):
- the loader (1 warp, few registers) copies each block of 256 columns by TMA: the W12 planes of
  BLOCK_N rows into a ring of STAGES buffers, the 16 input rows into one of X_STAGES;
- the decoders (DECODE_WARPS warps) turn a block's planes into bf16 weights in shared memory,
  two weights a 32-bit word (`_pair`; the decoders' SASS loop: 2.8 instructions a weight);
- the default partition (4 warps, one warpgroup) multiplies them on wgmma, scales each group's
  sums by its rows' 2^(2b) (formats/w12.py: exact), adds the escapes (before the blocks: their
  dependent loads while the rings fill) and stores.

On the H200 (docs/LOG.md runs 278-285): right (its GPU tests), but 15-25% slower than the
Triton tiles (Qwen3-8B's 16-row gate|up 48.6-52 us against 42.1). Not the swizzle, the stages
or the decoding warps: its loads alone ran at ~3.45 TB/s, where its copies with no consumer
waited on ran at ~4 (run 285), because a stage was freed only once both the decoders and the
multiplier were done with it. Now the input has a ring of its own (X_STAGES) freed by the
multiplier, and the planes' stage is freed by the decoders (EARLY_FREE: before the decode);
unmeasured (bench/h200/ws286.sh).

Column order: a decoded word holds slices q0 and q0 + 1 of one position i of a block (columns
32 q0 + i and 32 (q0 + 1) + i), so the block's weights land in shared memory in `pair_order`,
and the input is given in the same order (the host permutes it: `pair_order`); the products'
sums are the same sums, in another order.

In the engine only behind VERIFY (off): the fused verify forward's W12 gate|up (SwiGLU
epilogue, y in pair order) and down (residual epilogue), 2-16 rows, CUDA only; no norm hand-off, no
PDL. tests/test_w12_ws.py checks it against w12_linear_reference on the GPU and on
kernels/emulate.py (the CPU), and compiles it for sm_90 without one; bench/w12_join.py --ws
times it beside w12_linear.
"""

from __future__ import annotations

import dataclasses

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from specpilot.formats.w12 import BLOCK, SLICE, W12Weight, padded
from specpilot.kernels import launch, trace
from specpilot.kernels.common import pair_position
from specpilot.kernels.elementwise import NormAfter
from specpilot.kernels.w12_linear import sum_splits

# the prototype's default tile: 64 weight rows (one wgmma M), 4 stages of the planes, 2 decoded
# stages, the input's ring of its own (X_STAGES, 0: STAGES + 2), 4 decoding warps; SPLIT_K 0: K
# split so that the grid fills the SMs (`split_k`)
TILE = dict(BLOCK_N=64, STAGES=4, W_STAGES=2, X_STAGES=0, DECODE_WARPS=4, DECODE_REGS=128,
            SPLIT_K=0, SWIZZLE=128, BOUND=0, PERSISTENT=0, ESC_FIRST=1, ESC_BATCH=4,
            BASE_SLAB=1, MAXNREG=0, EARLY_FREE=0, MMA_LAG=0, RESTORE=0)  # fmt: skip
# X_STAGES (run 285: the loader's copies alone took 39.6 us at gate|up, with the stages held
# until both the decoders and the multiplier were done 44.3): the planes' stage is freed by the
# decoders, the input's (its own ring) by the multiplier. EARLY_FREE: the decoders free the
# planes' stage once they have read it into registers, before decoding it. MMA_LAG: each
# block's products waited for after the next block's are issued (BASE_SLAB on, BOUND 0).
# RESTORE: the decoders raise each weight's exponent by its group's 2b (`_restore`), so the
# decoded stage holds the weights themselves and the multiplier sums every block into one
# accumulator with no scaling (a unit of at most 16 blocks: the K split grows to fit).
# BOUND (bench/w12_join.py, wrong products): 1 takes the decode out, 2 the multiply, 3 both;
# 4 the input's copies (the weights' bytes alone); 8 every consumer (the loader's copies alone,
# each stage reissued once its last copies landed).
# BASE_SLAB: a unit's group bases loaded at once before its blocks (else each block's in the
# loop: a round trip a block, runs 279-280). ESC_BATCH 4: each row's first 4 escapes gathered
# at once (0: one after another).
# PERSISTENT: that many programs an SM taking the work units in turn (else one a unit).
# MAXNREG: the launch's registers a thread (0: ptxas's choice); 80 with 2 stages and 1 decoded
# stage holds two programs an SM (the multiplying warps then get 136, the decoders 80). ESC_FIRST: a
# unit's escapes (each a chain of dependent loads: the row's offsets, the column, the input
# there) summed before its blocks, while the rings fill, rather than after them (run 278's)
# the fused verify forward's W12 gate|up (SwiGLU, y in pair order) and down (residual) on this
# kernel, its input written in pair order by the rmsnorm before it (models/fused.py,
# `verify_route`): off, unmeasured end to end (bench/h200/ws279.sh times the multiplies first)
VERIFY = False
PAIR = 2 * SLICE  # columns of one decoded buffer: two slices, interleaved
WBLOCK, WPAIR = gl.constexpr(BLOCK), gl.constexpr(PAIR)  # the same, inside the kernels
TRACE_LANES = gl.constexpr(trace.LANES)


def pair_order(x: torch.Tensor) -> torch.Tensor:
    """x [M, K] -> [M, Kp] (zero columns to Kp, formats/w12.padded) with each 256-column block
    in the decoded weights' order: position 64 p + r of a block (pair p = 2 h + q0 / 2) holds
    natural column 32 (4 h + q0 + r % 2) + r // 2."""
    m, k = x.shape
    kp = padded(k)
    if kp != k:
        x = torch.nn.functional.pad(x, (0, kp - k))
    r = torch.arange(BLOCK, device=x.device)
    p, rr = r // PAIR, r % PAIR
    h, q0 = p // 2, 2 * (p % 2)
    col = SLICE * (4 * h + q0 + rr % 2) + rr // 2
    index = (torch.arange(0, kp, BLOCK, device=x.device)[:, None] + col).reshape(-1)
    return x[:, index].contiguous()


@gluon.jit
def _pair(low_word, code_word, Q0: gl.constexpr, H: gl.constexpr):
    """bf16x2 words of slices Q0 and Q0 + 1 (H: the block's half) of a block's positions, with
    their exponents taken down by 2b: low byte e0 m, high byte s << 7 | d from the code s d."""
    nib = (code_word >> (8 * Q0 + 4 * H)) & 0x0F0F
    high = nib + (nib & 0x0808) * 15  # s << 3 | d -> s << 7 | d, a byte each, no carry
    return prmt_words(low_word, high, 0x5140 if Q0 == 0 else 0x5342)


@gluon.jit
def prmt_words(a, b, SELECTOR: gl.constexpr):
    """PTX prmt.b32 of int32 words: byte i of the result is byte (SELECTOR >> 4 i) & 7 of the
    8 bytes {b, a} (a's bytes 0-3); `prmt` in PyTorch."""
    return gl.inline_asm_elementwise(
        f"prmt.b32 $0, $1, $2, {SELECTOR};", "=r,r,r", [a, b], dtype=gl.int32, is_pure=True,
        pack=1,
    )  # fmt: skip


@gluon.jit
def _restore(pair, shift):
    """RESTORE: a `_pair` word's two bf16 exponents raised by 2b (shift = b << 8, the row's
    group base in place) where they are not 0, so the word holds the weights themselves (a zero
    or escaped weight, exponent 0, stays +-0; 2b + 15 <= 141: no carry into the sign)."""
    e = (pair >> 7) & 0x000F000F  # each half's exponent, 0..15
    nz = gl.inline_asm_elementwise(
        "{ .reg .b32 one; mov.b32 one, 65537; min.u16x2 $0, $1, one; }", "=r,r", [e],
        dtype=gl.int32, is_pure=True, pack=1,
    )  # fmt: skip
    return pair + nz * shift


@gluon.jit
def _lane_value(v, lane):
    """Each row's value at lane `lane` (v [rows, 32] with a warp's lanes along a row)."""
    src = gl.full(v.shape, 0, gl.int32, v.type.layout) + lane
    return gl.inline_asm_elementwise(
        "shfl.sync.idx.b32 $0, $1, $2, 31, -1;", "=r,r,r", [v, src], dtype=gl.int32,
        is_pure=True, pack=1,
    )  # fmt: skip


@gluon.jit
def _decoder_slab(u, work, weights, n, words: gl.constexpr, BLOCK_N: gl.constexpr,
                  SWIGLU: gl.constexpr):  # fmt: skip
    """RESTORE: unit u's group bases (2 a block, at most 32: 16 blocks a unit) as shifts b << 8,
    [BLOCK_N, 32] in the decoders' layout, a row's groups along its lanes; 0 past the units."""
    base_ptr, base_stride, groups = weights
    row0, k_block0, n_blocks, _ = _unit(u, work, BLOCK_N // (1 + SWIGLU))
    rows, in_rows = _tile_rows(row0, work, n, BLOCK_N, SWIGLU, gl.SliceLayout(1, words))
    live = (u < work[0]) & in_rows
    lane = gl.arange(0, 32, layout=gl.SliceLayout(0, words))
    g = 2 * k_block0 + lane
    mask = live[:, None] & (lane[None, :] < 2 * n_blocks) & (g[None, :] < groups)
    b = gl.load(base_ptr + rows.to(gl.int64)[:, None] * base_stride + g[None, :], mask=mask,
                other=0)  # fmt: skip
    return b.to(gl.int32) << 8


@gluon.jit
def _tile_rows(row0, work, n, BLOCK_N: gl.constexpr, SWIGLU: gl.constexpr,
               layout: gl.constexpr):  # fmt: skip
    """The weight rows of a unit's BLOCK_N tile rows (SwiGLU: its gates', then their ups' half N
    further on) and which of them exist."""
    ROWS: gl.constexpr = BLOCK_N // (1 + SWIGLU)
    j = gl.arange(0, BLOCK_N, layout=layout)
    rows = row0 + j % ROWS + (j // ROWS) * work[4]
    return rows, (row0 + j % ROWS < n // (1 + SWIGLU)) & (rows < n)


@gluon.jit
def _unit(u, work, ROWS: gl.constexpr):
    """Work unit u (a tile of ROWS rows of N, and with SwiGLU their ups too; one K split of it)
    -> its first row, first block, blocks and split. work: (units, tiles, blocks a split, blocks
    of K, N / 2)."""
    units, tiles, per_split, k_blocks, half_n = work
    split = u // tiles
    k_block0 = split * per_split
    return (u % tiles) * ROWS, k_block0, gl.minimum(per_split, k_blocks - k_block0), split


@gluon.jit
def _copy_rows(desc, row0, col, ready, buf, half_n, SWIGLU: gl.constexpr):
    """A plane's box of the tile's rows into buf: rows row0.. (SwiGLU: the gates' into its first
    half, their ups', half_n further down the weight, into its second)."""
    if SWIGLU:
        half: gl.constexpr = buf.type.shape[0] // 2
        tma.async_copy_global_to_shared(desc, [row0, col], ready, buf.slice(0, half))
        tma.async_copy_global_to_shared(desc, [half_n + row0, col], ready, buf.slice(half, half))
    else:
        tma.async_copy_global_to_shared(desc, [row0, col], ready, buf)


@gluon.jit
def _copy_planes(descs, bufs, i, row0, col, bar, half_n, SWIGLU: gl.constexpr):
    """A block's two planes of the tile's rows into buffer i of the ring (descs, bufs: the low
    plane's and the codes'): the low plane as its two halves (128 bytes a row each), buffers 2i
    and 2i + 1, the codes into buffer i."""
    low_desc, code_desc = descs
    low_buf, code_buf = bufs
    _copy_rows(low_desc, row0, col, bar, low_buf.index(2 * i), half_n, SWIGLU)
    _copy_rows(low_desc, row0, col + WBLOCK // 2, bar, low_buf.index(2 * i + 1), half_n, SWIGLU)
    _copy_rows(code_desc, row0, col // 2, bar, code_buf.index(i), half_n, SWIGLU)


@gluon.jit
def _grid_wait(PDL: gl.constexpr):
    """With programmatic dependent launch: wait until the kernel before has completed (its
    writes visible), as kernels/common.pdl_enter."""
    if PDL:
        gl.inline_asm_elementwise("griddepcontrol.wait; // $0", "=r", [], dtype=gl.int32,
                                  is_pure=False, pack=1)  # fmt: skip


@gluon.jit
def _trace_mark(marks, WHICH: gl.constexpr, TRACE: gl.constexpr):
    """kernels/common.trace_mark for the Gluon kernels (marks: its trace_ptr and clock_ptr):
    this program's moment WHICH (0 entry, 1 PDL's wait passed, 2 exit) in its launch's row of
    the kernel timeline. Called from one partition (w12_row's multiplying warps), whose scalar
    atomics one thread issues; its exit mark has no barrier before it (the partition's other
    warps may still be storing: ~a store's latency early). TRACE 0: nothing."""
    if TRACE > 0:
        trace_ptr, clock_ptr = marks
        if TRACE == 1:
            now = gl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=gl.int64,
                                            is_pure=False, pack=1)  # fmt: skip
        else:
            now = gl.atomic_add(clock_ptr, 1, sem="relaxed")
        lane = trace_ptr + (gl.program_id(0) % TRACE_LANES) * 4
        if WHICH == 2:
            gl.atomic_max(lane + 2, now, sem="relaxed")
            gl.atomic_add(lane + 3, 1, sem="relaxed")
        else:
            gl.atomic_min(lane + WHICH, now, sem="relaxed")


@gluon.jit
def _let_next_launch():
    """Programmatic dependent launch: the next kernel may launch (its own wait holds it)."""
    gl.inline_asm_elementwise("griddepcontrol.launch_dependents; // $0", "=r", [],
                              dtype=gl.int32, is_pure=False, pack=1)  # fmt: skip


@gluon.jit
def _x_copy(x_desc, x_buf, x_ready, sx, col, BOUND: gl.constexpr):
    """The input block of columns col.. (its 4 pair-order boxes) into input stage sx; BOUND 4 (a
    bound, wrong products): not copied, the stage marked ready."""
    x_ready_s = x_ready.index(sx)
    if (BOUND & 4) == 0:
        mbarrier.expect(x_ready_s, 4 * x_desc.block_type.nbytes)
        for p in gl.static_range(4):
            tma.async_copy_global_to_shared(x_desc, [0, col + p * WPAIR], x_ready_s,
                                            x_buf.index(4 * sx + p))  # fmt: skip
    else:
        mbarrier.arrive(x_ready_s, count=1)


@gluon.jit
def _early_inputs(copy: gl.constexpr, x_desc, x_buf, bars, work, count, ROWS: gl.constexpr,
                  BOUND: gl.constexpr):  # fmt: skip
    """PDL (this kernel's loader and w12_tc's): wait for the kernel before (it writes x), let the
    next kernel launch, then `copy` the input blocks of this program's first `count` blocks
    (their planes asked for before the wait; count at most the stages they go to): copy(x_desc,
    x_buf, bars, stage, column, BOUND), as `_x_copy`."""
    _grid_wait(True)
    _let_next_launch()
    c = 0
    for u in range(gl.program_id(0), work[0], gl.num_programs(0)):
        _, k_block0, n_blocks, _ = _unit(u, work, ROWS)
        for i in range(n_blocks):
            if c < count:
                copy(x_desc, x_buf, bars, c, (k_block0 + i) * WBLOCK, BOUND)
            c += 1


@gluon.jit
def _loader(descs, bufs, bars, work, BLOCK_N: gl.constexpr, SWIGLU: gl.constexpr,
            BOUND: gl.constexpr, PDL: gl.constexpr):  # fmt: skip
    """Each unit's blocks: the planes into their ring, the input into its own. PDL: the planes
    of the first min(STAGES, X_STAGES) blocks before the wait for the kernel before, their
    inputs after it (`_early_inputs`)."""
    low_desc, code_desc, x_desc = descs
    low_buf, code_buf, x_buf = bufs
    in_ready, in_empty, w_ready, w_empty, x_ready, x_empty = bars
    STAGES: gl.constexpr = code_buf.type.shape[0]
    X_STAGES: gl.constexpr = x_buf.type.shape[0] // 4
    EARLY: gl.constexpr = STAGES if STAGES < X_STAGES else X_STAGES
    ROWS: gl.constexpr = BLOCK_N // (1 + SWIGLU)
    nbytes: gl.constexpr = BLOCK_N * (WBLOCK + WBLOCK // 2)
    c = 0  # blocks so far, over this program's units: the rings' positions and phases
    for u in range(gl.program_id(0), work[0], gl.num_programs(0)):
        row0, k_block0, n_blocks, split = _unit(u, work, ROWS)
        for i in range(n_blocks):
            s = c % STAGES
            sx = c % X_STAGES
            if PDL and c == EARLY:  # the early blocks' inputs, before any stage is reused
                _early_inputs(_x_copy, x_desc, x_buf, x_ready, work, EARLY, ROWS, BOUND)
            if (BOUND & 8) != 0:  # BOUND 8: the loads alone, no consumer: a stage's last
                # copies landed frees it (tma_probe's ring)
                mbarrier.wait(in_ready.index(s), ((c // STAGES) & 1) ^ 1, pred=c >= STAGES)
                mbarrier.wait(x_ready.index(sx), ((c // X_STAGES) & 1) ^ 1, pred=c >= X_STAGES)
            else:  # the decoders free the planes' stage, the multiplier the input's
                mbarrier.wait(in_empty.index(s), ((c // STAGES) & 1) ^ 1)
                mbarrier.wait(x_empty.index(sx), ((c // X_STAGES) & 1) ^ 1)
            ready = in_ready.index(s)
            mbarrier.expect(ready, nbytes)
            col = (k_block0 + i) * WBLOCK
            _copy_planes((low_desc, code_desc), (low_buf, code_buf), s, row0, col, ready,
                         work[4], SWIGLU)  # fmt: skip
            if not PDL or c >= EARLY:
                _x_copy(x_desc, x_buf, x_ready, sx, col, BOUND)
            c += 1
    if PDL and c <= EARLY:  # a program of at most EARLY blocks: the inputs after all of them
        _early_inputs(_x_copy, x_desc, x_buf, x_ready, work, c, ROWS, BOUND)
    if (BOUND & 8) != 0:  # the last copies landed before the program ends
        for s in gl.static_range(STAGES):
            uses = (c - s + STAGES - 1) // STAGES
            mbarrier.wait(in_ready.index(s), (uses - 1) & 1, pred=uses > 0)
        for s in gl.static_range(X_STAGES):
            uses = (c - s + X_STAGES - 1) // X_STAGES
            mbarrier.wait(x_ready.index(s), (uses - 1) & 1, pred=uses > 0)


@gluon.jit
def _plane_words(low_buf, code_buf, s, planes: gl.constexpr, words: gl.constexpr,
                 BOUND: gl.constexpr):  # fmt: skip
    """Stage s's code words and its two low halves' words [BLOCK_N, 32] in registers (zeros
    under BOUND 1: no reads)."""
    BLOCK_N: gl.constexpr = code_buf.type.shape[1]
    if (BOUND & 1) == 0:
        code_word = code_buf.index(s)._reinterpret(gl.int32, [BLOCK_N, 32], planes).load(words)
        low0 = low_buf.index(2 * s)._reinterpret(gl.int32, [BLOCK_N, 32], planes).load(words)
        low1 = low_buf.index(2 * s + 1)._reinterpret(gl.int32, [BLOCK_N, 32], planes).load(words)
    else:
        code_word = gl.zeros([BLOCK_N, 32], gl.int32, words)
        low0 = code_word
        low1 = code_word
    return code_word, low0, low1


@gluon.jit
def _decoder(bufs, bars, work, weights, n, BLOCK_N: gl.constexpr, DECODE_WARPS: gl.constexpr,
             BOUND: gl.constexpr, EARLY_FREE: gl.constexpr, RESTORE: gl.constexpr,
             SWIGLU: gl.constexpr):  # fmt: skip
    low_buf, code_buf, w_buf = bufs
    in_ready, in_empty, w_ready, w_empty = bars[:4]
    STAGES: gl.constexpr = code_buf.type.shape[0]
    W_STAGES: gl.constexpr = w_buf.type.shape[0] // 4
    # a warp a row at a time, its lanes along the row's 32 words
    words: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [DECODE_WARPS, 1], [1, 0])
    # the planes' rows as 32-bit words, in the swizzle TMA wrote them with (128 bytes: reads of
    # 8 rows at once, as ldmatrix makes them, without bank conflicts; 0 had 8-way conflicts)
    planes: gl.constexpr = gl.NVMMASharedLayout(
        swizzle_byte_width=code_buf.type.layout.swizzle_byte_width, element_bitwidth=32, rank=2
    )
    pairs: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=32, rank=2)
    c = 0
    if RESTORE:  # the units' group bases, loaded a unit ahead of their use
        slab = _decoder_slab(gl.program_id(0), work, weights, n, words, BLOCK_N, SWIGLU)
    for u in range(gl.program_id(0), work[0] * ((BOUND & 8) == 0), gl.num_programs(0)):
        n_blocks = _unit(u, work, BLOCK_N)[2]
        if RESTORE:
            after = _decoder_slab(u + gl.num_programs(0), work, weights, n, words, BLOCK_N,
                                  SWIGLU)  # fmt: skip
        for i in range(n_blocks):
            s = c % STAGES
            sw = c % W_STAGES
            mbarrier.wait(in_ready.index(s), (c // STAGES) & 1)
            if EARLY_FREE:  # the planes read into registers, their stage freed, then the decode
                code_word, low0, low1 = _plane_words(low_buf, code_buf, s, planes, words, BOUND)
                fence_async_shared()  # the reads before TMA's next writes
                mbarrier.arrive(in_empty.index(s), count=1)
                mbarrier.wait(w_empty.index(sw), ((c // W_STAGES) & 1) ^ 1)
            else:
                mbarrier.wait(w_empty.index(sw), ((c // W_STAGES) & 1) ^ 1)
                code_word, low0, low1 = _plane_words(low_buf, code_buf, s, planes, words, BOUND)
            if (BOUND & 1) == 0:  # BOUND 1 (a bound, wrong products): no decode, the rest as is
                for h in gl.static_range(2):
                    low_word = low0 if h == 0 else low1
                    if RESTORE:  # group h of block i: its rows' b << 8 on every lane
                        shift = _lane_value(slab, 2 * i + h)
                    for qq in gl.static_range(2):
                        pair = _pair(low_word, code_word, 2 * qq, h)
                        if RESTORE:
                            pair = _restore(pair, shift)
                        dst = w_buf.index(4 * sw + 2 * h + qq)
                        dst._reinterpret(gl.int32, [BLOCK_N, 32], pairs).store(pair)
            fence_async_shared()  # the stores before wgmma reads them, the loads before TMA's
            if not EARLY_FREE:
                mbarrier.arrive(in_empty.index(s), count=1)
            mbarrier.arrive(w_ready.index(sw), count=1)
            c += 1
        if RESTORE:
            slab = after


@gluon.jit
def _wait_block(bufs, bars, cc):
    """Block cc's decoded weights and input stages, once ready: (their decoded stage, input
    stage). bars: (w_ready, w_empty, x_ready, x_empty)."""
    w_buf, x_buf = bufs
    W_STAGES: gl.constexpr = w_buf.type.shape[0] // 4
    X_STAGES: gl.constexpr = x_buf.type.shape[0] // 4
    mbarrier.wait(bars[0].index(cc % W_STAGES), (cc // W_STAGES) & 1)
    mbarrier.wait(bars[2].index(cc % X_STAGES), (cc // X_STAGES) & 1)
    return cc % W_STAGES, cc % X_STAGES


@gluon.jit
def _free_block(bufs, bars, cc):
    """Block cc's decoded and input stages freed (its products done)."""
    w_buf, x_buf = bufs
    mbarrier.arrive(bars[1].index(cc % (w_buf.type.shape[0] // 4)), count=1)
    mbarrier.arrive(bars[3].index(cc % (x_buf.type.shape[0] // 4)), count=1)


@gluon.jit
def _restored_blocks(acc, bufs, bars, c, n_blocks):
    """RESTORE: a unit's blocks of exact weights into one accumulator (no scaling), each
    block's 4 wgmma groups waited for once the next block's are issued, then its stages freed."""
    w_buf, x_buf = bufs
    for i in range(n_blocks):
        sw, sx = _wait_block(bufs, bars, c + i)
        for p in gl.static_range(4):
            acc = warpgroup_mma(w_buf.index(4 * sw + p), x_buf.index(4 * sx + p).permute((1, 0)),
                                acc, is_async=True)  # fmt: skip
        acc = warpgroup_mma_wait(num_outstanding=4, deps=[acc])
        if i > 0:  # block i - 1's products are done
            _free_block(bufs, bars, c + i - 1)
    acc = warpgroup_mma_wait(num_outstanding=0, deps=[acc])
    _free_block(bufs, bars, c + n_blocks - 1)
    return acc


@gluon.jit
def _group_products(w_buf, x_buf, sw, sx, G: gl.constexpr, acc):
    """A block's group G (pairs 2G and 2G + 1) times the input, on wgmma, asynchronous: fresh
    sums in acc's layout."""
    w0, w1 = w_buf.index(4 * sw + 2 * G), w_buf.index(4 * sw + 2 * G + 1)
    x0 = x_buf.index(4 * sx + 2 * G).permute((1, 0))
    x1 = x_buf.index(4 * sx + 2 * G + 1).permute((1, 0))
    out = warpgroup_mma(w0, x0, acc, use_acc=False, is_async=True)
    return warpgroup_mma(w1, x1, out, is_async=True)


@gluon.jit
def _bases(base_row, in_rows, groups, k_block0, i, n_blocks):
    """Block i's (of a unit's n_blocks from k_block0) two group bases of the rows, int32; 0 past
    the unit's blocks."""
    g = 2 * (k_block0 + i)
    live = in_rows & (i < n_blocks)
    b0 = gl.load(base_row + g, mask=live, other=0).to(gl.int32)
    b1 = gl.load(base_row + g + 1, mask=live & (g + 1 < groups), other=0).to(gl.int32)
    return b0, b1


@gluon.jit
def _slab_bases(slab, gcol, i):
    """Block i's two group bases of the rows from the unit's slab (its two columns, a row's
    across 4 lanes)."""
    b0 = gl.sum(gl.where(gcol[None, :] == 2 * i, slab, 0), axis=1)
    b1 = gl.sum(gl.where(gcol[None, :] == 2 * i + 1, slab, 0), axis=1)
    return b0, b1


@gluon.jit
def _scaled(acc, g0, g1, b0, b1):
    """acc plus a block's two group sums, each times its rows' 2^(2b) (as an fp32: exact for
    b <= 63, formats/w12.py)."""
    s0 = ((2 * b0 + 127) << 23).to(gl.float32, bitcast=True)
    s1 = ((2 * b1 + 127) << 23).to(gl.float32, bitcast=True)
    return acc + g0 * s0[:, None] + g1 * s1[:, None]


@gluon.jit
def _issue(bufs, bars, cc, r0, r1):
    """Block cc's two group products issued (asynchronous) once its input and decoded stages are
    ready, into r0's and r1's registers (fresh sums: their values unused)."""
    w_buf, x_buf = bufs
    sw, sx = _wait_block(bufs, bars, cc)
    return (_group_products(w_buf, x_buf, sw, sx, 0, r0),
            _group_products(w_buf, x_buf, sw, sx, 1, r1))  # fmt: skip


@gluon.jit
def _retire(acc, g, bufs, bars, cc, i, slab, gcol, OUTSTANDING: gl.constexpr):
    """acc plus block cc's (the unit's block i) products g, scaled, once waited for
    (OUTSTANDING wgmma groups left in flight: the next block's 4); its stages freed."""
    g0, g1 = warpgroup_mma_wait(num_outstanding=OUTSTANDING, deps=g)
    _free_block(bufs, bars, cc)
    b0, b1 = _slab_bases(slab, gcol, i)
    return _scaled(acc, g0, g1, b0, b1)


@gluon.jit
def _lagged_blocks(acc, bufs, bars, c, n_blocks, slab, gcol):
    """MMA_LAG: a unit's blocks two at a time, the second's products issued before the first's
    are waited for (its 4 wgmma groups left in flight), so the tensor cores' latency overlaps
    the second block's barrier waits and the first's scaling. Nothing stays in flight across
    the loop's back edge: ptxas serializes every wgmma if a sum in flight is copied."""
    zero = gl.zeros_like(acc)
    for j in range(n_blocks // 2):
        a = _issue(bufs, bars, c + 2 * j, zero, zero)
        b = _issue(bufs, bars, c + 2 * j + 1, zero, zero)
        acc = _retire(acc, a, bufs, bars, c + 2 * j, 2 * j, slab, gcol, 4)
        acc = _retire(acc, b, bufs, bars, c + 2 * j + 1, 2 * j + 1, slab, gcol, 0)
    if n_blocks % 2:
        a = _issue(bufs, bars, c + n_blocks - 1, zero, zero)
        acc = _retire(acc, a, bufs, bars, c + n_blocks - 1, n_blocks - 1, slab, gcol, 0)
    return acc


@gluon.jit
def _multiplier(bufs, bars, work, weights, n, escapes, x_ptr, stride_x, m, output,
                BLOCK_N: gl.constexpr, OUT_F32: gl.constexpr, BOUND: gl.constexpr,
                ESC_FIRST: gl.constexpr, ESC_BATCH: gl.constexpr, BASE_SLAB: gl.constexpr,
                MMA_LAG: gl.constexpr, RESTORE: gl.constexpr, EPILOGUE: gl.constexpr,
                num_warps: gl.constexpr, PDL: gl.constexpr = False):  # fmt: skip
    """The default partition: each unit's blocks' products, each group's scaled, then the
    escapes of its rows and columns and the store (`_store`). weights: (the group bases, their
    row stride, groups a row). EPILOGUE: (SWIGLU, RESIDUAL, Y_PAIR), as `_store` takes them."""
    x_buf, w_buf = bufs
    base_ptr, base_stride, groups = weights
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, 16, 16]
    )
    SWIGLU: gl.constexpr = EPILOGUE[0]
    ROWS: gl.constexpr = BLOCK_N // (1 + SWIGLU)
    _grid_wait(PDL)  # its escapes read x, its epilogue the residual; y the kernel before's
    c = 0
    for u in range(gl.program_id(0), work[0], gl.num_programs(0)):
        row0, k_block0, n_blocks, split = _unit(u, work, ROWS)
        rows, in_rows = _tile_rows(row0, work, n, BLOCK_N, SWIGLU, gl.SliceLayout(1, acc_layout))
        base_row = base_ptr + rows.to(gl.int64) * base_stride
        acc = gl.zeros([BLOCK_N, 16], gl.float32, acc_layout)
        col0, col1 = k_block0 * WBLOCK, (k_block0 + n_blocks) * WBLOCK
        if ESC_FIRST:  # the escapes' dependent loads while the rings fill (else after the loop)
            acc = _escapes(acc, rows, in_rows, escapes, x_ptr, stride_x, m, col0, col1,
                           ESC_BATCH)  # fmt: skip
        # the group bases (not with RESTORE: its decoders apply them): the unit's all at once
        # (BASE_SLAB groups a row; runs 279-280: a global load in the loop, even issued blocks
        # ahead, cost each block a round trip), or each block's a block ahead
        if RESTORE:
            pass
        elif BASE_SLAB:
            gcol = gl.arange(0, BASE_SLAB, layout=gl.SliceLayout(0, acc_layout))
            g = 2 * k_block0 + gcol
            live = in_rows[:, None] & (gcol[None, :] < 2 * n_blocks) & (g[None, :] < groups)
            slab = gl.load(base_row[:, None] + g[None, :], mask=live, other=0).to(gl.int32)
        else:
            b0, b1 = _bases(base_row, in_rows, groups, k_block0, 0, n_blocks)
        if RESTORE:  # exact weights: one accumulator (BOUND 0 or 1: w12_ws_linear checks),
            # from zeros: sums written into it by other instructions (the escapes') made ptxas
            # serialize every wgmma (C7515), so they are added after
            summed = _restored_blocks(gl.zeros_like(acc), (w_buf, x_buf), bars[2:], c, n_blocks)
            acc = acc + summed
            c += n_blocks
        elif MMA_LAG:  # (BASE_SLAB on, BOUND 0: w12_ws_linear checks)
            acc = _lagged_blocks(acc, (w_buf, x_buf), bars[2:], c, n_blocks, slab, gcol)
            c += n_blocks
        else:
            for i in range(n_blocks * ((BOUND & 8) == 0)):
                sw, sx = _wait_block((w_buf, x_buf), bars[2:], c)
                if (BOUND & 2) != 0:  # BOUND 2 (a bound, wrong products): no multiply
                    g0 = acc
                    g1 = acc
                else:
                    g0 = _group_products(w_buf, x_buf, sw, sx, 0, acc)
                    g1 = _group_products(w_buf, x_buf, sw, sx, 1, acc)
                if BASE_SLAB:
                    b0, b1 = _slab_bases(slab, gcol, i)
                else:
                    nb0, nb1 = _bases(base_row, in_rows, groups, k_block0, i + 1, n_blocks)
                if (BOUND & 2) == 0:
                    g0, g1 = warpgroup_mma_wait(num_outstanding=0, deps=(g0, g1))
                _free_block((w_buf, x_buf), bars[2:], c)
                acc = _scaled(acc, g0, g1, b0, b1)
                if not BASE_SLAB:
                    b0, b1 = nb0, nb1
                c += 1
        if not ESC_FIRST:
            acc = _escapes(acc, rows, in_rows, escapes, x_ptr, stride_x, m, col0, col1,
                           ESC_BATCH)  # fmt: skip
        _store(acc, rows, in_rows, row0, split, m, work[4], output, OUT_F32, EPILOGUE)


@gluon.jit
def _store(acc, rows, in_rows, row0, split, m, half_n, output, OUT_F32: gl.constexpr,
           EPILOGUE: gl.constexpr):  # fmt: skip
    """A unit's sums acc [BLOCK_N, 16] stored: a K split's fp32 partial sums (OUT_F32), or
    rounded to bf16, plus the residual (RESIDUAL, rounded again), or SwiGLU's silu(gate) * up
    (each rounded first, as kernels/common.store_swiglu), its columns at their pair_position
    where Y_PAIR (the input of a w12_ws down). output: (y, its row stride, a split's stride,
    the residual, its row stride)."""
    SWIGLU: gl.constexpr = EPILOGUE[0]
    RESIDUAL: gl.constexpr = EPILOGUE[1]
    Y_PAIR: gl.constexpr = EPILOGUE[2]
    y_ptr, stride_y, stride_split, res_ptr, stride_r = output
    if SWIGLU:
        BLOCK_N: gl.constexpr = acc.type.shape[0]
        HALF: gl.constexpr = BLOCK_N // 2
        # rows j and j + HALF in one thread (the row's top bit a register's), so that the split
        # into gates and ups moves nothing
        both: gl.constexpr = gl.BlockedLayout([1, 1], [32, 1], [1, gl.num_warps()], [0, 1])
        a = gl.convert_layout(acc, both).to(gl.bfloat16).to(gl.float32)
        g, up = gl.split(gl.permute(gl.reshape(a, [2, HALF, 16]), (1, 2, 0)))
        silu = (g / (1.0 + gl.exp(-g))).to(gl.bfloat16).to(gl.float32)
        y = (silu * up).to(gl.bfloat16)
        cols = row0 + gl.arange(0, HALF, layout=gl.SliceLayout(1, y.type.layout))
        tokens = gl.arange(0, 16, layout=gl.SliceLayout(0, y.type.layout))
        at = pair_position(cols) if Y_PAIR else cols
        mask = (cols < half_n)[:, None] & (tokens[None, :] < m)
        gl.store(y_ptr + tokens[None, :] * stride_y + at[:, None], y, mask=mask)
    else:
        tokens = gl.arange(0, 16, layout=gl.SliceLayout(0, acc.type.layout))
        out = y_ptr + split * stride_split + tokens[None, :] * stride_y + rows[:, None]
        mask = in_rows[:, None] & (tokens[None, :] < m)
        if OUT_F32:
            gl.store(out, acc, mask=mask)
        elif RESIDUAL:
            res = gl.load(res_ptr + tokens[None, :] * stride_r + rows[:, None], mask=mask)
            y = acc.to(gl.bfloat16).to(gl.float32) + res.to(gl.float32)
            gl.store(out, y.to(gl.bfloat16), mask=mask)
        else:
            gl.store(out, acc.to(gl.bfloat16), mask=mask)


@gluon.jit
def _escape_entry(escapes, start, count, e, col0, col1):
    """Escape e of each row (its column, its value as fp32; 0.0 where the row has no escape e
    in columns col0 .. col1 - 1)."""
    _, esc_col_ptr, esc_bits_ptr = escapes
    live = e < count
    col = gl.load(esc_col_ptr + start + e, mask=live, other=0)
    bits = gl.load(esc_bits_ptr + start + e, mask=live, other=0)  # (beside the column's load,
    live = live & (col >= col0) & (col < col1)  # not behind it: one round of latency fewer)
    value = gl.where(live, bits.to(gl.bfloat16, bitcast=True).to(gl.float32), 0.0)
    return gl.where(live, col, 0), value


@gluon.jit
def _escape_input(x_ptr, stride_x, m, col, value, acc, PAIR: gl.constexpr = True):
    """The input's [rows, 16] values at each row's escape column, in acc's layout (0 where value
    is 0: no escape; the input is in pair_order, or with PAIR False in its natural order)."""
    tokens = gl.arange(0, 16, layout=gl.SliceLayout(0, acc.type.layout))
    at = pair_position(col) if PAIR else col
    return gl.load(x_ptr + tokens[None, :] * stride_x + at[:, None],
                   mask=(value != 0.0)[:, None] & (tokens[None, :] < m), other=0.0)  # fmt: skip


@gluon.jit
def _escape_lists(rows, in_rows, escapes):
    """Each row's escape list in the table: its start and its length."""
    row_ptr = escapes[0]
    start = gl.load(row_ptr + rows, mask=in_rows, other=0)
    return start, gl.load(row_ptr + rows + 1, mask=in_rows, other=0) - start


@gluon.jit
def _escape_rest(acc, start, count, first, escapes, x_ptr, stride_x, m, col0, col1,
                 PAIR: gl.constexpr):  # fmt: skip
    """acc plus each row's escapes from entry `first` on, in turn: each entry's column and
    value, then its input, behind the one before."""
    for e in range(first, gl.max(count, axis=0)):
        col, value = _escape_entry(escapes, start, count, e, col0, col1)
        xs = _escape_input(x_ptr, stride_x, m, col, value, acc, PAIR)
        acc = acc + value[:, None] * xs.to(gl.float32)
    return acc


@gluon.jit
def _escape_table(rows, in_rows, escapes, col0, col1):
    """The constants that ESC_BATCH 4's sums read first: each row's list (start, count) and its
    first four entries in columns col0 .. col1 - 1 (`_escape_entry`), in one round of
    independent loads after the lists'. Nothing another kernel writes: w12_tc's ESC_EARLY reads
    them before PDL's wait."""
    start, count = _escape_lists(rows, in_rows, escapes)
    return _table_entries(start, count, escapes, col0, col1)


@gluon.jit
def _table_entries(start, count, escapes, col0, col1):
    """`_escape_table` of rows whose lists (start, count) are loaded: the lists and each row's
    first four entries in columns col0 .. col1 - 1, in one round of independent loads (w12_row's
    ESC_EARLY asks for the lists beside other loads first)."""
    c0, v0 = _escape_entry(escapes, start, count, 0, col0, col1)
    c1, v1 = _escape_entry(escapes, start, count, 1, col0, col1)
    c2, v2 = _escape_entry(escapes, start, count, 2, col0, col1)
    c3, v3 = _escape_entry(escapes, start, count, 3, col0, col1)
    return start, count, (c0, c1, c2, c3), (v0, v1, v2, v3)


@gluon.jit
def _escape_sums(acc, table, escapes, x_ptr, stride_x, m, col0, col1, PAIR: gl.constexpr = True):
    """acc plus the escapes of `_escape_table`'s rows: its four entries' inputs at once, then
    the rest of each row's list in turn (`_escape_rest`)."""
    start, count, cols, values = table
    c0, c1, c2, c3 = cols
    v0, v1, v2, v3 = values
    x0 = _escape_input(x_ptr, stride_x, m, c0, v0, acc, PAIR).to(gl.float32)
    x1 = _escape_input(x_ptr, stride_x, m, c1, v1, acc, PAIR).to(gl.float32)
    x2 = _escape_input(x_ptr, stride_x, m, c2, v2, acc, PAIR).to(gl.float32)
    x3 = _escape_input(x_ptr, stride_x, m, c3, v3, acc, PAIR).to(gl.float32)
    acc = acc + v0[:, None] * x0
    acc = acc + v1[:, None] * x1
    acc = acc + v2[:, None] * x2
    acc = acc + v3[:, None] * x3
    return _escape_rest(acc, start, count, 4, escapes, x_ptr, stride_x, m, col0, col1, PAIR)


@gluon.jit
def _escapes(acc, rows, in_rows, escapes, x_ptr, stride_x, m, col0, col1, BATCH: gl.constexpr,
             PAIR: gl.constexpr = True):  # fmt: skip
    """acc plus the escapes of these rows in columns col0 .. col1 - 1. BATCH 4: each row's first
    four at once (their entries in one round of independent loads, their inputs in a second:
    `_escape_table`, `_escape_sums`), then the rest of each row's list in turn; 0: all in turn,
    each a chain of dependent loads (the row's offsets, the entry, the input there) behind the
    one before (run 279's)."""
    if BATCH == 4:
        table = _escape_table(rows, in_rows, escapes, col0, col1)
        acc = _escape_sums(acc, table, escapes, x_ptr, stride_x, m, col0, col1, PAIR)
    else:
        start, count = _escape_lists(rows, in_rows, escapes)
        acc = _escape_rest(acc, start, count, 0, escapes, x_ptr, stride_x, m, col0, col1, PAIR)
    return acc


@gluon.jit
def _w12_ws_kernel(
    low_desc, code_desc, x_desc,
    x_ptr, base_ptr, row_ptr, esc_col_ptr, esc_bits_ptr, y_ptr, res_ptr,
    m, n, k, units, tiles, blocks_per_split, stride_x, base_stride, groups, stride_y,
    stride_split, stride_r,
    BLOCK_N: gl.constexpr, STAGES: gl.constexpr, W_STAGES: gl.constexpr, X_STAGES: gl.constexpr,
    EARLY_FREE: gl.constexpr, MMA_LAG: gl.constexpr, RESTORE: gl.constexpr,
    DECODE_WARPS: gl.constexpr, DECODE_REGS: gl.constexpr, SPLIT_K: gl.constexpr,
    BOUND: gl.constexpr, ESC_FIRST: gl.constexpr, ESC_BATCH: gl.constexpr,
    BASE_SLAB: gl.constexpr, SWIGLU: gl.constexpr, RESIDUAL: gl.constexpr,
    Y_PAIR: gl.constexpr, num_warps: gl.constexpr, PDL: gl.constexpr = False,
):  # fmt: skip
    """Each program takes work units pid, pid + programs, ... (`_unit`): one a program, or with
    fewer programs than units, persistent (the rings run on across units)."""
    work = (units, tiles, blocks_per_split, gl.cdiv(k, WBLOCK), n // 2)
    half: gl.constexpr = WBLOCK // 2  # a plane's row in a buffer: 128 bytes
    low_buf = gl.allocate_shared_memory(gl.uint8, [2 * STAGES, BLOCK_N, half], low_desc.layout)
    code_buf = gl.allocate_shared_memory(gl.uint8, [STAGES, BLOCK_N, half], code_desc.layout)
    x_buf = gl.allocate_shared_memory(gl.bfloat16, [4 * X_STAGES, 16, WPAIR], x_desc.layout)
    w_layout: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16,
                                                  rank=2)  # fmt: skip
    w_buf = gl.allocate_shared_memory(gl.bfloat16, [4 * W_STAGES, BLOCK_N, WPAIR], w_layout)
    bar_layout: gl.constexpr = mbarrier.MBarrierLayout()
    in_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar_layout)
    in_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar_layout)
    w_ready = gl.allocate_shared_memory(gl.int64, [W_STAGES, 1], bar_layout)
    w_empty = gl.allocate_shared_memory(gl.int64, [W_STAGES, 1], bar_layout)
    x_ready = gl.allocate_shared_memory(gl.int64, [X_STAGES, 1], bar_layout)
    x_empty = gl.allocate_shared_memory(gl.int64, [X_STAGES, 1], bar_layout)
    for i in gl.static_range(STAGES):
        mbarrier.init(in_ready.index(i), count=1)
        mbarrier.init(in_empty.index(i), count=1)  # the decoders
    for i in gl.static_range(X_STAGES):
        mbarrier.init(x_ready.index(i), count=1)
        mbarrier.init(x_empty.index(i), count=1)  # the multiplier
    for i in gl.static_range(W_STAGES):
        mbarrier.init(w_ready.index(i), count=1)
        mbarrier.init(w_empty.index(i), count=1)
    bars = (in_ready, in_empty, w_ready, w_empty, x_ready, x_empty)

    gl.warp_specialize(
        [
            (_multiplier, ((x_buf, w_buf), bars, work, (base_ptr, base_stride, groups), n,
                           (row_ptr, esc_col_ptr, esc_bits_ptr), x_ptr, stride_x, m,
                           (y_ptr, stride_y, stride_split, res_ptr, stride_r), BLOCK_N,
                           SPLIT_K > 1, BOUND, ESC_FIRST, ESC_BATCH, BASE_SLAB, MMA_LAG, RESTORE,
                           (SWIGLU, RESIDUAL, Y_PAIR), num_warps, PDL)),
            (_decoder, ((low_buf, code_buf, w_buf), bars, work, (base_ptr, base_stride, groups),
                        n, BLOCK_N, DECODE_WARPS, BOUND, EARLY_FREE, RESTORE, SWIGLU)),
            (_loader, ((low_desc, code_desc, x_desc), (low_buf, code_buf, x_buf), bars, work,
                       BLOCK_N, SWIGLU, BOUND, PDL)),
        ],
        [DECODE_WARPS, 1],
        [DECODE_REGS, 24],
    )  # fmt: skip


def prmt(a: torch.Tensor, b: torch.Tensor, selector: int) -> torch.Tensor:
    """PTX prmt.b32 in PyTorch (int32 tensors): byte i of the result is byte (selector >> 4 i)
    & 7 of the 8 bytes {b, a} (a's bytes 0-3, b's 4-7)."""
    both = (a.long() & 0xFFFFFFFF) | ((b.long() & 0xFFFFFFFF) << 32)
    out = torch.zeros_like(both)
    for i in range(4):
        pick = (selector >> (4 * i)) & 7
        out |= ((both >> (8 * pick)) & 0xFF) << (8 * i)
    return (out - ((out >> 31) << 32)).to(torch.int32)  # back to a signed 32-bit word


def restore_words(pair: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """`_restore` in PyTorch (int32 words; shift = b << 8, broadcast): each half's exponent
    raised by 2b where it is not 0."""
    w = pair.long() & 0xFFFFFFFF
    e = (w >> 7) & 0x000F000F
    nz = (e & 0xFFFF).clamp(max=1) | ((e >> 16).clamp(max=1) << 16)  # min.u16x2(e, 1)
    out = (w + nz * shift.long()) & 0xFFFFFFFF
    return (out - ((out >> 31) << 32)).to(torch.int32)


def _pair_words(weight: W12Weight, restore: bool) -> torch.Tensor:
    """The decoded stage's bf16 values as `_pair` (and with `restore`, `_restore`) make them:
    [N, block, pair, 64], pair p = 2h + q0 / 2 holding group h."""
    n, kp = weight.low.shape
    words = weight.low.view(torch.int32).view(n, kp // BLOCK, 2, 32)  # [N, block, half, i]
    codes = weight.codes.view(torch.int32).view(n, kp // BLOCK, 32)
    base = torch.nn.functional.pad(weight.base, (0, 2 * (kp // BLOCK) - weight.base.shape[1]))
    base = base.view(n, kp // BLOCK, 2).to(torch.int32)  # [N, block, group]
    pieces = []
    for h in range(2):
        for q0 in (0, 2):
            nib = (codes >> (8 * q0 + 4 * h)) & 0x0F0F
            high = nib + (nib & 0x0808) * 15
            sel = 0x5140 if q0 == 0 else 0x5342
            pair = prmt(words[:, :, h], high, sel)  # [N, block, 32] words
            if restore:
                pair = restore_words(pair, base[:, :, h : h + 1] << 8)
            pieces.append(pair.contiguous().view(torch.bfloat16))  # [N, block, 64]
    return torch.stack(pieces, 2)


def restored_weights(weight: W12Weight) -> torch.Tensor:
    """RESTORE's decoded stages put back in natural column order: [N, Kp] bf16, every weight's
    own bits where it is not escaped (escaped ones +0)."""
    n, kp = weight.low.shape
    values = _pair_words(weight, restore=True).reshape(n, kp)  # pair_order's columns
    at = pair_order(torch.arange(kp, device=values.device)[None, :].float())[0].long()
    out = torch.empty_like(values)
    out[:, at] = values
    return out


def emulate(x: torch.Tensor, weight: W12Weight, restore: bool = False) -> torch.Tensor:
    """The kernel's arithmetic in PyTorch (any device; fp32 sums): the words of each block turned
    into pair-ordered bf16 values as `_pair` does, each group's sums times 2^(2b) (`restore`:
    the values are the weights, summed as they are), the escapes added; [M, N] fp32. Ties the
    bit work to the format where no GPU runs the kernel."""
    n, kp = weight.low.shape
    r = _pair_words(weight, restore).float()  # [N, block, pair, 64]
    base = torch.nn.functional.pad(weight.base, (0, 2 * (kp // BLOCK) - weight.base.shape[1]))
    scale = torch.exp2(2 * base.double()).float().view(n, kp // BLOCK, 2)  # [N, block, group]
    if restore:
        scale = torch.ones_like(scale)
    xp = pair_order(x.float()).view(x.shape[0], kp // BLOCK, 4, PAIR)  # [M, block, pair, 64]
    sums = torch.einsum("nbpc,mbpc->nbpm", r, xp)  # [N, block, pair, M]
    group = sums.view(n, kp // BLOCK, 2, 2, -1).sum(3)  # pairs 2h, 2h + 1 are group h
    y = (group * scale[..., None]).sum((1, 2))  # [N, M]
    rows = torch.repeat_interleave(torch.arange(n, device=x.device), weight.row_ptr.diff())
    if rows.numel():
        value = weight.esc_bits.view(torch.bfloat16).float()
        y.index_put_((rows,), value[:, None] * x.float()[:, weight.esc_col.long()].T,
                     accumulate=True)  # fmt: skip
    return y.T


def layouts(swizzle: int) -> tuple:
    """The shared layouts TMA writes: the planes' (rows of 128 bytes, swizzled `swizzle` bytes
    wide: 128 or 0) and the input pairs' (64 bf16 a row, 128-byte swizzle, as wgmma reads)."""
    planes = gl.NVMMASharedLayout(swizzle_byte_width=swizzle, element_bitwidth=8, rank=2)
    return planes, gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)


def descriptors(weight: W12Weight, xp: torch.Tensor, rows: int, swizzle: int) -> tuple:
    """TMA descriptors of the planes ([rows, 128] bytes: the low plane's block in two, the
    codes' in one; rows: a tile's, or half of it for SwiGLU's gates and ups) and of the
    pair-ordered input ([16, 64] bf16 a pair)."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    planes, x_layout = layouts(swizzle)
    low = TensorDescriptor.from_tensor(weight.low, [rows, BLOCK // 2], planes)
    codes = TensorDescriptor.from_tensor(weight.codes, [rows, BLOCK // 2], planes)
    x = TensorDescriptor.from_tensor(xp, [16, PAIR], x_layout)
    return low, codes, x


def kernel_constants(cfg: dict, per_split: int) -> dict:
    """The kernel's constexprs from a tile (but SPLIT_K and the epilogue's), for units of
    per_split blocks: the slab's width (`base_slab`; MMA_LAG needs one, else off) and the input
    ring's depth (X_STAGES 0: STAGES + 2)."""
    host_only = ("SWIZZLE", "PERSISTENT", "MAXNREG", "SPLIT_K")  # descriptors, grid, launch
    out = {name: cfg[name] for name in TILE if name not in host_only}
    out["BASE_SLAB"] = base_slab(per_split, cfg["BASE_SLAB"])
    out["X_STAGES"] = cfg["X_STAGES"] or cfg["STAGES"] + 2
    out["MMA_LAG"] = cfg["MMA_LAG"] if out["BASE_SLAB"] else 0
    return out


def base_slab(per_split: int, on: int) -> int:
    """The group-base columns a program holds of a unit (two a block, a power of 2 from 16, as
    the accumulator's layout tiles them); 0 (each block's loaded in the loop) when off or past
    64 (32 blocks a unit: 32 registers a thread)."""
    width = max(16, triton.next_power_of_2(2 * per_split))
    return width if on and width <= 64 else 0


def split_k(n: int, k: int, block_n: int, sms: int) -> int:
    """The K split that gives at least one program an SM (whole blocks a split)."""
    tiles, blocks = triton.cdiv(n, block_n), triton.cdiv(k, BLOCK)
    return max(1, min(blocks, sms // tiles))


def w12_ws_linear(
    x: torch.Tensor,
    weight: W12Weight,
    tile: dict | None = None,
    *,
    x_order: str = "natural",
    swiglu: bool = False,
    residual: torch.Tensor | None = None,
    y_order: str = "natural",
    norm_after: NormAfter | None = None,
) -> torch.Tensor:
    """x [M, K] bf16 (M 1-16, CUDA, sm_90) @ weight.T -> [M, N] bf16, on the warp-specialized
    kernel. tile: TILE's keys to change. x_order "pair": x is pair_order's [M, Kp] already (its
    producer wrote it so: rmsnorm(pair=True), or a w12_ws SwiGLU with y_order "pair"); else the
    host permutes it. swiglu: weight is [gate | up] (N even), y = silu(gate) * up [M, N / 2], no
    K split; y_order "pair" then writes y in pair_order (N / 2 a multiple of 256). residual
    [M, N]: y = residual + x @ weight.T (w12_linear's contract). norm_after: as w12_linear's
    (kernels/w12_linear.sum_splits)."""
    cfg = TILE | (tile or {})
    unknown = set(cfg) - set(TILE)
    if unknown:
        raise ValueError(f"w12_ws_linear: unknown tile keys {sorted(unknown)}")
    if cfg["MMA_LAG"] and (cfg["BOUND"] or not cfg["BASE_SLAB"]):
        raise ValueError("w12_ws_linear: MMA_LAG takes BASE_SLAB on and no BOUND")
    blocks = triton.cdiv(weight.columns, BLOCK)
    restore_bad = cfg["BOUND"] & ~1 or cfg["MMA_LAG"] or (swiglu and blocks > 16)
    if cfg["RESTORE"] and (restore_bad or cfg["SPLIT_K"] and blocks > 16 * cfg["SPLIT_K"]):
        raise ValueError("w12_ws_linear: RESTORE takes BOUND 0 or 1, no MMA_LAG and at most 16 "
                         "blocks a K split (swiglu: K <= 4096)")  # fmt: skip
    m, k = x.shape[0], weight.columns
    n = weight.shape[0]
    if swiglu and cfg["SPLIT_K"] > 1:
        raise ValueError("w12_ws_linear swiglu wants an even N, no residual and no K split")
    check_pair_call("w12_ws_linear", x, weight, x_order, swiglu, residual, y_order)
    cut = off_row_multiple(w12_ws_linear, x, weight, tile, swiglu, residual, x_order=x_order)
    if cut is not None:
        return cut
    xp = pair_order(x) if x_order == "natural" else x.contiguous()
    rows = cfg["BLOCK_N"] // (2 if swiglu else 1)  # of N a unit covers (SwiGLU: and their ups)
    low, codes, xd = descriptors(weight, xp, rows, cfg["SWIZZLE"])
    sms = launch._sm_count(x.device.index or 0)
    tiles = triton.cdiv(n // 2 if swiglu else n, rows)
    splits = 1 if swiglu else cfg["SPLIT_K"] or split_k(n, k, cfg["BLOCK_N"], sms)
    if cfg["RESTORE"]:  # its decoders hold a unit's bases on a warp's 32 lanes: 16 blocks
        splits = max(splits, triton.cdiv(blocks, 16))
    per_split = triton.cdiv(blocks, splits)
    splits = triton.cdiv(blocks, per_split)  # no empty split
    y = torch.empty(m, n // 2 if swiglu else n, device=x.device, dtype=torch.bfloat16)
    out = y if splits == 1 else torch.empty(splits, m, n, device=x.device, dtype=torch.float32)
    units = tiles * splits
    grid = (min(units, sms * cfg["PERSISTENT"]) if cfg["PERSISTENT"] else units,)
    regs = dict(maxnreg=cfg["MAXNREG"]) if cfg["MAXNREG"] else {}
    res = residual.contiguous() if residual is not None else y
    launched = launch.pdl(x, multiply=True, programs=grid[0])
    _w12_ws_kernel[grid](
        low, codes, xd, xp, weight.base, weight.row_ptr, weight.esc_col, weight.esc_bits, out, res,
        m, n, k, units, tiles, per_split, xp.stride(0), weight.base.stride(0),
        weight.base.shape[1], y.stride(0), m * n, res.stride(0),
        **kernel_constants(cfg, per_split), SPLIT_K=splits, SWIGLU=int(swiglu),
        RESIDUAL=residual is not None, Y_PAIR=y_order == "pair", num_warps=4, **regs,
        PDL=launched["PDL"], launch_pdl=launched["launch_pdl"],
    )  # fmt: skip
    if splits > 1:
        sum_splits(out, y, res if residual is not None else None, norm_after)
    return y


def check_pair_call(what: str, x: torch.Tensor, weight: W12Weight, x_order: str, swiglu: bool,
                    residual: torch.Tensor | None, y_order: str) -> None:  # fmt: skip
    """The checks of a 1-16-row multiply whose kernel reads pair order (this one, w12_tc): x
    [1-16, K] bf16 in `x_order` ("natural", or "pair": pair_order's [M, Kp]) where the Gluon
    kernels run, group size 128, SwiGLU's even N and no residual, y_order "pair" (swiglu only,
    N / 2 a multiple of 256), the residual's shape."""
    m, k, n = x.shape[0], weight.columns, weight.shape[0]
    if weight.group_size != BLOCK // 2:
        raise ValueError(f"{what} wants group size {BLOCK // 2}, got {weight.group_size}")
    if x_order not in ("natural", "pair"):
        raise ValueError(f"{what}: x_order 'natural' or 'pair', got {x_order!r}")
    if y_order not in ("natural", "pair") or (y_order == "pair" and not swiglu):
        raise ValueError(f"{what}: y_order 'pair' is for swiglu only, got {y_order!r}")
    if swiglu and (n % 2 or residual is not None):
        raise ValueError(f"{what} swiglu wants an even N, no residual and no K split")
    if y_order == "pair" and (n // 2) % BLOCK:
        raise ValueError(f"y_order 'pair' wants N / 2 a multiple of {BLOCK}, got {n // 2}")
    if residual is not None and (residual.shape != (m, n) or residual.dtype != torch.bfloat16):
        raise ValueError(f"{what}: residual must be [{m}, {n}] bf16")
    cols = padded(k) if x_order == "pair" else k
    wrong = not 1 <= m <= 16 or x.shape[1] != cols or x.dtype != torch.bfloat16
    if wrong or not launch.gluon_device(x):
        raise ValueError(f"{what} wants x [1-16, {cols}] bf16 on CUDA ({x_order} order), "
                         f"got {tuple(x.shape)} {x.dtype} on {x.device}")  # fmt: skip


# The products of w12_ws and w12_tc are wrong on the GPU where N is not a multiple of 16 (runs
# 302-310: N 4100 and 4104 wrong, 4112 right, the same weights padded to 4112 rows right):
# Triton 3.6's LLVM NVPTX backend lowers the SLP-vectorized `shl <2 x i32> <tid, 2 * (tid & 3)>`
# of the meta warp's row offsets (the variant compiled without a 16-divisible N) as one 64-bit
# shift of the packed pair, so the first element's bits above 32 spill into the second: the
# first scale-word row of each lane becomes (tid >> 1) | 2 (tid & 3) instead of 2 (tid & 3)
# (docs/LOG.md, session 58). The launchers pad such N (`padded_rows`); the routes take only N
# multiples of 16 (`pair_chain`, w12_tc.pair_input).
ROW_MULTIPLE = 16


def padded_rows(weight: W12Weight, rows: int, halves: bool = False) -> W12Weight:
    """`weight` with zero rows added up to `rows` (their group bases 0, no escapes: they
    multiply to 0): a copy of the planes, for an N the kernels cannot take as it is. halves
    (SwiGLU's [gate | up]): each half padded to rows / 2, the ups after the gates' padding."""
    n = weight.shape[0]
    if rows <= n:
        return weight
    cuts = [(0, n // 2), (n // 2, n)] if halves else [(0, n)]
    extra = (rows - n) // len(cuts)

    def pad(t: torch.Tensor) -> torch.Tensor:
        zeros = t.new_zeros((extra, *t.shape[1:]))
        return torch.cat([piece for a, b in cuts for piece in (t[a:b], zeros)])

    offsets = [weight.row_ptr[:1]]
    for a, b in cuts:  # absolute offsets: a padding row repeats the offset before it
        offsets += [weight.row_ptr[a + 1 : b + 1], weight.row_ptr[b : b + 1].repeat(extra)]
    return dataclasses.replace(weight, low=pad(weight.low), codes=pad(weight.codes),
                               base=pad(weight.base), row_ptr=torch.cat(offsets))  # fmt: skip


def off_row_multiple(linear, x, weight, tile, swiglu, residual, **kw) -> torch.Tensor | None:
    """`linear`'s y where N is not a multiple of ROW_MULTIPLE: the weight padded (zero rows;
    SwiGLU's gates and ups each), the residual with it, y cut back; None where N is one."""
    n = weight.shape[0]
    if n % ROW_MULTIPLE == 0:
        return None
    rows = -(-n // ROW_MULTIPLE) * ROW_MULTIPLE
    if swiglu:
        half = -(-(n // 2) // (ROW_MULTIPLE // 2)) * (ROW_MULTIPLE // 2)
        y = linear(x, padded_rows(weight, 2 * half, halves=True), tile, swiglu=True, **kw)
        return y[:, : n // 2].contiguous()
    if residual is not None:
        residual = torch.nn.functional.pad(residual, (0, rows - n))
    y = linear(x, padded_rows(weight, rows), tile, residual=residual, **kw)
    return y[:, :n].contiguous()


def verify_route(gate_up, down, x: torch.Tensor) -> bool:
    """Whether a forward of x's rows takes its W12 gate|up and down through w12_ws (VERIFY on,
    `pair_chain`)."""
    return VERIFY and pair_chain(gate_up, down, x)


def pair_chain(gate_up, down, x: torch.Tensor, min_rows: int = 2) -> bool:
    """Whether x's rows can run gate|up and down in pair order on a Gluon kernel (w12_ws, w12_tc):
    both W12, min_rows-16 rows on a Hopper GPU (or the emulator), group size 128, K and N / 2
    multiples of 256 so that the pair order runs from the norm through the SwiGLU to the down."""
    if not isinstance(gate_up, W12Weight) or not isinstance(down, W12Weight):
        return False
    if not min_rows <= x.shape[0] <= 16 or not launch.gluon_routes(x):  # compiled, sm_90+
        return False
    half = gate_up.shape[0] // 2
    shapes = gate_up.columns % BLOCK == 0 and half % BLOCK == 0 and down.columns == half
    # (and the down's N a multiple of 16: ROW_MULTIPLE, above)
    shapes = shapes and down.shape[0] % ROW_MULTIPLE == 0
    return shapes and gate_up.group_size == down.group_size == BLOCK // 2


def compile_sm90(tile: dict | None = None, swiglu: bool = False, residual: bool = False,
                 blocks: int = 16, pdl: bool = False):  # fmt: skip
    """The kernel compiled for sm_90a without a GPU (kernels/aot.compile_kernel; aot.usage
    reads its registers): the checks a CPU can make of it. swiglu: with y in pair order.
    blocks: of a unit (K / 256 / the K split), which sets the group bases' slab. pdl: with
    programmatic dependent launch's waits."""
    from specpilot.kernels import aot

    split = 1 if swiglu else (tile or {}).get("SPLIT_K") or 2
    cfg = TILE | (tile or {}) | dict(SPLIT_K=split)
    bn = cfg["BLOCK_N"] // (2 if swiglu else 1)  # the planes' boxes' rows
    planes, x_layout = layouts(cfg["SWIZZLE"])
    types = dict(
        low_desc=f"tensordesc<u8[{bn}, {BLOCK // 2}],{planes!r}>",
        code_desc=f"tensordesc<u8[{bn}, {BLOCK // 2}],{planes!r}>",
        x_desc=f"tensordesc<bf16[16, {PAIR}],{x_layout!r}>",
        x_ptr="*bf16", base_ptr="*u8", row_ptr="*i32", esc_col_ptr="*i32", esc_bits_ptr="*i16",
        y_ptr="*fp32" if cfg["SPLIT_K"] > 1 else "*bf16", res_ptr="*bf16",
    )  # fmt: skip
    consts = kernel_constants(cfg, blocks) | dict(SPLIT_K=cfg["SPLIT_K"], num_warps=4)
    consts |= dict(SWIGLU=int(swiglu), RESIDUAL=residual, Y_PAIR=swiglu, PDL=pdl)
    if cfg["MAXNREG"]:
        consts["maxnreg"] = cfg["MAXNREG"]
    return aot.compile_kernel(_w12_ws_kernel, types, consts)
