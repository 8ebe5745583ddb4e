"""One to sixteen token rows by W12 weights on mma.sync, the weights decoded straight into the
tensor core's operand registers: y = x @ W^T (+ residual), M <= 16 (above 8 rows, GROUPS 2: a
second mma a fragment on the same decoded weights for tokens 8-15).

Why: kernels/w12_linear.py's one-row tiles multiply element-wise and spend 6.7-6.9 instructions
a weight (bench/sass_one_row.py; Nsight Compute, docs/LOG.md run 215: 61-63% issue busy at
q|k|v and gate|up). Here the products are mma.sync.m16n8k16's: 16 weight rows (the A operand) by
8 token columns (B; rows >= M are 0), so a weight costs its share of one `prmt` (two weights into
a bf16x2 register), of the code word's high bytes (~3 integer operations for 4 weights) and of
one 16-byte load; no widening, no per-weight multiply or FMA: ~2.6 SASS instructions a weight
(330 in the loop a block of 16 x 256 weights a warp; 346 in runs 220-225, before it used the
element-wise tiles' high-byte formula, `_high_bytes`, now here for both kernels).
That the one-row multiplies were bound by issue was the hypothesis; they were not (below).

Which thread holds what (PTX's fragment layout of m16n8k16 with .bf16; lane = 4 g + c): A's
a0..a3 are rows g, g + 8 at k = 2c, 2c + 1 (a0, a1) and 2c + 8, 2c + 9 (a2, a3); B's b0, b1
are column g at the same k; C's c0..c3 rows g, g + 8 at columns 2c, 2c + 1. The sum only needs
every thread of one c to give its k slots the same W12 columns, for A and B alike, so k is
permuted freely: in mma number p of a half block h (0: slices 0-3, 1: slices 4-7, formats/w12.py)
thread c's k slots 2c, 2c + 1, 2c + 8, 2c + 9 are slices 4h .. 4h + 3 at word position 8c + p.
Then a0 is one `prmt` of the row's low word and its code word's high bytes (the bytes of
slices 4h, 4h + 1: a bf16x2 pair), a2 the other `prmt` (4h + 2, 4h + 3); b0 and b1 pair x at
the same columns, each thread reading the 8 positions 8c .. 8c + 7 of a slice as 16 bytes.

Exactness, as w12_linear's ACC_SCALE tiles: the decoded pair is the weights times 2^(-2b) (a
normal bf16, exponent 1..15); x is taken times 2^X_SHIFT (exact: a power of two, |x| < 2^64);
each half block's products are summed apart (it lies in one group: group sizes a multiple of 128)
and that sum times 2^(2b - X_SHIFT) is added to the row's: powers of two on normal numbers, so
only the summation order differs from multiplying by the decoded weights. Products under 2^-126
(|x| below about 2^-64) are the exception; activations are never that small in the models we run.
Zero and escaped weights decode to +-0; the escapes are added after the loop from the CSR table.

The program: WARPS_N x WARPS_K warps; warp (wn, wk) takes TILES tiles of 16 weight rows (row
tiles pid * WARPS_N * TILES + wn * TILES ..) over the K range wk * BLOCKS .. of whole blocks of
256 columns; the WARPS_K ranges' sums are added in shared memory (Triton's reduction) after the
loop. Each loop step loads the next block's planes and x into registers (16 bytes a thread a
load) while it multiplies this one's. Every thread's role comes from its index in the program's
1-D tensors of 32 * warps elements, which Triton lays out one a thread in order (the GPU tests
check the products; a different layout fails them).

Measured (H200, docs/LOG.md runs 220-223): one row level with w12_linear's element-wise tiles
(q|k|v 13.4 us against 14.7, o 11.2 / 11.2, gate|up 41.0 / 39.8, down 24.3 / 24.0: a step
waits on its loads, which ptxas issues late, whatever the instruction count), four rows
1.02-1.15x faster than the 16-row tiles; in the one-row graph (w12_linear.MMA_ROWS 1) slower.
Tried and deleted (runs 221-225): the next blocks asked for in L2 (no change), the loads as
tl.loads that Triton pipelines through shared memory (1.7-2.4x slower), and RING, each thread's
planes through its own slots of a cp.async ring in shared memory, inline PTX with per-thread
commit and wait and the warp's x copied once (right, but 2.0-2.8x slower: o 19.9-25.7 us).

Inline PTX for the decode and the products (prmt, mul.bf16x2, mma): no interpreter;
kernels/w12_linear.py stays the path on the CPU and for what this one does not take (a norm or
SwiGLU prologue or epilogue, the norm hand-off, more than 16 rows, K not a multiple of 256,
groups not a multiple of 128).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from specpilot.formats.w12 import BLOCK, W12Weight
from specpilot.kernels import launch, trace
from specpilot.kernels.common import INTERPRETED, pdl_enter, trace_mark

MAX_ROWS = 16  # token rows: the mma's 8 columns, twice (GROUPS 2) above 8
TILE_N = tl.constexpr(16)  # weight rows of one mma
X_SHIFT = tl.constexpr(64)
X_SCALE = tl.constexpr(((127 + 64) << 7) * 0x10001)  # bf16x2 (2^64, 2^64)
# default tile per (N, K): (WARPS_N, WARPS_K, TILES); others: mma_tile's rule. Qwen3-8B's q|k|v
# on 1 x 4 warps: one row 13.42 us against the rule's 2 x 2 at 15.54 (H200, runs 223-224;
# bench/w12_mma_speed.py), four rows 14.95 against 17.09
MEASURED_TILES: dict[tuple[int, int], tuple[int, int, int]] = {(6144, 4096): (1, 4, 1)}


@triton.jit
def _load4(ptrs, ok):
    """The 4 words at each of ptrs (int32 pointers, 16-byte aligned; zeros where not ok)."""
    return tl.inline_asm_elementwise(
        "{ .reg .pred p; setp.ne.b32 p, $5, 0; mov.b32 $0, 0; mov.b32 $1, 0; mov.b32 $2, 0; "
        "mov.b32 $3, 0; @p ld.global.nc.v4.b32 {$0, $1, $2, $3}, [$4]; }",
        "=r,=r,=r,=r,l,r",
        [ptrs.to(tl.int64), ok.to(tl.int32)],
        dtype=(tl.int32, tl.int32, tl.int32, tl.int32),
        is_pure=True,
        pack=1,
    )


@triton.jit
def _prmt(a, b, SELECT: tl.constexpr):
    return tl.inline_asm_elementwise(
        f"prmt.b32 $0, $1, $2, {SELECT};", "=r,r,r", [a, b], dtype=tl.int32, is_pure=True, pack=1
    )


@triton.jit
def _x_pair(a, b, SELECT: tl.constexpr):
    """Two x values (a bf16 of word a and one of word b, chosen by SELECT) as a bf16x2, times
    2^X_SHIFT (exact)."""
    return tl.inline_asm_elementwise(
        f"{{ .reg .b32 t, s; prmt.b32 t, $1, $2, {SELECT}; mov.b32 s, {X_SCALE}; "
        "mul.rn.bf16x2 $0, t, s; }",
        "=r,r,r",
        [a, b],
        dtype=tl.int32,
        is_pure=True,
        pack=1,
    )


@triton.jit
def _mma(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
    """One warp's mma.sync m16n8k16 (bf16 in, fp32 sums): c + A B, fragments as PTX lays them."""
    return tl.inline_asm_elementwise(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {$0, $1, $2, $3}, "
        "{$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};",
        "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3",
        [a0, a1, a2, a3, b0, b1, c0, c1, c2, c3],
        dtype=(tl.float32, tl.float32, tl.float32, tl.float32),
        is_pure=True,
        pack=1,
    )


@triton.jit
def _high_bytes(codes, H: tl.constexpr):
    """Code words -> the high bytes s << 7 | d of slices 4H .. 4H + 3 (codes s << 3 | d: low
    nibbles for H = 0, high nibbles for H = 1); -0x7F7F7F80 is 0x80808080, bit 7 of each byte.
    Here for both W12 kernels (kernels/w12_linear.py imports this module)."""
    if H == 0:
        return (codes & 0x07070707) | ((codes << 4) & -0x7F7F7F80)
    else:
        return ((codes >> 4) & 0x07070707) | (codes & -0x7F7F7F80)


@triton.jit
def _x_block(x_words, t, tok_ok):
    """x at this thread's 8 positions of each of block t's 8 slices: 8 x 4 words (x_words: int32
    pointers at the thread's token row and first position in block 0)."""
    a = x_words + t * 128  # 256 bf16 a block
    return (
        _load4(a, tok_ok) + _load4(a + 16, tok_ok) + _load4(a + 32, tok_ok)
        + _load4(a + 48, tok_ok) + _load4(a + 64, tok_ok) + _load4(a + 80, tok_ok)
        + _load4(a + 96, tok_ok) + _load4(a + 112, tok_ok)
    )  # fmt: skip


@triton.jit
def _x_blocks(x_words, x_words2, t, tok_ok, tok_ok2, GROUPS: tl.constexpr):
    """_x_block's words of tokens 0-7 and, with GROUPS 2, of tokens 8-15 (else the same again)."""
    xw = _x_block(x_words, t, tok_ok)
    xw2 = xw
    if GROUPS > 1:
        xw2 = _x_block(x_words2, t, tok_ok2)
    return xw, xw2


@triton.jit
def _w_block(low_words, code_words, t):
    """One row's planes at this thread's 8 positions of block t: low words of slices 0-3 (8),
    of slices 4-7 (8), code words (8) (int32 pointers at the thread's first position, block 0)."""
    lo = low_words + t * 64
    co = code_words + t * 32
    yes = t >= 0
    return (
        _load4(lo, yes) + _load4(lo + 4, yes), _load4(lo + 32, yes) + _load4(lo + 36, yes),
        _load4(co, yes) + _load4(co + 4, yes),
    )  # fmt: skip


@triton.jit
def _tile_block(acc, w0, w1, xw, xw2, base0, base1, t, GROUP: tl.constexpr,
                GROUPS: tl.constexpr):  # fmt: skip
    """acc (c0..c3 of one row tile, and c4..c7 with GROUPS 2) plus block t's products: rows g
    (planes w0, bases at base0) and g + 8 (w1, base1), x words xw (_x_block's: tokens 0-7) and
    xw2 (tokens 8-15, GROUPS 2: a second mma on the same decoded weights)."""
    c0, c1, c2, c3 = acc[0], acc[1], acc[2], acc[3]
    if GROUPS > 1:
        c4, c5, c6, c7 = acc[4], acc[5], acc[6], acc[7]
    for h in tl.static_range(2):
        low0 = w0[h]
        low1 = w1[h]
        p0 = tl.zeros_like(c0)
        p1 = tl.zeros_like(c0)
        p2 = tl.zeros_like(c0)
        p3 = tl.zeros_like(c0)
        if GROUPS > 1:
            q0 = tl.zeros_like(c0)
            q1 = tl.zeros_like(c0)
            q2 = tl.zeros_like(c0)
            q3 = tl.zeros_like(c0)
        for p in tl.static_range(8):
            hb0 = _high_bytes(w0[2][p], h)
            hb1 = _high_bytes(w1[2][p], h)
            a0 = _prmt(low0[p], hb0, 0x5140)
            a2 = _prmt(low0[p], hb0, 0x7362)
            a1 = _prmt(low1[p], hb1, 0x5140)
            a3 = _prmt(low1[p], hb1, 0x7362)
            # x: slice j's positions 8c + 2i, 8c + 2i + 1 in word 4j + i; 0x5410 pairs two
            # words' low halves, 0x7632 their high halves
            b0 = _x_pair(xw[16 * h + p // 2], xw[16 * h + p // 2 + 4], 0x5410 + p % 2 * 0x2222)
            b1 = _x_pair(xw[16 * h + p // 2 + 8], xw[16 * h + p // 2 + 12], 0x5410 + p % 2 * 0x2222)
            p0, p1, p2, p3 = _mma(a0, a1, a2, a3, b0, b1, p0, p1, p2, p3)
            if GROUPS > 1:
                e0 = _x_pair(xw2[16 * h + p // 2], xw2[16 * h + p // 2 + 4],
                             0x5410 + p % 2 * 0x2222)  # fmt: skip
                e1 = _x_pair(xw2[16 * h + p // 2 + 8], xw2[16 * h + p // 2 + 12],
                             0x5410 + p % 2 * 0x2222)  # fmt: skip
                q0, q1, q2, q3 = _mma(a0, a1, a2, a3, e0, e1, q0, q1, q2, q3)
        col = t * 256 + 128 * h
        s0 = ((2 * tl.load(base0 + col // GROUP).to(tl.int32) + 127 - X_SHIFT) << 23).to(
            tl.float32, bitcast=True
        )
        s1 = ((2 * tl.load(base1 + col // GROUP).to(tl.int32) + 127 - X_SHIFT) << 23).to(
            tl.float32, bitcast=True
        )
        c0 += p0 * s0
        c1 += p1 * s0
        c2 += p2 * s1
        c3 += p3 * s1
        if GROUPS > 1:
            c4 += q0 * s0
            c5 += q1 * s0
            c6 += q2 * s1
            c7 += q3 * s1
    if GROUPS > 1:
        out = (c0, c1, c2, c3, c4, c5, c6, c7)
    else:
        out = (c0, c1, c2, c3)
    return out


@triton.jit
def _escapes(row, row_ok, tok, tok_ok, x_ptr, stride_xm, row_ptr, esc_col_ptr, esc_bits_ptr):
    """x[tok, col] * w summed over row `row`'s escaped (col, w) (fp32; 0 where not ok)."""
    ok = row_ok & tok_ok
    first = tl.load(row_ptr + row, mask=ok, other=0)
    count = tl.load(row_ptr + row + 1, mask=ok, other=0) - first
    out = tl.zeros(row.shape, dtype=tl.float32)
    for j in range(0, tl.max(count, axis=0)):
        has = j < count
        col = tl.load(esc_col_ptr + first + j, mask=has, other=0)
        w = tl.load(esc_bits_ptr + first + j, mask=has, other=0).to(tl.bfloat16, bitcast=True)
        a = tl.load(x_ptr + tok * stride_xm + col, mask=has, other=0.0)
        out += tl.where(has, a.to(tl.float32) * w.to(tl.float32), 0.0)
    return out


@triton.jit
def _store(acc, row, row_ok, tok, tok_ok, x_ptr, stride_xm, row_ptr, esc_col_ptr, esc_bits_ptr,
           y_ptr, res_ptr, stride_ym, stride_rm, RESIDUAL: tl.constexpr):  # fmt: skip
    """y[tok, row] = acc plus the row's escapes, rounded, plus the residual (rounded again)."""
    acc += _escapes(row, row_ok, tok, tok_ok, x_ptr, stride_xm, row_ptr, esc_col_ptr,
                    esc_bits_ptr)  # fmt: skip
    dtype = y_ptr.dtype.element_ty
    out = acc.to(dtype)
    ok = row_ok & tok_ok
    if RESIDUAL:
        r = tl.load(res_ptr + tok * stride_rm + row, mask=ok, other=0.0)
        out = (out.to(tl.float32) + r.to(tl.float32)).to(dtype)
    tl.store(y_ptr + tok * stride_ym + row, out, mask=ok)


@triton.jit
def _mma_kernel(
    x_ptr,
    xw_ptr,
    low_ptr,
    code_ptr,
    base_ptr,
    row_ptr,
    esc_col_ptr,
    esc_bits_ptr,
    y_ptr,
    res_ptr,
    M,
    N,
    stride_xm,
    stride_xw,
    stride_low,
    stride_code,
    stride_base,
    stride_ym,
    stride_rm,
    GROUP: tl.constexpr,
    RESIDUAL: tl.constexpr,
    WARPS_N: tl.constexpr,
    WARPS_K: tl.constexpr,
    TILES: tl.constexpr,
    BLOCKS: tl.constexpr,
    GROUPS: tl.constexpr = 1,
    PDL: tl.constexpr = False,
    LATE: tl.constexpr = False,
    SHARED: tl.constexpr = 0,  # launch.ask_shared's bytes (unused here: its own compile)
    TRACE: tl.constexpr = 0,
    trace_ptr=None,
    clock_ptr=None,
):
    trace_mark(trace_ptr, clock_ptr, 0, TRACE)
    pdl_enter(PDL, trace_ptr, clock_ptr, TRACE, LATE)
    THREADS: tl.constexpr = 32 * WARPS_N * WARPS_K
    tid = tl.arange(0, THREADS)
    lane = tid % 32
    warp = tid // 32
    g = lane // 4
    c = lane % 4
    wn = warp % WARPS_N
    wk = warp // WARPS_N
    tile = (tl.program_id(0) * WARPS_N + wn) * TILES  # this warp's first row tile
    t0 = wk * BLOCKS  # and first block
    tok_ok = g < M
    # x as words: row g (zeros where g >= M: B's column g), positions 8c .. 8c + 7 of a slice
    x_words = xw_ptr + tl.minimum(g, M - 1) * stride_xw + 4 * c
    tok_ok2 = g + 8 < M  # GROUPS 2: tokens 8-15 in a second B operand
    x_words2 = xw_ptr + tl.minimum(g + 8, M - 1) * stride_xw + 4 * c
    # the tiles' rows g and g + 8, clamped into the weight (their sums are not stored)
    r0 = tl.minimum(tile * TILE_N + g, N - 1)
    r1 = tl.minimum(tile * TILE_N + g + 8, N - 1)
    r2 = tl.minimum(tile * TILE_N + TILE_N + g, N - 1)
    r3 = tl.minimum(tile * TILE_N + TILE_N + g + 8, N - 1)
    lo0 = low_ptr + r0 * stride_low + 8 * c
    lo1 = low_ptr + r1 * stride_low + 8 * c
    co0 = code_ptr + r0 * stride_code + 8 * c
    co1 = code_ptr + r1 * stride_code + 8 * c
    lo2 = low_ptr + r2 * stride_low + 8 * c
    lo3 = low_ptr + r3 * stride_low + 8 * c
    co2 = code_ptr + r2 * stride_code + 8 * c
    co3 = code_ptr + r3 * stride_code + 8 * c
    b0 = base_ptr + r0 * stride_base
    b1 = base_ptr + r1 * stride_base
    b2 = base_ptr + r2 * stride_base
    b3 = base_ptr + r3 * stride_base
    zero = tl.zeros([THREADS], dtype=tl.float32)
    if GROUPS > 1:
        acc0 = (zero, zero, zero, zero, zero, zero, zero, zero)
    else:
        acc0 = (zero, zero, zero, zero)
    acc1 = (zero, zero, zero, zero)
    # the next block's planes and x loaded into registers while this block's are multiplied
    # (ptxas issues those loads late in the step, so each step still waits on them; docs/LOG.md
    # runs 220-225 for what asking L2 ahead and staging through shared memory did: no gain)
    xw, xw2 = _x_blocks(x_words, x_words2, t0, tok_ok, tok_ok2, GROUPS)
    w0 = _w_block(lo0, co0, t0)
    w1 = _w_block(lo1, co1, t0)
    if TILES > 1:
        w2 = _w_block(lo2, co2, t0)
        w3 = _w_block(lo3, co3, t0)
    for i in range(BLOCKS):
        t = t0 + i
        nxt = t0 + tl.minimum(i + 1, BLOCKS - 1)  # the last step reads its own block again
        xn, xn2 = _x_blocks(x_words, x_words2, nxt, tok_ok, tok_ok2, GROUPS)
        n0 = _w_block(lo0, co0, nxt)
        n1 = _w_block(lo1, co1, nxt)
        acc0 = _tile_block(acc0, w0, w1, xw, xw2, b0, b1, t, GROUP, GROUPS)
        w0 = n0
        w1 = n1
        if TILES > 1:
            n2 = _w_block(lo2, co2, nxt)
            n3 = _w_block(lo3, co3, nxt)
            acc1 = _tile_block(acc1, w2, w3, xw, xw, b2, b3, t, GROUP, 1)
            w2 = n2
            w3 = n3
        xw = xn
        xw2 = xn2
    # the WARPS_K ranges' sums added: [WARPS_K, WARPS_N * 32] over its first axis
    OUT: tl.constexpr = 32 * WARPS_N
    idx = tl.arange(0, OUT)
    g = (idx % 32) // 4
    c = idx % 4
    tile = (tl.program_id(0) * WARPS_N + idx // 32) * TILES
    tok0 = 2 * c
    tok1 = 2 * c + 1
    ok0 = tok0 < M
    ok1 = tok1 < M
    args = (x_ptr, stride_xm, row_ptr, esc_col_ptr, esc_bits_ptr, y_ptr, res_ptr, stride_ym,
            stride_rm, RESIDUAL)  # fmt: skip
    for r in tl.static_range(TILES):
        acc = acc0 if r == 0 else acc1
        s0 = tl.sum(tl.reshape(acc[0], [WARPS_K, OUT]), axis=0)
        s1 = tl.sum(tl.reshape(acc[1], [WARPS_K, OUT]), axis=0)
        s2 = tl.sum(tl.reshape(acc[2], [WARPS_K, OUT]), axis=0)
        s3 = tl.sum(tl.reshape(acc[3], [WARPS_K, OUT]), axis=0)
        row = (tile + r) * TILE_N + g
        _store(s0, row, row < N, tok0, ok0, *args)
        _store(s1, row, row < N, tok1, ok1, *args)
        _store(s2, row + 8, row + 8 < N, tok0, ok0, *args)
        _store(s3, row + 8, row + 8 < N, tok1, ok1, *args)
        if GROUPS > 1:  # tokens 8 + 2c, 8 + 2c + 1
            s4 = tl.sum(tl.reshape(acc[4], [WARPS_K, OUT]), axis=0)
            s5 = tl.sum(tl.reshape(acc[5], [WARPS_K, OUT]), axis=0)
            s6 = tl.sum(tl.reshape(acc[6], [WARPS_K, OUT]), axis=0)
            s7 = tl.sum(tl.reshape(acc[7], [WARPS_K, OUT]), axis=0)
            _store(s4, row, row < N, tok0 + 8, tok0 + 8 < M, *args)
            _store(s5, row, row < N, tok1 + 8, tok1 + 8 < M, *args)
            _store(s6, row + 8, row + 8 < N, tok0 + 8, tok0 + 8 < M, *args)
            _store(s7, row + 8, row + 8 < N, tok1 + 8, tok1 + 8 < M, *args)
    trace_mark(trace_ptr, clock_ptr, 2, TRACE)


def mma_tile(n: int, k: int) -> dict:
    """(WARPS_N, WARPS_K, TILES) for an [N, K] weight: MEASURED_TILES where measured,
    else one row tile a warp and K split over warps until there are at least 4 warps an SM's worth
    (~528 on the H200) of them, with whole blocks per warp."""
    if (n, k) in MEASURED_TILES:
        wn, wk, tiles = MEASURED_TILES[(n, k)]
        return dict(WARPS_N=wn, WARPS_K=wk, TILES=tiles)
    blocks = k // BLOCK
    tiles = -(-n // TILE_N)
    wk = 1
    while tiles * wk < 528 and wk * 2 <= 8 and blocks % (wk * 2) == 0:
        wk *= 2
    return dict(WARPS_N=max(1, 4 // wk), WARPS_K=wk, TILES=1)


def mma_usable(x: torch.Tensor, weight: W12Weight) -> bool:
    """Whether w12_mma_linear takes this multiply: CUDA (compiled, not interpreted), 1-16 bf16
    rows with unit stride and 16-byte aligned rows, K a multiple of 256 and the group size of
    128."""
    n, k = weight.shape
    return (
        x.is_cuda
        and not INTERPRETED
        and x.dim() == 2
        and 1 <= x.shape[0] <= MAX_ROWS
        and x.dtype == torch.bfloat16
        and x.stride(1) == 1
        and (x.stride(0) * 2) % 16 == 0
        and x.data_ptr() % 16 == 0
        and k % BLOCK == 0
        and x.shape[1] == k
        and weight.group_size % 128 == 0
        and weight.low.data_ptr() % 16 == 0
        and weight.codes.data_ptr() % 16 == 0
        and weight.low.stride(0) % 16 == 0
        and weight.codes.stride(0) % 16 == 0
    )


def w12_mma_linear(
    x: torch.Tensor,
    weight: W12Weight,
    *,
    residual: torch.Tensor | None = None,
    config: dict | None = None,
) -> torch.Tensor:
    """x [M, K] @ W^T (+ residual) -> [M, N] bf16 for M <= 16 (mma_usable's multiplies): the
    values of w12_linear without a prologue, up to the summation order."""
    if not mma_usable(x, weight):
        raise ValueError(
            f"w12_mma_linear takes CUDA bf16 x of 1-{MAX_ROWS} aligned rows, K a multiple of "
            f"{BLOCK} and W12 groups of a multiple of 128; got x {tuple(x.shape)} {x.dtype} "
            f"on {x.device}, weight {tuple(weight.shape)} group {weight.group_size}"
        )
    m = x.shape[0]
    n, k = weight.shape
    if residual is not None and (residual.shape != (m, n) or residual.stride(1) != 1):
        raise ValueError(f"residual must be [{m}, {n}] with unit stride, got {residual.shape}")
    cfg = dict(config or mma_tile(n, k))
    wn, wk, tiles = cfg["WARPS_N"], cfg["WARPS_K"], cfg["TILES"]
    blocks = k // BLOCK
    if blocks % wk:
        raise ValueError(f"WARPS_K={wk} does not divide the {blocks} blocks of K={k}")
    if tiles not in (1, 2) or (tiles > 1 and m > 8):
        raise ValueError(f"TILES is 1, or 2 for at most 8 rows; got {tiles} for {m} rows")
    y = torch.empty(m, n, device=x.device, dtype=x.dtype)
    programs = triton.cdiv(n, TILE_N * tiles * wn)
    launched = launch.multiply(x, programs, elementwise=True)
    kernel = _mma_kernel[(programs,)](
        x,
        x.view(torch.int32),
        weight.low.view(torch.int32),
        weight.codes.view(torch.int32),
        weight.base,
        weight.row_ptr,
        *escape_arrays(weight),
        y,
        residual if residual is not None else y,
        m,
        n,
        x.stride(0),
        x.stride(0) // 2,
        weight.low.stride(0) // 4,
        weight.codes.stride(0) // 4,
        weight.base.stride(0),
        y.stride(0),
        residual.stride(0) if residual is not None else 0,
        GROUP=weight.group_size,
        RESIDUAL=residual is not None,
        WARPS_N=wn,
        WARPS_K=wk,
        TILES=tiles,
        BLOCKS=blocks // wk,
        GROUPS=1 if m <= 8 else 2,
        num_warps=wn * wk,
        **launched,
        **trace.arguments(x, "w12_linear", programs, bytes=weight.nbytes_bound(), rows=m, n=n, k=k),
    )
    launch.ask_shared(kernel, launched["SHARED"])
    return y


def escape_arrays(w: W12Weight) -> tuple[torch.Tensor, torch.Tensor]:
    """The escape table's columns and bits for a launch: an empty table is never read, so a
    tensor with storage stands in for it."""
    if w.esc_col.numel():
        return w.esc_col, w.esc_bits
    return w.row_ptr, w.row_ptr.view(torch.int16)
