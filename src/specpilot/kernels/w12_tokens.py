"""W12 multiplies of 2-16 token rows on 16-row tiles (Gluon, sm_90): kernels/w12_row.py's MMA
tiles with the tokens in the mma's B columns; the verify's o runs here (VERIFY).

Why: issue 7's speculative target needs the verify's 16-row W12 multiplies near their bytes'
floor. kernels/w12_tc.py multiplies 64 weight rows a unit on wgmma, so o and the down (N 4096)
have 64 units for 132 SMs and split K in two, with a split-sum launch after them: run 339 (H200,
the verify graph, us a layer exit to exit) o 9.44 plus its split sum 2.51 against a 5.96 bound,
where the one-row decode's o takes 7.81. On 16-row tiles o has 256 tiles, no split and no split
sum. w12_row's MMA tiles (ROW_TILES 12, 13) already multiply 16 rows on mma.sync m16n8k16 with
x in B's every column; here B's 8 columns are 8 tokens, and a second mma on the same decoded A
registers takes tokens 8-15: the decode (the work a weight) is the one-row tile's, and a weight
costs two mmas' share more.

The program (one an SM, persistent over tiles of 16 rows and all of K):
- the loader warp (`_loader`): x, all M tokens of it in kernels/w12_ws's pair order, into
  shared memory once (`_x_copies`: boxes [16 tokens, 64 columns], a pair slot of a block each,
  rows past M zeros; 16 x K x 2 bytes, 128 kB at K 4096, so K is at most `max_k`), then each
  tile's stages of 4 blocks of its two W12 planes into a ring of STAGES stages, the 4 blocks'
  boxes one under the other so that the 4 warps read them as one [64, 32] word view; past
  `max_k` (the verify's down: STREAM) x comes stage by stage through a second ring instead
  (TILE's XS, TILES: `_stream_loader`, `_stream_multiplier`);
- the meta warp: each tile's scale words (`w12_row._scale_words`) and its escapes' sums [16
  rows, 16 tokens] (kernels/w12_ws's, x read in pair order from global memory);
- 4 multiplying warps, a block of each stage a warp (`_token_stage`: w12_row's MMA 1 decode, B
  from x's pairs of 8 tokens, two mmas), their sums added over the warps in shared memory at the
  tile's end (`_token_sums`), the escapes added, and the store (plain, or plus the residual, and
  the next norm handed on: `_store_tile`).
Shared memory: the planes and x are written with TMA's 128-byte swizzle and each lane reads its
8 words of two rows of a half block at once (WORDS16: two 16-byte loads a row, no bank
conflicts), then picks a k-step's word from its registers (w12_row's `_words`, which its MMA
tiles use too since session 71; as run 343 timed them they read one word a lane a k-step from
unswizzled rows 128 bytes apart: 8 rows on each of 4 banks, ~0.13 passes a weight, which fits
their times: docs/LOG.md session 71).
Products are of the exact weights (zeros and escapes as +-0), so the sums differ from
w12_linear_reference's only in order.

CUDA sm_90 only; tests/test_w12_tokens.py runs the kernel's own code on kernels/emulate.py (the
CPU) and on a Hopper GPU against w12_linear_reference, and compiles it for sm_90a.
bench/w12_tokens_speed.py times it beside w12_tc's split o and its split sum: run 345 (H100,
cold L2) o at 16 tokens 12.39 us against w12_tc's 14.31, the verify graph -0.06 ms with VERIFY
on; at one token it loses to w12_row's FFMA tile (o 14.19 against 12.82). Run 344's fault is a
race, found by bench/w12_tokens_probe.py (run 346) and mended by FENCE's proxy fence: a ring
stage was freed with its last loads still in flight, on the GPU only (the emulator's partitions
read at once; its random schedules found no fault).
"""

from __future__ import annotations

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

from specpilot.formats.w12 import BLOCK, W12Weight, padded
from specpilot.kernels import launch, trace
from specpilot.kernels.elementwise import NormAfter
from specpilot.kernels.w12_row import (
    GROUP_CHUNK,
    LANES2,
    MMA_WARPS,
    PLAIN4,
    SWIZZLE,
    SWIZZLED_WORDS,
    WBLOCK,
    _barriers,
    _lanes,
    _mma_sync,
    _scale_words,
    _times,
    _words,
    a_operand,
    fence_cta,
    fence_init,
    fence_proxy,
    stacked_planes,
)
from specpilot.kernels.w12_tc import epilogue_inputs, hand_out
from specpilot.kernels.w12_tc import layouts as tc_layouts
from specpilot.kernels.w12_ws import (
    _escapes,
    _grid_wait,
    _let_next_launch,
    _tile_rows,
    _trace_mark,
    pair_order,
)

TOKENS = gl.constexpr(16)  # the mma's 8 columns, twice
ROWS = gl.constexpr(16)  # weight rows a tile: the mma's M
SB = gl.constexpr(4)  # blocks a stage: one a multiplying warp
# the tile: STAGES (2 or 4: the views take powers of 2), the meta warp's SLOTS, ESC_BATCH as
# w12_row's
TILE = dict(STAGES=2, SLOTS=2, ESC_BATCH=4, XS=0, TILES=1)
# XS, TILES (x streamed): XS 0, x resident (all of K in shared memory, loaded once a program);
# 2-4, x through a ring of XS stages of 4 blocks beside the planes' ring, loaded once a round
# of TILES tiles (1 or 2, with SLOTS at least TILES) whose stages alternate (stage-major: the
# round's accumulators all live), so that a K past `max_k` fits: the verify's down (K 12288:
# x would take 384 kB). A round reads x's 16 tokens (32 kB a stage) from L2 for its tiles'
# planes (24 kB a stage each): at TILES 2 x's L2 reads are 0.67 of the HBM bytes. Run 353
# (H100, the down at 16 tokens alone, cold L2, the residual; 25.43 us bound): rounds of 2
# tiles lose (XS 2: 34.47 us; STAGES 4 36.60; and XS 3 37.50) where one tile a round (x read
# again for each tile) wins: XS 2 31.07, **STAGES 4, XS 3 30.73** (83%), against w12_tc's
# split and its split sum 33.06 and cuBLAS's 44.41.
STREAM_TILE = dict(STAGES=4, XS=3, TILES=1)
# VERIFY (on): the engine's 2-16-row W12 multiplies whose input is in pair order and that end
# in the residual add (the verify's o: `route`) on this kernel, the next norm handed on from
# its epilogue (NormAfter.handed: u and a slot of squares a tile) where the forward asks for
# it, instead of w12_tc's K split and its split-sum launch. Run 349 (H100, the W12 verify graph
# back to back, with the proxy fence): Qwen3-8B 4.615 / 4.620 ms against 4.671 / 4.674 off,
# Llama-3.1-8B 4.613 / 4.611 against 4.650 / 4.660; run 347's end to end (Qwen3-8B, paired 3):
# spec 1.181x over bf16 against 1.157x off, tokens forced.
VERIFY = True
# FENCE: the sum of: 4 (on, and needed), a fence.proxy.async before a ring stage is freed
# (w12_row.fence_proxy). Without it ptxas leaves the stage's last shared-memory loads in flight
# across the warps' bar.sync and the arrive that frees the stage (their registers read only
# after it: bench/sass_inflight.py), and the TMA copy into the stage, in the async proxy, may
# land before they read: run 346 (H100, runs alternating two problems) had FENCE 0 off in 25
# of 40 runs at 16 tokens and FENCE 4 in none of 40. 1 (a probe), a fence.acq_rel.cta at every
# hand-off between the partitions (w12_row.fence_cta: also clean in run 346, as it makes the
# loads complete); 2 (a probe), a fence.mbarrier_init after the barriers' init (w12_row
# .fence_init: off in run 346 as 0). Not a tuning knob: a value without 4 gives wrong outputs.
FENCE = 4
# STREAM (on): the fused verify's down here too (`down_route`), x streamed on STREAM_TILE where
# its K is past `max_k` (every real target's: 12288, 14336), instead of w12_tc's K split and
# its split-sum launch (run 339, H200: the down 21.28 us a layer plus its split sum's 2.50
# against a 17.88 bound). Run 354 (H100, the W12 verify graph back to back): Qwen3-8B 4.557 /
# 4.560 ms against 4.623 / 4.621 (the down 27.66 us exit to exit against 26.74 plus its split
# sum's 3.52; q|k|v after it +1.3, its norm's squares in 256 tile slots); run 357, Llama-3.1-8B
# 4.556 / 4.549 against 4.609 / 4.610. End to end at 1k (paired 3, tokens forced; w12_speed
# arm stream_down): Qwen3-8B spec 1.180x over bf16 against 1.139x off (run 355), Llama-3.1-8B
# 1.162x against 1.148x (run 356), AR level. On since run 357; arm tc_down turns it off.
STREAM = True
SHARED_LIMIT = 220 * 1024
# a sum tile [16 rows, 16 tokens] on the meta warp and in the epilogue
SUMS1 = gl.constexpr(gl.BlockedLayout([1, 8], [16, 2], [1, 1], [1, 0]))
SUMS4 = gl.constexpr(gl.BlockedLayout([1, 2], [4, 8], [4, 1], [1, 0]))


@gluon.jit
def _token_stage(acc, bufs, s, st, g8, HALVES: gl.constexpr = 2):
    """acc (two sets of the mma's c0..c3, [warps, 32]: tokens 0-7 and 8-15) plus ring stage s's
    products: warp w's block w of the stage (x's block 4 st + w), both halves, 8 mma k-steps
    each, two mmas a step on the same A (w12_row._mma_stage's decode, MMA 1: the pairs made
    exact by the scale words; in k-step p lane 4 g + c takes position 8 c + p of rows g and
    g + 8, and of tokens g and g + 8); g8: the stage's first scale word group over 8. Each
    plane's words and each pair slot of x are read once a half block (`_words`). HALVES 1 (at
    most 8 tokens): the first mma alone (the second set stays zero)."""
    low_buf, code_buf, scale_buf, x_buf = bufs
    SLOTS_GROUPS: gl.constexpr = scale_buf.type.shape[0]
    scales = scale_buf._reinterpret(gl.int32, [SLOTS_GROUPS // 8, MMA_WARPS, 32, 1, 1], PLAIN4)
    scale = scales.index(g8)
    codes = _words(code_buf.index(s)._reinterpret(gl.int32, [64, 32], SWIZZLED_WORDS))
    c0, c1, c2, c3, e0, e1, e2, e3 = acc
    for h in gl.static_range(2):
        s0 = _lanes(scale.slice(16 * h, 8, dim=1))
        s1 = _lanes(scale.slice(16 * h + 8, 8, dim=1))
        lows = _words(low_buf.index(2 * s + h)._reinterpret(gl.int32, [64, 32], SWIZZLED_WORDS))
        # x's pair slots 2 h (slices 4 h, + 1) and 2 h + 1 (4 h + 2, + 3): B's b0 and b1
        xa = _words(x_buf.index(4 * st + 2 * h)._reinterpret(gl.int32, [64, 32], SWIZZLED_WORDS))
        xb = _words(
            x_buf.index(4 * st + 2 * h + 1)._reinterpret(gl.int32, [64, 32], SWIZZLED_WORDS)
        )
        for p in gl.static_range(8):
            a0, a1, a2, a3 = a_operand(lows, codes, p, h)
            a0, a1, a2, a3 = _times(a0, s0), _times(a1, s1), _times(a2, s0), _times(a3, s1)
            c0, c1, c2, c3 = _mma_sync(a0, a1, a2, a3, xa[0][p], xb[0][p], c0, c1, c2, c3)
            if HALVES == 2:
                e0, e1, e2, e3 = _mma_sync(a0, a1, a2, a3, xa[1][p], xb[1][p], e0, e1, e2, e3)
    return c0, c1, c2, c3, e0, e1, e2, e3


@gluon.jit
def _x_copies(x_desc, x_buf, x_ready, XB: gl.constexpr, PDL: gl.constexpr):
    """x's XB blocks into shared memory after the kernel before has written it (PDL's wait,
    then the next kernel let launch): block t = 4 st + w's pair slot m, a box [16 tokens, 64],
    into rows 16 w .. of x_buf's [64, 64] buffer 4 st + m; each stage's 16 boxes on its own
    barrier of x_ready, so that the first stage's products wait for its 32 kB alone."""
    _grid_wait(PDL)
    if PDL:
        _let_next_launch()
    for st in gl.static_range(XB // 4):
        _x_stage(x_desc, x_buf, x_ready.index(st), st, st)


@gluon.jit
def _x_stage(x_desc, x_buf, bar, st, xs):
    """x's stage st (blocks 4 st .. 4 st + 3, 16 boxes [16 tokens, 64]) into x's stage xs of
    shared memory, on barrier bar: block 4 st + w's pair slot m into rows 16 w .. of buffer
    4 xs + m."""
    mbarrier.expect(bar, 16 * x_desc.block_type.nbytes)
    for w in gl.static_range(4):
        for m in gl.static_range(4):
            col = WBLOCK * (4 * st + w) + 64 * m
            tma.async_copy_global_to_shared(
                x_desc, [0, col], bar, x_buf.index(4 * xs + m).slice(16 * w, 16)
            )


@gluon.jit
def _ring_stage(descs, bufs, ready, empty, c, row0, st, half_n):
    """The planes of a tile's stage st (4 blocks from row0) into ring stage c % STAGES, once the
    multiplying warps have freed it."""
    STAGES: gl.constexpr = bufs[1].type.shape[0]
    s = c % STAGES
    mbarrier.wait(empty.index(s), ((c // STAGES) & 1) ^ 1)
    bar = ready.index(s)
    mbarrier.expect(bar, SB * ROWS * (WBLOCK + WBLOCK // 2))
    for b in gl.static_range(SB):
        stacked_planes(descs, bufs, s, b, row0, (st * SB + b) * WBLOCK, bar, half_n, ROWS, 0)


@gluon.jit
def _loader(descs, bufs, bars, work, XB: gl.constexpr, PDL: gl.constexpr, XS: gl.constexpr,
            T: gl.constexpr):  # fmt: skip
    """x resident (XS 0): x once (`_x_copies`: before the first stage, or with PDL after the
    first STAGES stages' weights, constants asked for before the wait), then each tile's stages
    of 4 blocks, one under the other (w12_row.stacked_planes: `_words` reads the 4 warps'
    blocks as one view). x streamed: `_stream_loader`."""
    if XS > 0:
        _stream_loader(descs, bufs, bars, work, PDL, T)
    else:
        x_desc, x_buf = descs[2], bufs[2]
        ready, empty, x_ready = bars[0], bars[1], bars[2]
        units, tiles_rows, n_stages, half_n = work
        STAGES: gl.constexpr = bufs[1].type.shape[0]
        if not PDL:
            _x_copies(x_desc, x_buf, x_ready, XB, PDL)
        c = 0
        for u in range(gl.program_id(0), units, gl.num_programs(0)):
            for st in range(n_stages):
                if PDL and c == STAGES:  # (the ring full: x before the first stage is reused)
                    _x_copies(x_desc, x_buf, x_ready, XB, PDL)
                _ring_stage(descs[:2], bufs[:2], ready, empty, c, u * tiles_rows, st, half_n)
                c += 1
        if PDL and c <= STAGES:  # a program of at most STAGES stages: x after all of them
            _x_copies(x_desc, x_buf, x_ready, XB, PDL)


@gluon.jit
def _stream_loader(descs, bufs, bars, work, PDL: gl.constexpr, T: gl.constexpr):
    """x streamed: each round of T tiles (tiles T r .. T r + T - 1; one past N is a phantom,
    its rows out of bounds: zeros) stage by stage, x's stage into its ring (once the round's
    tiles have multiplied the stage XS before) and then each tile's planes of the stage. With
    PDL the program's first STAGES plane stages (constants) come before the wait, x after."""
    x_desc, x_buf = descs[2], bufs[2]
    ready, empty, x_ready, x_empty = bars
    units, tiles_rows, n_stages, half_n = work
    STAGES: gl.constexpr = bufs[1].type.shape[0]
    XS: gl.constexpr = x_buf.type.shape[0] // 4
    rounds = gl.cdiv(units, T)
    pre = 0
    if PDL:
        r = gl.program_id(0)
        for i in gl.static_range(STAGES):
            if i < n_stages * T:
                _ring_stage(descs[:2], bufs[:2], ready, empty, i, (r * T + i % T) * tiles_rows,
                            i // T, half_n)  # fmt: skip
                pre += 1
        _grid_wait(PDL)
        _let_next_launch()
    c = 0
    xc = 0
    for r in range(gl.program_id(0), rounds, gl.num_programs(0)):
        for st in range(n_stages):
            xs = xc % XS
            mbarrier.wait(x_empty.index(xs), ((xc // XS) & 1) ^ 1)
            _x_stage(x_desc, x_buf, x_ready.index(xs), st, xs)
            xc += 1
            for t in gl.static_range(T):
                if c >= pre:
                    _ring_stage(descs[:2], bufs[:2], ready, empty, c, (r * T + t) * tiles_rows,
                                st, half_n)  # fmt: skip
                c += 1


@gluon.jit
def _token_sums(acc, red):
    """The tile's sums [16 rows, 16 tokens] from the warps' mma sums (set t, c0..c3: rows g and
    g + 8 at tokens 8 t + 2 c and + 1), added over the warps through shared memory red [warps,
    8, 32] (the multiplying warps' barriers around it)."""
    # value v = 4 t + ci: row g + 8 (ci // 2), token 8 t + 2 c + ci % 2
    for v in gl.static_range(8):
        red.slice(v, 1, dim=1).store(gl.reshape(acc[v], [MMA_WARPS, 1, 32]))
    gl.thread_barrier()
    every: gl.constexpr = gl.BlockedLayout([1, 1, 1], [1, 1, 32], [1, 4, 1], [2, 1, 0])
    total = gl.sum(red.load(every), axis=0)  # [8 values, 32 lanes]
    gl.thread_barrier()  # (the next tile's stores after every warp's loads)
    # [t, rh, cj, g, c] -> [rh, g, t, c, cj]: row 8 rh + g, token 8 t + 2 c + cj
    v = gl.permute(gl.reshape(total, [2, 2, 2, 8, 4]), (1, 3, 0, 4, 2))
    return gl.convert_layout(gl.reshape(v, [ROWS, TOKENS]), SUMS4)


@gluon.jit
def _store_tile(sums, rows, in_rows, tile, m, output, hand, res, hw, RESIDUAL: gl.constexpr,
                HAND_OUT: gl.constexpr):  # fmt: skip
    """A tile's sums [16 rows, 16 tokens] rounded to bf16 and stored, plus the residual
    (rounded again) where RESIDUAL; HAND_OUT: the next norm handed on (w12_tc.hand_out: u in
    pair order, the tile's squares in slot `tile`)."""
    y_ptr, stride_y = output[0], output[1]
    tokens = gl.arange(0, TOKENS, layout=gl.SliceLayout(0, SUMS4))
    mask = in_rows[:, None] & (tokens[None, :] < m)
    y = sums.to(gl.bfloat16)
    if RESIDUAL:
        y = (y.to(gl.float32) + res).to(gl.bfloat16)
    gl.store(y_ptr + tokens[None, :] * stride_y + rows[:, None], y, mask=mask)
    if HAND_OUT:
        hand_out(y, hw, rows, tokens, mask, m, tile, hand[1:])


@gluon.jit
def _multiplier(bufs, bars, work, n, m, output, hand, PDL: gl.constexpr, RESIDUAL: gl.constexpr,
                HAND_OUT: gl.constexpr, marks, TRACE: gl.constexpr,
                HALVES: gl.constexpr = 2, FENCE: gl.constexpr = 0, XS: gl.constexpr = 0,
                T: gl.constexpr = 1):  # fmt: skip
    """The multiplying warps: each tile's stages (`_token_stage`), its sums (`_token_sums`) plus
    the meta warp's escape sums, stored (`_store_tile`: plain, or plus the residual, and the
    next norm handed on). marks, TRACE: the kernel timeline's (w12_ws._trace_mark). x
    streamed (XS > 0): `_stream_multiplier`."""
    ready, empty, x_ready, scale_ready = bars[0], bars[1], bars[2], bars[4]
    units, n_stages = work[0], work[2]
    SLOTS: gl.constexpr = bufs[4].type.shape[0]
    GROUPS: gl.constexpr = bufs[3].type.shape[0] // SLOTS
    _trace_mark(marks, 0, TRACE)
    _grid_wait(PDL)  # (before its stores)
    _trace_mark(marks, 1, TRACE)
    if XS > 0:
        _stream_multiplier(bufs, bars, work, n, m, output, hand, RESIDUAL, HAND_OUT, HALVES,
                           FENCE, T)  # fmt: skip
    else:
        c = 0
        j = 0
        for u in range(gl.program_id(0), units, gl.num_programs(0)):
            slot = j % SLOTS
            rows, in_rows, res, hw = _tile_inputs(u, work, n, m, output, hand, RESIDUAL,
                                                  HAND_OUT)  # fmt: skip
            mbarrier.wait(scale_ready.index(slot), (j // SLOTS) & 1)
            fence_cta(FENCE & 1)
            zero = gl.zeros([MMA_WARPS, 32], gl.float32, LANES2)
            acc = (zero, zero, zero, zero, zero, zero, zero, zero)
            for st in range(n_stages):
                mbarrier.wait(x_ready.index(st), 0)  # (x's stage st: once landed, free)
                acc = _ring_products(acc, _stage_bufs(bufs), ready, empty, c, st,
                                     slot * GROUPS // 8 + st, HALVES, FENCE)  # fmt: skip
                c += 1
            _finish_tile(acc, bufs, bars, j, u, rows, in_rows, m, output, hand, res, hw,
                         RESIDUAL, HAND_OUT, FENCE)  # fmt: skip
            j += 1
    _trace_mark(marks, 2, TRACE)


@gluon.jit
def _tile_inputs(u, work, n, m, output, hand, RESIDUAL: gl.constexpr, HAND_OUT: gl.constexpr):
    """Tile u's rows, which of them exist, and its epilogue's inputs (the residual and the next
    norm's weight, asked for before its stages: w12_tc.epilogue_inputs)."""
    rows, in_rows = _tile_rows(u * work[1], (0, 0, 0, 0, work[3]), n, ROWS, 0,
                               gl.SliceLayout(1, SUMS4))  # fmt: skip
    res, hw = epilogue_inputs(rows, in_rows, m, (output[2], output[3]), hand[0], SUMS4,
                              RESIDUAL, HAND_OUT)  # fmt: skip
    return rows, in_rows, res, hw


@gluon.jit
def _stage_bufs(bufs):
    """The multiplying warps' buffers as `_token_stage` takes them: planes, scale words, x."""
    return bufs[0], bufs[1], bufs[3], bufs[2]


@gluon.jit
def _ring_products(acc, bufs, ready, empty, c, xs, g8, HALVES: gl.constexpr, FENCE: gl.constexpr):
    """acc plus the products of ring stage c % STAGES (x's stage xs in shared memory, the scale
    words' group g8), then the stage freed: after the proxy fence (FENCE 4) that makes its
    loads complete before the next copy into it may land."""
    STAGES: gl.constexpr = bufs[1].type.shape[0]
    s = c % STAGES
    mbarrier.wait(ready.index(s), (c // STAGES) & 1)
    fence_cta(FENCE & 1)
    acc = _token_stage(acc, bufs, s, xs, g8, HALVES)
    fence_cta(FENCE & 1)
    fence_proxy(FENCE & 4)
    mbarrier.arrive(empty.index(s), count=1)  # (Triton syncs the 4 warps before it)
    return acc


@gluon.jit
def _finish_tile(acc, bufs, bars, j, u, rows, in_rows, m, output, hand, res, hw,
                 RESIDUAL: gl.constexpr, HAND_OUT: gl.constexpr, FENCE: gl.constexpr):  # fmt: skip
    """The program's tile j (tile u): its sums over the warps, plus its escape sums
    (`_slot_escapes`), stored (`_store_tile`)."""
    sums = _token_sums(acc, bufs[5]) + _slot_escapes(bufs, bars, j, FENCE)
    _store_tile(sums, rows, in_rows, u, m, output, hand, res, hw, RESIDUAL, HAND_OUT)


@gluon.jit
def _slot_escapes(bufs, bars, j, FENCE: gl.constexpr):
    """The program's tile j's escape sums [16 rows, 16 tokens] from meta slot j % SLOTS, once the
    meta warp has written them; the slot then freed."""
    esc_buf, esc_ready, meta_empty = bufs[4], bars[5], bars[6]
    SLOTS: gl.constexpr = esc_buf.type.shape[0]
    slot = j % SLOTS
    mbarrier.wait(esc_ready.index(slot), (j // SLOTS) & 1)
    fence_cta(FENCE & 1)
    escapes = esc_buf.index(slot).load(SUMS4)
    fence_cta(FENCE & 1)
    mbarrier.arrive(meta_empty.index(slot), count=1)
    return escapes


@gluon.jit
def _stream_multiplier(bufs, bars, work, n, m, output, hand, RESIDUAL: gl.constexpr,
                       HAND_OUT: gl.constexpr, HALVES: gl.constexpr, FENCE: gl.constexpr,
                       T: gl.constexpr):  # fmt: skip
    """x streamed: each round's T tiles (1 or 2) multiplied stage by stage, their sums kept
    apart (acc, acc1), x's stage freed after the last tile's products of it; a phantom tile
    (one past N) is multiplied (its planes zeros) but not stored."""
    x_ready, x_empty, scale_ready = bars[2], bars[3], bars[4]
    units, n_stages = work[0], work[2]
    XS: gl.constexpr = bufs[2].type.shape[0] // 4
    SLOTS: gl.constexpr = bufs[4].type.shape[0]
    GROUPS: gl.constexpr = bufs[3].type.shape[0] // SLOTS
    done = 0  # (the program's rounds so far: its tiles j = T done.., x's stages n_stages done..)
    for r in range(gl.program_id(0), gl.cdiv(units, T), gl.num_programs(0)):
        u = r * T
        j = T * done
        rows, in_rows, res, hw = _tile_inputs(u, work, n, m, output, hand, RESIDUAL, HAND_OUT)
        for t in gl.static_range(T):
            mbarrier.wait(scale_ready.index((j + t) % SLOTS), ((j + t) // SLOTS) & 1)
        fence_cta(FENCE & 1)
        zero = gl.zeros([MMA_WARPS, 32], gl.float32, LANES2)
        acc = (zero, zero, zero, zero, zero, zero, zero, zero)
        acc1 = acc
        for st in range(n_stages):
            xc = n_stages * done + st
            xs = xc % XS
            mbarrier.wait(x_ready.index(xs), (xc // XS) & 1)
            acc = _ring_products(acc, _stage_bufs(bufs), bars[0], bars[1], T * xc, xs,
                                 (j % SLOTS) * GROUPS // 8 + st, HALVES, FENCE)  # fmt: skip
            if T == 2:
                acc1 = _ring_products(acc1, _stage_bufs(bufs), bars[0], bars[1], T * xc + 1, xs,
                                      ((j + 1) % SLOTS) * GROUPS // 8 + st, HALVES,
                                      FENCE)  # fmt: skip
            fence_proxy(FENCE & 4)
            mbarrier.arrive(x_empty.index(xs), count=1)
        if T == 2:  # (the second tile's epilogue inputs asked for before the first's store)
            rows1, in_rows1, res1, hw1 = _tile_inputs(u + 1, work, n, m, output, hand, RESIDUAL,
                                                      HAND_OUT)  # fmt: skip
        _finish_tile(acc, bufs, bars, j, u, rows, in_rows, m, output, hand, res, hw, RESIDUAL,
                     HAND_OUT, FENCE)  # fmt: skip
        if T == 2:
            if u + 1 < units:
                _finish_tile(acc1, bufs, bars, j + 1, u + 1, rows1, in_rows1, m, output, hand,
                             res1, hw1, RESIDUAL, HAND_OUT, FENCE)  # fmt: skip
            else:  # (a phantom: its meta slot freed all the same, nothing stored)
                _slot_escapes(bufs, bars, j + 1, FENCE)
        done += 1


@gluon.jit
def _meta(bufs, bars, work, n, weights, escapes, x_ptr, stride_x, m, k, PDL: gl.constexpr,
          ESC_BATCH: gl.constexpr, FENCE: gl.constexpr = 0, T: gl.constexpr = 1):  # fmt: skip
    """Each tile's scale words (`w12_row._scale_words`) and its rows' escape sums [16, 16] (x
    in pair order: kernels/w12_ws._escapes), into slot j % SLOTS for the program's tile j, in
    the multiplying warps' order (rounds of T tiles; a phantom's rows masked)."""
    scale_buf, esc_buf = bufs
    esc_ready = bars[1]
    units, tiles_rows, n_stages, half_n = work
    SLOTS: gl.constexpr = esc_buf.type.shape[0]
    GROUPS: gl.constexpr = scale_buf.type.shape[0] // SLOTS
    slots = scale_buf._reinterpret(gl.int32, [SLOTS, GROUPS, ROWS], scale_buf.type.layout)
    grid: gl.constexpr = gl.BlockedLayout([1, 1], [32 // ROWS, ROWS], [1, 1], [1, 0])
    j = 0
    for r in range(gl.program_id(0), gl.cdiv(units, T), gl.num_programs(0)):
        for t in gl.static_range(T):
            u = r * T + t
            _scale_words(slots, j, u, bars, work, n, weights, 0, grid, FENCE & 1)
            rows, in_rows = _tile_rows(u * tiles_rows, (0, 0, 0, 0, half_n), n, ROWS, 0,
                                       gl.SliceLayout(1, SUMS1))  # fmt: skip
            _grid_wait(PDL)  # the escapes read x (a wait once done is free)
            zero = gl.zeros([ROWS, TOKENS], gl.float32, SUMS1)
            sums = _escapes(zero, rows, in_rows, escapes, x_ptr, stride_x, m, 0, k, ESC_BATCH)
            esc_buf.index(j % SLOTS).store(sums)
            fence_cta(FENCE & 1)
            mbarrier.arrive(esc_ready.index(j % SLOTS), count=1)
            j += 1


@gluon.jit
def _w12_tokens_kernel(
    low_desc, code_desc, x_desc, x_ptr, base_ptr, row_ptr, esc_col_ptr, esc_bits_ptr, y_ptr,
    res_ptr, n, k, m, units, n_stages, base_stride, groups, stride_x, stride_y, stride_r,
    STAGES: gl.constexpr, XB: gl.constexpr, GROUPS: gl.constexpr, SLOTS: gl.constexpr,
    ESC_BATCH: gl.constexpr, PDL: gl.constexpr, RESIDUAL: gl.constexpr, num_warps: gl.constexpr,
    HAND_OUT: gl.constexpr = False, hw_ptr=None, u_ptr=None, stride_u=0, sq_ptr=None,
    stride_sq=0, TRACE: gl.constexpr = 0, trace_ptr=None, clock_ptr=None,
    HALVES: gl.constexpr = 2, FENCE: gl.constexpr = 0, XS: gl.constexpr = 0,
    T: gl.constexpr = 1,
):  # fmt: skip
    """Each program takes tiles pid, pid + programs, ...; the partitions run on across them.
    HAND_OUT: the next norm handed on (its weight hw, u in pair order, squares [M, tiles]).
    HALVES 1: at most 8 tokens (one mma a k-step). XS > 0: x streamed through XS stages (XB
    = 4 XS), rounds of T tiles (TILE's XS, TILES)."""
    work = (units, ROWS, n_stages, n // 2)
    half: gl.constexpr = WBLOCK // 2  # a plane's row in a buffer: 128 bytes
    # stage s: the 4 blocks' low plane halves (buffers 2 s, 2 s + 1) and codes (buffer s), each
    # block's 16 rows under the one before (`_loader`)
    low_buf = gl.allocate_shared_memory(gl.uint8, [2 * STAGES, SB * ROWS, half], low_desc.layout)
    code_buf = gl.allocate_shared_memory(gl.uint8, [STAGES, SB * ROWS, half], code_desc.layout)
    # x: buffer 4 st + m holds pair slot m of blocks 4 st .. 4 st + 3, 16 tokens each (`_x_copies`)
    x_buf = gl.allocate_shared_memory(gl.bfloat16, [XB, 4 * TOKENS, WBLOCK // 4], x_desc.layout)
    plain: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    scale_buf = gl.allocate_shared_memory(gl.int32, [SLOTS * GROUPS, ROWS, 1], plain)
    esc_buf = gl.allocate_shared_memory(gl.float32, [SLOTS, ROWS, TOKENS], plain)
    red_buf = gl.allocate_shared_memory(gl.float32, [MMA_WARPS, 8, 32],
                                        gl.SwizzledSharedLayout(1, 1, 1, [2, 1, 0]))  # fmt: skip
    ready, empty, x_ready = _barriers(STAGES), _barriers(STAGES), _barriers(XB // 4)
    XE: gl.constexpr = XS if XS > 0 else 1
    # (the meta warp's registers: its scale words' 128 groups a tile at K past 8192, x streamed,
    # spill on 80 or 104 (sm_90a compile); 128 none)
    META_REGS: gl.constexpr = 80 if GROUPS <= 64 else 128
    x_empty = _barriers(XE)  # (x streamed: its stages freed)
    scale_ready, esc_ready, meta_empty = _barriers(SLOTS), _barriers(SLOTS), _barriers(SLOTS)
    fence_init(FENCE & 2)
    gl.warp_specialize(
        [
            (_multiplier, ((low_buf, code_buf, x_buf, scale_buf, esc_buf, red_buf),
                           (ready, empty, x_ready, x_empty, scale_ready, esc_ready,
                            meta_empty),
                           work, n, m, (y_ptr, stride_y, res_ptr, stride_r),
                           (hw_ptr, u_ptr, stride_u, sq_ptr, stride_sq), PDL, RESIDUAL,
                           HAND_OUT, (trace_ptr, clock_ptr), TRACE, HALVES, FENCE, XS, T)),
            (_meta, ((scale_buf, esc_buf), (scale_ready, esc_ready, meta_empty), work, n,
                     (base_ptr, base_stride, groups), (row_ptr, esc_col_ptr, esc_bits_ptr),
                     x_ptr, stride_x, m, k, PDL, ESC_BATCH, FENCE, T)),
            (_loader, ((low_desc, code_desc, x_desc), (low_buf, code_buf, x_buf),
                       (ready, empty, x_ready, x_empty), work, XB, PDL, XS, T)),
        ],
        [1, 1],
        [META_REGS, 24],
    )  # fmt: skip


def geometry(cfg: dict, k: int) -> dict:
    """A tile's sizes for K columns: stages of 4 blocks (n_stages), x's blocks in shared memory
    (XB: every stage's, zeros past K; x streamed, XS stages'), the scale words' groups a slot
    (GROUPS: a power of 2, at least GROUP_CHUNK) and the shared memory they take."""
    sb, rows, tokens = SB.value, ROWS.value, TOKENS.value
    n_stages = triton.cdiv(padded(k) // BLOCK, sb)
    xb = sb * (cfg["XS"] or n_stages)
    groups = max(GROUP_CHUNK.value, triton.next_power_of_2(2 * sb * n_stages))
    ring = cfg["STAGES"] * sb * rows * (BLOCK + BLOCK // 2)
    meta = cfg["SLOTS"] * (groups * rows * 4 + rows * tokens * 4)
    shared = ring + xb * tokens * BLOCK * 2 + meta + MMA_WARPS.value * 8 * 32 * 4
    return dict(n_stages=n_stages, XB=xb, GROUPS=groups, shared=shared)


def max_k(tile: dict | None = None) -> int:
    """The longest K whose x (16 tokens) and ring fit in shared memory on `tile`."""
    cfg = TILE | (tile or {})
    step = BLOCK * SB.value
    k = step
    while geometry(cfg, k + step)["shared"] <= SHARED_LIMIT:
        k += step
    return k


def _checked(x: torch.Tensor, weight: W12Weight, tile: dict | None,
             residual: torch.Tensor | None, x_order: str) -> dict:  # fmt: skip
    cfg = TILE | (tile or {})
    unknown = set(cfg) - set(TILE)
    if unknown:
        raise ValueError(f"w12_tokens_linear: unknown tile keys {sorted(unknown)}")
    if cfg["STAGES"] not in (2, 4) or cfg["SLOTS"] not in (2, 4) or cfg["ESC_BATCH"] not in (0, 4):
        raise ValueError(f"w12_tokens_linear: STAGES and SLOTS 2 or 4, ESC_BATCH 0 or 4: {cfg}")
    if (
        cfg["XS"] not in (0, 2, 3, 4)
        or cfg["TILES"] not in (1, 2)
        or (cfg["TILES"] == 2 and not cfg["XS"])
    ):
        raise ValueError(f"w12_tokens_linear: XS 0 (x resident) or 2-4, TILES 1 or 2 (2 with x "
                         f"streamed): {cfg}")  # fmt: skip
    k, n = weight.columns, weight.shape[0]
    kp = padded(k)
    if weight.group_size != BLOCK // 2:
        raise ValueError(f"w12_tokens_linear wants group size {BLOCK // 2}, got "
                         f"{weight.group_size}")  # fmt: skip
    if x_order not in ("natural", "pair"):
        raise ValueError(f"w12_tokens_linear: x_order 'natural' or 'pair', got {x_order!r}")
    cols = k if x_order == "natural" else kp
    if x.dim() != 2 or not 1 <= x.shape[0] <= TOKENS.value or x.shape[1] != cols:
        raise ValueError(f"w12_tokens_linear wants x [1-{TOKENS.value}, {cols}], got "
                         f"{tuple(x.shape)}")  # fmt: skip
    if x.dtype != torch.bfloat16 or not launch.gluon_device(x) or weight.low.device != x.device:
        raise ValueError(f"w12_tokens_linear wants bf16 x on the weight's CUDA device, got "
                         f"{x.dtype} on {x.device}")  # fmt: skip
    if residual is not None and (residual.shape != (x.shape[0], n)
                                 or residual.dtype != torch.bfloat16):  # fmt: skip
        raise ValueError(f"w12_tokens_linear: residual must be [{x.shape[0]}, {n}] bf16")
    geo = geometry(cfg, k)
    if geo["shared"] > SHARED_LIMIT:
        raise ValueError(f"w12_tokens_linear: K {k} takes {geo['shared']} bytes of shared "
                         f"memory (at most K {max_k(cfg)} on this tile)")  # fmt: skip
    return dict(cfg=cfg, geo=geo)


def w12_tokens_linear(
    x: torch.Tensor,
    weight: W12Weight,
    tile: dict | None = None,
    *,
    residual: torch.Tensor | None = None,
    x_order: str = "natural",
    norm_after: NormAfter | None = None,
) -> torch.Tensor:
    """x [M, K] bf16 (M 1-16; CUDA, sm_90) @ weight.T -> [M, N] bf16 on 16-row tiles, the
    tokens in the mma's columns. tile: TILE's keys to change. residual [M, N]: y = residual +
    x @ weight.T. x_order "pair": x is already [M, Kp] in kernels/w12_ws.pair_order (as the
    engine's producers write it); "natural": permuted here. norm_after (with the residual): the
    next RMSNorm, handed on from the epilogue where it is handed (NormAfter.handed: u = y times
    its weight in pair order, squares [M, tiles]); one that is not is left for the caller."""
    if tile is None and weight.columns > max_k():  # (past x's room: x streamed)
        tile = STREAM_TILE
    plan = _checked(x, weight, tile, residual, x_order)
    cfg, geo = plan["cfg"], plan["geo"]
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    m, n = x.shape[0], weight.shape[0]
    xp = pair_order(x) if x_order == "natural" else x
    if xp.data_ptr() % 16 or not xp.is_contiguous():  # TMA reads 16-byte aligned rows
        xp = xp.clone(memory_format=torch.contiguous_format)
    planes, x_layout = tc_layouts(SWIZZLE.value)
    xd = TensorDescriptor.from_tensor(xp, [TOKENS.value, BLOCK // 4], x_layout)
    low = TensorDescriptor.from_tensor(weight.low, [ROWS.value, BLOCK // 2], planes)
    codes = TensorDescriptor.from_tensor(weight.codes, [ROWS.value, BLOCK // 2], planes)
    units = triton.cdiv(n, ROWS.value)
    rounds = triton.cdiv(units, cfg["TILES"])
    programs = min(rounds, launch._sm_count(x.device.index or 0))
    y = torch.empty(m, n, device=x.device, dtype=torch.bfloat16)
    res = residual.contiguous() if residual is not None else y
    hand = {}
    if residual is not None and norm_after is not None and norm_after.handed:
        args = norm_after.hand_arguments(y, units)
        hand = dict(HAND_OUT=True, hw_ptr=args["hw_ptr"], u_ptr=args["u_ptr"],
                    stride_u=args["stride_um"], sq_ptr=args["sq_ptr"],
                    stride_sq=args["stride_sq"])  # fmt: skip
    launched = launch.pdl(x, multiply=True, programs=programs)
    _w12_tokens_kernel[(programs,)](
        low, codes, xd, xp, weight.base, weight.row_ptr, weight.esc_col, weight.esc_bits, y, res,
        n, weight.columns, m, units, geo["n_stages"], weight.base.stride(0),
        weight.base.shape[1], xp.stride(0), y.stride(0), res.stride(0),
        STAGES=cfg["STAGES"], XB=geo["XB"], GROUPS=geo["GROUPS"], SLOTS=cfg["SLOTS"],
        ESC_BATCH=cfg["ESC_BATCH"], PDL=launched["PDL"], RESIDUAL=residual is not None,
        HALVES=1 if m <= 8 else 2, FENCE=FENCE, XS=cfg["XS"], T=cfg["TILES"],
        num_warps=MMA_WARPS.value, launch_pdl=launched["launch_pdl"],
        **trace.arguments(x, "w12_tokens", programs, bytes=weight.nbytes_bound(), rows=m, n=n,
                          k=weight.columns),
        **hand,
    )  # fmt: skip
    return y


def route(x: torch.Tensor, weight, swiglu: bool, residual: torch.Tensor | None,
          hand: dict) -> bool:  # fmt: skip
    """Whether VERIFY takes formats/w12_engine.linear's pair-order call (`hand`: its x_order,
    y_order, handed_norm) here: 2-16 rows, a W12 weight of group size 128 whose K fits
    (`max_k`; any K with STREAM), the residual in the epilogue, no SwiGLU, no handed norm in,
    on a Hopper GPU (or the emulator)."""
    if not VERIFY or not isinstance(weight, W12Weight) or residual is None or swiglu:
        return False
    if hand.get("handed_norm") is not None or (hand.get("y_order") or "natural") != "natural":
        return False
    if not 2 <= x.shape[0] <= TOKENS.value or weight.group_size != BLOCK // 2:
        return False
    return (STREAM or weight.columns <= max_k()) and launch.gluon_routes(x)


def down_route(x: torch.Tensor, weight, residual: torch.Tensor) -> bool:
    """Whether a fused forward's down (x the SwiGLU's output in pair order, the residual in the
    epilogue) runs here rather than on its gate|up's kernel: STREAM and `route`'s rules."""
    return STREAM and route(x, weight, False, residual, dict(x_order="pair"))


def compile_sm90(tile: dict | None = None, k: int = 4096, residual: bool = False,
                 pdl: bool = False, hand_out: bool = False, traced: bool = False,
                 halves: int = 2, fence: int | None = None):  # fmt: skip
    """The kernel compiled for sm_90a without a GPU (kernels/aot.compile_kernel), for K;
    hand_out: with the next norm handed on (HAND_OUT); traced: with the timeline's marks;
    halves 1: for at most 8 tokens (HALVES); fence: FENCE's value (None: FENCE)."""
    from specpilot.kernels import aot

    cfg = TILE | (tile or {})
    geo = geometry(cfg, k)
    planes, x_layout = tc_layouts(SWIZZLE.value)
    types = dict(
        low_desc=f"tensordesc<u8[{ROWS.value}, {BLOCK // 2}],{planes!r}>",
        code_desc=f"tensordesc<u8[{ROWS.value}, {BLOCK // 2}],{planes!r}>",
        x_desc=f"tensordesc<bf16[{TOKENS.value}, {BLOCK // 4}],{x_layout!r}>", x_ptr="*bf16",
        base_ptr="*u8", row_ptr="*i32", esc_col_ptr="*i32", esc_bits_ptr="*i16", y_ptr="*bf16",
        res_ptr="*bf16",
    )  # fmt: skip
    if hand_out:
        types |= dict(hw_ptr="*bf16", u_ptr="*bf16", sq_ptr="*fp32")
    if traced:
        types |= dict(trace_ptr="*i64", clock_ptr="*i64")
    consts = dict(STAGES=cfg["STAGES"], XB=geo["XB"], GROUPS=geo["GROUPS"], SLOTS=cfg["SLOTS"],
                  ESC_BATCH=cfg["ESC_BATCH"], PDL=pdl, RESIDUAL=residual, HAND_OUT=hand_out,
                  TRACE=int(traced), HALVES=halves,
                  FENCE=FENCE if fence is None else fence, XS=cfg["XS"], T=cfg["TILES"],
                  num_warps=MMA_WARPS.value)  # fmt: skip
    return aot.compile_kernel(_w12_tokens_kernel, types, consts)
