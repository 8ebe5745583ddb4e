"""The certified LM head's epilogue (formats/certified.py has the procedure and its proof), run by
kernels/linear._skinny_kernel after its int8 multiply (kernels/linear.certified_argmax).

Each program holds approx for its BLOCK_M input rows and BLOCK_N head rows. It posts its largest
lower bound to the row's floor (an fp32 atomic max) and gets the floor posted so far: a floor
that only rises, so comparing against it drops fewer rows than the final floor would, never
more (the proof holds for any floor some row's lower bound reached). Its candidates get their
exact logits from the head's own rows (a second pass over K, the loads masked to the candidate
rows; skipped when it has none), and it posts the best as a key (the value's bits in
torch.argmax's order above the complement of the index) to the row's key with an int64 atomic
max. The last program of a block of input rows (common.count_done) turns the keys into tokens
and leaves the floor and key buffers as they were found (-inf, the smallest key), so the next
launch needs no reset. With ACCEPT (a verify step) the last of those programs packs the verify
blocks as tokens.argmax_accept does.

Programs finish in launch order roughly, so the first wave would compare against floors of their own
rows only and read many more candidates: with random weights at the Qwen3-8B shape
(bench/certified_head.py's model) ~2,600 rows for one input row and ~21,000 for a 16-row verify
block, where the final floor leaves ~200 and ~2,800. So in launches of DEFER_MIN_ROWS input rows or
more the first `deferred` tiles along N (DEFER_TILES: two a multiprocessor) store their upper bounds
and leave the check to the tile as far from the end (tile TILES_N - deferred + q checks tile q),
which by then sees a floor close to the final one (the model: ~500 and ~4,400 rows); one-row
launches defer none (run 207: faster without). The hand-over is one atomic swap on each side of a
flag and never waits: a deferred tile swaps in 1 after storing its bounds, its checker swaps in 2
after its own check; whoever comes second does the check (the checker when it finds 1, the deferred
tile when it finds 2).

TWO_PASS (on for launches of 2 or more rows): the multiply stores every row's upper bound (times
p, [M, N] fp32: 9.7 MB for a 16-row verify block at Qwen3's head) and posts its floors, and a
second launch (`exact_pass`) reads the bounds against the final floors and computes the exact
logits of only the rows those leave, then turns the keys into tokens and packs the verify blocks.
The proof is unchanged: a final floor is a floor some row's lower bound reached. ROW_STATS: the
rows' sums of squares (and of fp16's changes), which every program of a 16-row multiply would
otherwise make again as it reads the rows, summed once by a launch before it (`row_stats`).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from specpilot.formats.certified import CertifiedHead
from specpilot.kernels import launch, trace
from specpilot.kernels.common import (
    INTERPRETED,
    count_done,
    count_reset,
    dot,
    handed_arguments,
    handed_rstd,
    handed_squares,
    input_tile,
    pdl_enter,
    row_rstd,
    trace_mark,
    zeroed_counters,
)
from specpilot.kernels.tokens import pack_rows

KEY_MIN = tl.constexpr(-(2**63))
WIDEN_ASM = tl.constexpr(not INTERPRETED)  # widen_int8's inline assembly (not interpretable)
# the last launch's buffers per device (name -> tensor), left as each launch found them
_HELD: dict[torch.device, dict[str, torch.Tensor]] = {}
_KEPT: list[torch.Tensor] = []  # every buffer ever made (graphs replay their addresses)
# tiles along N (a launch's first ones) whose check the last as many tiles take over: -1, two
# programs a multiprocessor (about the first wave: their floors are their own rows'); 0: every
# tile checks itself (bench/engine_speed.py --switch kernels.certified.DEFER_TILES=N)
DEFER_TILES = -1
# launches of fewer input rows defer no check: with one row, run 207 (the timeline's variants,
# Qwen3-8B shape, 1k, H200) put the head at 203.6 us without deferral against 213.7 / 212.7 with
# (decode 4.002 against 4.019 / 4.020 ms back to back), and run 208's paired AR was level
# (1.002x [0.991-1.013]): the first wave's extra candidates cost less than the hand-over's
# atomics and stored bounds (--switch kernels.certified.DEFER_MIN_ROWS=1 defers at one row too)
DEFER_MIN_ROWS = 2
# the candidates' exact pass: 1, the wanted rows gathered SLOTS at a time into [SLOTS, EXACT_K]
# tiles, pipelined; 0, the tile's rows masked (--switch kernels.certified.COMPACT=0)
COMPACT = 1
# 1: the exact pass in a second launch (`_exact_kernel`) for launches of TWO_PASS_MIN_ROWS rows
# or more, against the final floors: the multiply stores every row's upper bound ([M, N] fp32)
# and posts its floors, then the second launch reads the bounds and computes the exact logits of
# the rows the final floors leave (~2,800 for a 16-row verify block with random weights,
# against ~21,000 seen by one launch's rising floors). Runs 246 and 248 (timeline, Qwen3-8B
# 1k, H200): the 16-row verify head on F16 (64 x 256, 4 warps) 366.1 us in one launch, 242.0 +
# 57.2 in two; with ROW_STATS 161.3 + 57.2 (+ 1.6 for the row sums) against the exact head's
# 283 + argmax 14. At one row two launches lost: 158.0 + 26.3 against 164.7 (decode 4.037
# against 4.019 ms back to back). (--switch kernels.certified.TWO_PASS=0 / TWO_PASS_MIN_ROWS=1)
TWO_PASS = 1
TWO_PASS_MIN_ROWS = 2
# each input row's sum of squares (and of what fp16 changes) for the multiply's bounds: 0, summed
# by every program of the multiply as it reads the row (BLOCK_M rows' on 16-row tiles; a one-row
# launch its one row's, STAT_ROWS); 1, by `row_stats` first (a launch of one program a row, 1.5
# us) for launches of 2 or more rows without a norm prologue; 2, for one-row launches too. Run
# 248: the 16-row verify head's multiply 242.7 -> 161.3 us (4 warps) and 157.2 (2 warps) with
# 1; the one-row head level with 2 (164.4 + 1.4 against 165.1). (--switch
# kernels.certified.ROW_STATS=N)
ROW_STATS = 1
# 1: `row_stats` also writes the rows rounded to fp16 ([M, K]), which the multiply of an F16 tile
# reads as its input: no bf16 -> fp16 conversion of the input tile in every step of every program
# (a one-row launch on a 16-row tile converts all 16 rows, 15 of them masked). Run 254 (Qwen3-8B
# 1k timeline): the 16-row multiply 158.5 -> 157.4 us, the one-row head 164.5 -> 161.2 with
# ROW_STATS 2 (decode 4.041 -> 4.043 ms): level, so off (--switch kernels.certified.X16=1)
X16 = 0
# the second launch's tile: head rows a program (bounds read, candidates gathered from them)
EXACT_ROWS_ONE = 1024  # one input row
# 2 or more input rows (16 a program); run 249 (16-row verify, Qwen3-8B 1k): 256 57.5 us,
# 512 24.0, 1,024 32.5
EXACT_ROWS = 512
SLOTS = tl.constexpr(16)
EXACT_K = tl.constexpr(256)
# the second launch's gathering (`exact_pass`; the one-launch check keeps SLOTS and EXACT_K):
# head rows a round, columns a step (--switch kernels.certified.EXACT_SLOTS=N / EXACT_STEP=N)
EXACT_SLOTS = 16
EXACT_STEP = 256


def deferred_tiles(device: torch.device, tiles_n: int, rows: int) -> int:
    """How many tiles of a launch with `tiles_n` tiles along N and `rows` input rows defer their
    check (DEFER_TILES, at most half of them; none under DEFER_MIN_ROWS rows)."""
    if rows < DEFER_MIN_ROWS:
        return 0
    wanted = DEFER_TILES
    if wanted < 0 and device.type == "cuda":
        wanted = 2 * torch.cuda.get_device_properties(device).multi_processor_count
    elif wanted < 0:  # the interpreter: an H200's count
        wanted = 264
    return min(wanted, tiles_n // 2)


def held(device: torch.device, name: str, size: int, fill: float | int, dtype: torch.dtype):
    """A buffer of at least `size` elements that every launch leaves at `fill` (the floors at
    -inf, the keys at the smallest, the deferred tiles' flags at 0; the deferred bounds have no
    state): a larger one replaces a smaller one for new launches, every one is kept (captured
    graphs replay their addresses). Made before a CUDA graph capture, like the counters."""
    buffers = _HELD.setdefault(device, {})
    kept = buffers.get(name)
    if kept is None or kept.numel() < size:
        if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
            raise RuntimeError("certified head buffers must be allocated before a graph capture")
        kept = torch.full((max(size, 64),), fill, device=device, dtype=dtype)
        _KEPT.append(kept)
        buffers[name] = kept
    return kept


@triton.jit
def widen_int8(w, dtype, FP32: tl.constexpr):
    """int8 weights w as exact dtype values (bf16 or fp16), or fp32 ones (FP32: an element-wise
    tile's products), without Triton's conversions (I2F: 16 a clock per SM on Hopper, under the
    ~17 int8 weights a clock per SM that 4 TB/s needs; run 198's int8 head read 2.4 TB/s). Each
    byte goes under the mantissa of a float whose exponent makes it an integer, then that
    float's offset is taken away, exactly (every value is an integer under 2^11):
    - fp32: 2^23 + (b ^ 0x80) - (2^23 + 128), one `prmt` and one `sub.f32` a weight;
    - fp16: 1024 + (b ^ 0x80) - 1152, two weights a register (`prmt`, `sub.f16x2`);
    - bf16 (7 mantissa bits): 128 + (b & 0x7F) - (128 if b >= 0 else 256), two a register:
      both words by `prmt` and masks, then one `fma.rn.bf16x2` by 1 (sm_80 and later).
    In the interpreter (no inline assembly): Triton's conversion through fp32, the same values
    (the interpreter's int8 -> bf16 conversion copies the bits; until session 40 the int8 sums
    were ~0 there and every row a candidate, so the tests' tokens were right without the int8
    copy: test_int8_sums_choose_the_candidates now catches it)."""
    if not WIDEN_ASM:
        wide = w.to(tl.float32) if FP32 else w.to(tl.float32).to(dtype)
    elif FP32:  # prmt: byte k of t, then the bytes 0x00, 0x00, 0x4B of m (0x754k)
        wide = tl.inline_asm_elementwise(
            "{ .reg .b32 t, m; xor.b32 t, $4, 0x80808080; mov.b32 m, 0x4B000000; "
            "prmt.b32 $0, t, m, 0x7540; prmt.b32 $1, t, m, 0x7541; "
            "prmt.b32 $2, t, m, 0x7542; prmt.b32 $3, t, m, 0x7543; "
            "sub.f32 $0, $0, 0f4B000080; sub.f32 $1, $1, 0f4B000080; "
            "sub.f32 $2, $2, 0f4B000080; sub.f32 $3, $3, 0f4B000080; }",
            "=r,=r,=r,=r,r", [w], tl.float32, True, 4)  # fmt: skip
    elif dtype == tl.float16:  # bytes 0, 1 (then 2, 3) of t under the half words' 0x64
        wide = tl.inline_asm_elementwise(
            "{ .reg .b32 t, m, lo, hi, c; xor.b32 t, $2, 0x80808080; mov.b32 m, 0x64; "
            "mov.b32 c, 0x64806480; prmt.b32 lo, t, m, 0x4140; prmt.b32 hi, t, m, 0x4342; "
            "sub.f16x2 $0, lo, c; sub.f16x2 $1, hi, c; }",
            "=r,=r,r", [w], tl.float16, True, 4)  # fmt: skip
    else:  # bf16: bytes 0, 1 (then 2, 3) as the half words' low bytes; v = 0x4300 | (b &
        # 0x7F), c = 0xC300 | (b & 0x80) (-128 or -256); v * 1 + c
        wide = tl.inline_asm_elementwise(
            "{ .reg .b32 z, one, lo, hi, v, c; mov.b32 z, 0; mov.b32 one, 0x3F803F80; "
            "prmt.b32 lo, $2, z, 0x4140; prmt.b32 hi, $2, z, 0x4342; "
            "and.b32 v, lo, 0x007F007F; or.b32 v, v, 0x43004300; "
            "and.b32 c, lo, 0x00800080; or.b32 c, c, 0xC300C300; fma.rn.bf16x2 $0, v, one, c; "
            "and.b32 v, hi, 0x007F007F; or.b32 v, v, 0x43004300; "
            "and.b32 c, hi, 0x00800080; or.b32 c, c, 0xC300C300; fma.rn.bf16x2 $1, v, one, c; }",
            "=r,=r,r", [w], tl.bfloat16, True, 4)  # fmt: skip
    return wide


@triton.jit
def fp16_rounding(a):
    """a rounded to fp16 (what an F16 tile's tensor cores sum) and what that changed, a - a' in
    fp32 (exact: both are fp32 values of at most 24 significant bits apart by a few ulps)."""
    rounded = a.to(tl.float16)
    return rounded, a.to(tl.float32) - rounded.to(tl.float32)


@triton.jit
def order_key(value, index):
    """The int64 key of (value, index) in torch.argmax's order: larger value first, then the
    smaller index; value's 16 bits made monotone (-0 as +0, every NaN above +inf), as
    formats/certified.order_keys."""
    bits = value.to(tl.int16, bitcast=True).to(tl.int32)
    bits = tl.where(bits == -32768, 0, bits)
    bits = tl.where(bits < 0, bits ^ 0x7FFF, bits)
    bits = tl.where(value != value, 0x7FFF, bits)
    return (bits.to(tl.int64) << 32) | (2147483647 - index.to(tl.int64))


@triton.jit
def _candidates(upper, floor, sure, valid, dtype):
    """The rows the floor [BLOCK_M] leaves (module doc of formats/certified.py: compared after
    rounding to dtype; every row when ||a|| is not finite) -> (candidate [BLOCK_M, BLOCK_N],
    wanted [BLOCK_N] int32: 1 where some input row wants the row)."""
    dropped = upper.to(dtype).to(tl.float32) < floor.to(dtype).to(tl.float32)[:, None]
    candidate = valid & ~(dropped & sure[:, None])
    return candidate, tl.max(candidate.to(tl.int32), axis=0)


@triton.jit
def _post_best(sums, post, dtype, chosen, rows, key_ptr, rm, m_ok):
    """Exact sums [BLOCK_M, R] of head rows `rows` [R] as logits (times p, rounded to dtype):
    each input row's best key among `chosen` [BLOCK_M or 1, R] posted by atomic max."""
    value = (sums * post[:, None]).to(dtype)
    key = tl.where(chosen, order_key(value, rows[None, :]), KEY_MIN)
    tl.atomic_max(key_ptr + rm, tl.max(key, axis=1), mask=m_ok, sem="relaxed", scope="gpu")


@triton.jit
def _deferred_at(pid_m, q, deferred, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Offsets [BLOCK_M, BLOCK_N] of deferred tile q's upper bounds (block of input rows pid_m)
    in the deferred bounds' buffer."""
    slot = (pid_m * deferred + q) * BLOCK_M * BLOCK_N
    return slot + tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]


@triton.jit
def _check_rows(upper, floor, sure, valid, post, rm, m_ok, rn, x_rows, nw_ptr, rstd, K, dtype,
                exact_ptr, stride_en, key_ptr, NORM: tl.constexpr, GLU: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                USE_DOT: tl.constexpr, F32_DOT: tl.constexpr):  # fmt: skip
    """Head rows rn against the floor [BLOCK_M]: the candidates' exact logits (the head's own
    rows, a second pass over K, loads masked to the rows some input row wants; none when no row
    does) posted as keys."""
    candidate, wanted = _candidates(upper, floor, sure, valid, dtype)
    if tl.max(wanted, axis=0) > 0:
        w_rows = exact_ptr + rn[:, None].to(tl.int64) * stride_en
        rk0 = tl.arange(0, BLOCK_K)
        if USE_DOT:
            sums = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        else:
            sums3 = tl.zeros([BLOCK_M, BLOCK_N, BLOCK_K], dtype=tl.float32)
        for k0 in tl.range(0, K, BLOCK_K, num_stages=1):  # rare: no pipelining, less memory
            rk = k0 + rk0
            k_ok = rk < K
            a = input_tile(x_rows, rk[None, :], m_ok[:, None] & k_ok[None, :], nw_ptr, rstd, K,
                           dtype, NORM, GLU)  # fmt: skip
            w = tl.load(w_rows + rk[None, :], mask=(wanted > 0)[:, None] & k_ok[None, :],
                        other=0.0)  # fmt: skip
            if USE_DOT:
                sums += dot(a, tl.trans(w), F32_DOT)
            else:
                sums3 += a.to(tl.float32)[:, None, :] * w.to(tl.float32)[None, :, :]
        if not USE_DOT:
            sums = tl.sum(sums3, axis=2)
        _post_best(sums, post, dtype, candidate, rn, key_ptr, rm, m_ok)


@triton.jit
def _check_compact(upper, floor, sure, valid, post, rm, m_ok, rn, x_rows, nw_ptr, rstd, K,
                   dtype, exact_ptr, stride_en, key_ptr, NORM: tl.constexpr, GLU: tl.constexpr,
                   BLOCK_M: tl.constexpr, USE_DOT: tl.constexpr, F32_DOT: tl.constexpr,
                   SLOTS_N: tl.constexpr = SLOTS,
                   STEP: tl.constexpr = EXACT_K):  # fmt: skip
    """_check_rows with the wanted rows gathered SLOTS_N at a time (COMPACT): each round reads a
    [SLOTS_N, STEP] tile of the head's rows, pipelined, instead of the whole tile's rows masked.
    Every gathered row's exact key is posted for every input row: a key that is the exact logit
    of some row can never displace the argmax's, so the per-row candidacy needs no gather."""
    _, wanted = _candidates(upper, floor, sure, valid, dtype)
    count = tl.sum(wanted, axis=0)
    rank = tl.cumsum(wanted, axis=0) - 1
    j = tl.arange(0, SLOTS_N)
    rk0 = tl.arange(0, STEP)
    for start in range(0, count, SLOTS_N):
        pick = (rank[None, :] == (start + j)[:, None]) & (wanted[None, :] > 0)
        rows = tl.sum(tl.where(pick, rn[None, :], 0), axis=1)  # [SLOTS] the slot's head row
        slot_ok = start + j < count
        w_rows = exact_ptr + rows[:, None].to(tl.int64) * stride_en
        sums = tl.zeros([BLOCK_M, SLOTS_N], dtype=tl.float32)
        for k0 in tl.range(0, K, STEP, num_stages=3):
            rk = k0 + rk0
            k_ok = rk < K
            a = input_tile(x_rows, rk[None, :], m_ok[:, None] & k_ok[None, :], nw_ptr, rstd, K,
                           dtype, NORM, GLU)  # fmt: skip
            w = tl.load(w_rows + rk[None, :], mask=slot_ok[:, None] & k_ok[None, :], other=0.0)
            if USE_DOT:
                sums += dot(a, tl.trans(w), F32_DOT)
            else:
                sums += tl.sum(a.to(tl.float32)[:, None, :] * w.to(tl.float32)[None, :, :], axis=2)
        _post_best(sums, post, dtype, slot_ok[None, :], rows, key_ptr, rm, m_ok)


@triton.jit
def _check(upper, floor, sure, valid, post, rm, m_ok, rn, x_rows, nw_ptr, rstd, K, dtype,
           exact_ptr, stride_en, key_ptr, NORM: tl.constexpr, GLU: tl.constexpr,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
           USE_DOT: tl.constexpr, F32_DOT: tl.constexpr, COMPACT: tl.constexpr,
           SLOTS_N: tl.constexpr = SLOTS, STEP: tl.constexpr = EXACT_K):  # fmt: skip
    if COMPACT:
        _check_compact(upper, floor, sure, valid, post, rm, m_ok, rn, x_rows, nw_ptr, rstd, K,
                       dtype, exact_ptr, stride_en, key_ptr, NORM, GLU, BLOCK_M, USE_DOT,
                       F32_DOT, SLOTS_N, STEP)  # fmt: skip
    else:
        _check_rows(upper, floor, sure, valid, post, rm, m_ok, rn, x_rows, nw_ptr, rstd, K,
                    dtype, exact_ptr, stride_en, key_ptr, NORM, GLU, BLOCK_M, BLOCK_N, BLOCK_K,
                    USE_DOT, F32_DOT)  # fmt: skip


@triton.jit
def _handed_over(flag_ptr, claim, any_tensor, FENCE: tl.constexpr):
    """Swap `claim` into a deferred tile's flag after this program's stores (ordered before it
    as in common.count_done); returns the flag's old value."""
    if FENCE:
        tl.inline_asm_elementwise("fence.acq_rel.gpu; mov.u32 $0, $1;", "=r,r", [any_tensor],
                                  tl.int32, is_pure=False, pack=1)  # fmt: skip
    tl.debug_barrier()
    return tl.atomic_xchg(flag_ptr, claim, sem="acq_rel", scope="gpu")


@triton.jit
def certify(
    acc, squares, post, rm, m_ok, rn, n_ok, pid_n, pid_m, x_rows, nw_ptr, rstd, K, dtype,
    scale_ptr, radius_ptr, exact_ptr, stride_en, floor_ptr, key_ptr, count_ptr, token_ptr,
    ids_ptr, packed_ptr, M, N, stride_ids, stride_packed, upper_ptr, flag_ptr, deferred,
    NORM: tl.constexpr, GLU: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr, USE_DOT: tl.constexpr, F32_DOT: tl.constexpr,
    TILES_N: tl.constexpr, TILES_M: tl.constexpr, ACCEPT: tl.constexpr, WIDTH: tl.constexpr,
    WIDTH_POW2: tl.constexpr, FENCE: tl.constexpr, DEFER: tl.constexpr,
    COMPACT: tl.constexpr = False,
    changes=None,
    F16: tl.constexpr = False,
    UPPERS_OUT: tl.constexpr = False,
):  # fmt: skip
    """acc [BLOCK_M, BLOCK_N]: the int8 sums of this tile; squares [BLOCK_M or 1, BLOCK_K]: the
    element-wise sums of the inputs' squares; post [BLOCK_M]: p (module doc). DEFER: the first
    `deferred` tiles along N leave their check to the last `deferred` (module doc). F16: acc
    summed the inputs rounded to fp16, a', and changes (shaped as squares) holds the
    element-wise sums of (a - a')^2: each bound widens by ||a - a'|| times twice a bound on
    ||Q_n s_n||. UPPERS_OUT (TWO_PASS): the upper bounds stored at upper_ptr [M, N] and the
    floors posted; the check, the tokens and the packing are `_exact_kernel`'s."""
    scale = tl.load(scale_ptr + rn, mask=n_ok, other=0.0)
    radius = tl.load(radius_ptr + rn, mask=n_ok, other=0.0)
    approx = acc * scale[None, :]
    # squares (and changes) [STAT_ROWS, BLOCK_K]: one row's on a taller tile (the others'
    # are masked), or BLOCK_M rows'
    norm = tl.broadcast_to(tl.sqrt(tl.sum(squares, axis=1)), [BLOCK_M])
    reach = norm[:, None] * radius[None, :]
    sure = norm < float("inf")  # False for inf and NaN: every row a candidate
    if F16:  # ||Q_n|| <= 127 sqrt(K): 254 sqrt(K) s_n >= 2 ||Q_n s_n|| (formats/certified.py)
        change = tl.broadcast_to(tl.sqrt(tl.sum(changes, axis=1)), [BLOCK_M])
        sure = sure & (change < float("inf"))  # an input past fp16's range: inf
        spread = scale * 254.0 * tl.sqrt(tl.zeros([BLOCK_N], tl.float32) + K)
        reach += change[:, None] * spread[None, :]
    valid = m_ok[:, None] & n_ok[None, :]
    lower = tl.where(valid, (approx - reach) * post[:, None], float("-inf"))
    upper = (approx + reach) * post[:, None]
    local = tl.max(lower, axis=1)
    seen = tl.atomic_max(floor_ptr + rm, local, mask=m_ok & sure, sem="relaxed", scope="gpu")
    floor = tl.maximum(tl.where(m_ok & sure, seen, float("-inf")), local)
    if UPPERS_OUT:  # the second launch checks them against the final floors
        tl.store(upper_ptr + rm[:, None].to(tl.int64) * N + rn[None, :], upper, mask=valid)
    elif DEFER and pid_n < deferred:  # stored for a tile of the last wave to check
        tl.store(upper_ptr + _deferred_at(pid_m, pid_n, deferred, BLOCK_M, BLOCK_N), upper)
        if _handed_over(flag_ptr + pid_m * deferred + pid_n, 1, rm, FENCE) == 2:
            # its checker came first and found nothing: this tile checks itself
            floor = tl.load(floor_ptr + rm, mask=m_ok, other=float("-inf"), cache_modifier=".cg")
            _check(upper, floor, sure, valid, post, rm, m_ok, rn, x_rows, nw_ptr, rstd, K,
                        dtype, exact_ptr, stride_en, key_ptr, NORM, GLU, BLOCK_M, BLOCK_N,
                        BLOCK_K, USE_DOT, F32_DOT, COMPACT)  # fmt: skip
    else:
        _check(upper, floor, sure, valid, post, rm, m_ok, rn, x_rows, nw_ptr, rstd, K,
                    dtype, exact_ptr, stride_en, key_ptr, NORM, GLU, BLOCK_M, BLOCK_N, BLOCK_K,
                    USE_DOT, F32_DOT, COMPACT)  # fmt: skip
        if DEFER and pid_n >= TILES_N - deferred:  # then the deferred tile it checks
            q = pid_n - (TILES_N - deferred)
            if _handed_over(flag_ptr + pid_m * deferred + q, 2, rm, FENCE) == 1:
                at = _deferred_at(pid_m, q, deferred, BLOCK_M, BLOCK_N)
                upper = tl.load(upper_ptr + at, cache_modifier=".cg")
                rn = q * BLOCK_N + tl.arange(0, BLOCK_N)
                valid = m_ok[:, None] & (rn < N)[None, :]
                floor = tl.load(floor_ptr + rm, mask=m_ok, other=float("-inf"),
                                cache_modifier=".cg")  # fmt: skip
                _check(upper, floor, sure, valid, post, rm, m_ok, rn, x_rows, nw_ptr, rstd,
                            K, dtype, exact_ptr, stride_en, key_ptr, NORM, GLU, BLOCK_M,
                            BLOCK_N, BLOCK_K, USE_DOT, F32_DOT, COMPACT)  # fmt: skip
    if not UPPERS_OUT:
        finish_rows(pid_m, rm, m_ok, floor_ptr, key_ptr, count_ptr, token_ptr, ids_ptr,
                    packed_ptr, M, stride_ids, stride_packed, flag_ptr, deferred, BLOCK_M,
                    TILES_N, TILES_M, ACCEPT, WIDTH, WIDTH_POW2, FENCE, DEFER)  # fmt: skip


@triton.jit
def finish_rows(pid_m, rm, m_ok, floor_ptr, key_ptr, count_ptr, token_ptr, ids_ptr, packed_ptr, M,
                stride_ids, stride_packed, flag_ptr, deferred, BLOCK_M: tl.constexpr,
                TILES_N: tl.constexpr, TILES_M: tl.constexpr, ACCEPT: tl.constexpr,
                WIDTH: tl.constexpr, WIDTH_POW2: tl.constexpr, FENCE: tl.constexpr,
                DEFER: tl.constexpr):  # fmt: skip
    """A program's end: the last of the TILES_N programs of its block of input rows turns the
    keys into tokens and leaves the floors, keys (and DEFER's flags) as they were found; with
    ACCEPT the last such block packs every verify block."""
    if count_done(count_ptr + pid_m, rm, TILES_N, FENCE):
        key = tl.load(key_ptr + rm, mask=m_ok, other=0, cache_modifier=".cg")
        tl.store(token_ptr + rm, 2147483647 - (key & 0xFFFFFFFF), mask=m_ok)
        tl.store(key_ptr + rm, tl.full([BLOCK_M], KEY_MIN, tl.int64), mask=m_ok)
        tl.store(floor_ptr + rm, tl.full([BLOCK_M], float("-inf"), tl.float32), mask=m_ok)
        if DEFER:  # the flags of this block of input rows back to 0
            for q0 in range(0, deferred, 1024):
                q = q0 + tl.arange(0, 1024)
                tl.store(flag_ptr + pid_m * deferred + q, tl.zeros([1024], tl.int32),
                         mask=q < deferred)  # fmt: skip
        count_reset(count_ptr + pid_m)
        if ACCEPT:  # the last block of input rows to finish packs every verify block
            if count_done(count_ptr + TILES_M, rm, TILES_M, FENCE):
                for block in range(0, M // WIDTH):
                    pack_rows(token_ptr, ids_ptr, packed_ptr, block, stride_ids, stride_packed,
                              WIDTH, WIDTH_POW2)  # fmt: skip
                count_reset(count_ptr + TILES_M)


@triton.jit
def _exact_kernel(x_ptr, nw_ptr, exact_ptr, upper_ptr, floor_ptr, key_ptr, count_ptr, token_ptr,
                  M, N, K, stride_xm, stride_en, eps, NORM: tl.constexpr, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, USE_DOT: tl.constexpr,
                  F32_DOT: tl.constexpr, TILES_N: tl.constexpr, TILES_M: tl.constexpr,
                  FENCE: tl.constexpr, COMPACT: tl.constexpr, HAND_IN: tl.constexpr = False,
                  sq_in_ptr=None, stride_sq_in=0, slots_in=0, SLOTS_IN: tl.constexpr = 1,
                  ACCEPT: tl.constexpr = False, ids_ptr=None, packed_ptr=None, stride_ids=0,
                  stride_packed=0, WIDTH: tl.constexpr = 1, WIDTH_POW2: tl.constexpr = 1,
                  PDL: tl.constexpr = False, TRACE: tl.constexpr = 0, trace_ptr=None,
                  clock_ptr=None, SLOTS_N: tl.constexpr = SLOTS,
                  STEP: tl.constexpr = EXACT_K):  # fmt: skip
    """TWO_PASS's second launch: head rows [pid_n * BLOCK_N, +BLOCK_N) of input rows block
    pid_m: their upper bounds (the multiply's, times p) against the final floors; the
    candidates' exact logits as in one launch (`_check`: the same proof, a floor that no
    longer rises), then the tokens and packing (`finish_rows`)."""
    trace_mark(trace_ptr, clock_ptr, 0, TRACE)
    pdl_enter(PDL, trace_ptr, clock_ptr, TRACE)
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    dtype = exact_ptr.dtype.element_ty
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    m_ok = rm < M
    valid = m_ok[:, None] & (rn < N)[None, :]
    upper = tl.load(upper_ptr + rm[:, None].to(tl.int64) * N + rn[None, :], mask=valid,
                    other=float("-inf"))  # fmt: skip
    floor = tl.load(floor_ptr + rm, mask=m_ok, other=float("-inf"))
    # rows past fp16's range or not finite: their floor was never posted (-inf), so nothing
    # is dropped; the bounds themselves carry no other doubt
    sure = rm >= 0
    _, wanted = _candidates(upper, floor, sure, valid, dtype)
    if tl.max(wanted, axis=0) > 0:
        x_rows = x_ptr + rm[:, None] * stride_xm
        rstd = tl.zeros([BLOCK_M], dtype=tl.float32)
        if NORM:
            rstd = row_rstd(x_rows, m_ok, K, eps, BLOCK_M, BLOCK_K)
        post = tl.full([BLOCK_M], 1.0, tl.float32)
        if HAND_IN:
            post = handed_rstd(handed_squares(sq_in_ptr, rm, m_ok, stride_sq_in, slots_in,
                                              SLOTS_IN), K, eps)  # fmt: skip
        _check(upper, floor, sure, valid, post, rm, m_ok, rn, x_rows, nw_ptr, rstd, K, dtype,
               exact_ptr, stride_en, key_ptr, NORM, False, BLOCK_M, BLOCK_N, BLOCK_K, USE_DOT,
               F32_DOT, COMPACT, SLOTS_N, STEP)  # fmt: skip
    finish_rows(pid_m, rm, m_ok, floor_ptr, key_ptr, count_ptr, token_ptr, ids_ptr, packed_ptr,
                M, stride_ids, stride_packed, floor_ptr, 0, BLOCK_M, TILES_N, TILES_M, ACCEPT,
                WIDTH, WIDTH_POW2, FENCE, False)  # fmt: skip
    trace_mark(trace_ptr, clock_ptr, 2, TRACE)


def exact_pass(
    x: torch.Tensor,
    head: CertifiedHead,
    bounds: torch.Tensor,
    floors: torch.Tensor,
    keys: torch.Tensor,
    tokens: torch.Tensor,
    *,
    norm_weight: torch.Tensor | None,
    eps: float,
    squares: torch.Tensor | None,
    accept: dict,
) -> None:
    """TWO_PASS's second launch after linear.certified_argmax's multiply, which left the upper
    bounds in bounds [M, N] (times p) and posted the floors: `_exact_kernel` over head rows
    EXACT_ROWS(_ONE) a program, the input rows 16 a program (one row: 1, element-wise sums);
    tokens [M] and accept's packed rows filled. squares: a handed norm's [M, slots]. The
    candidates are always gathered (COMPACT): a masked [rows, K] tile of EXACT_ROWS rows would
    not fit a program."""
    m, (n, k) = x.shape[0], head.shape
    rows = EXACT_ROWS_ONE if m == 1 else EXACT_ROWS
    block_m = 1 if m == 1 else 16
    grid = (triton.cdiv(n, rows), triton.cdiv(m, block_m))
    counters = zeroed_counters(x.device, grid[1] + 1)
    hand = handed_arguments(squares) if squares is not None else {}
    _exact_kernel[grid](
        x, norm_weight if norm_weight is not None else x, head.exact, bounds, floors, keys,
        counters, tokens, m, n, k, x.stride(0), head.exact.stride(0), eps,
        NORM=norm_weight is not None, BLOCK_M=block_m, BLOCK_N=rows, BLOCK_K=256,
        USE_DOT=block_m > 1, F32_DOT=INTERPRETED, TILES_N=grid[0], TILES_M=grid[1],
        FENCE=not INTERPRETED, COMPACT=True, SLOTS_N=EXACT_SLOTS, STEP=EXACT_STEP, num_warps=4,
        **hand, **accept, **launch.pdl(x),
        **trace.arguments(x, "certified_exact", grid[0] * grid[1], bytes=m * n * 4, rows=m,
                          n=n, k=k),
    )  # fmt: skip


def two_pass(m: int) -> bool:
    """Whether a certified launch of m rows takes its exact pass in a second launch (TWO_PASS)."""
    return bool(TWO_PASS) and m >= TWO_PASS_MIN_ROWS


def stats_first(m: int, norm: bool) -> bool:
    """Whether a certified launch of m rows takes its rows' sums from `row_stats` (ROW_STATS);
    never with a norm prologue (the sums are of the normed rows, which only the multiply makes)."""
    return not norm and (ROW_STATS >= 2 or (ROW_STATS == 1 and m > 1))


@triton.jit
def _row_stats_kernel(x_ptr, out_ptr, K, stride_xm, F16: tl.constexpr, BLOCK: tl.constexpr,
                      X16_OUT: tl.constexpr = False, x16_ptr=None, PDL: tl.constexpr = False,
                      TRACE: tl.constexpr = 0, trace_ptr=None, clock_ptr=None):  # fmt: skip
    """Row pid's sum of squares and (F16) of (a - fp16(a))^2 into out [pid, 0:2]: the sums the
    multiply otherwise makes in each of its programs (formats/certified.py: any order); X16_OUT:
    the row rounded to fp16 into x16 [pid, :] (contiguous rows of K)."""
    trace_mark(trace_ptr, clock_ptr, 0, TRACE)
    pdl_enter(PDL, trace_ptr, clock_ptr, TRACE)
    row = tl.program_id(0)
    squares = tl.zeros([BLOCK], dtype=tl.float32)
    changes = tl.zeros([BLOCK], dtype=tl.float32)
    for k0 in range(0, K, BLOCK):
        rk = k0 + tl.arange(0, BLOCK)
        a = tl.load(x_ptr + row * stride_xm + rk, mask=rk < K, other=0.0)
        squares += a.to(tl.float32) * a.to(tl.float32)
        if F16:
            rounded, change = fp16_rounding(a)
            changes += change * change
            if X16_OUT:
                tl.store(x16_ptr + row.to(tl.int64) * K + rk, rounded, mask=rk < K)
    tl.store(out_ptr + 2 * row, tl.sum(squares, axis=0))
    tl.store(out_ptr + 2 * row + 1, tl.sum(changes, axis=0))
    trace_mark(trace_ptr, clock_ptr, 2, TRACE)


def row_stats(
    x: torch.Tensor, f16: bool, x16: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Each row of x [M, K]'s sum of squares and (f16) of what rounding it to fp16 changes ->
    ([M, 2] fp32, for a certified multiply's STATS_IN (ROW_STATS); with x16 (and f16) x rounded
    to fp16 [M, K], the multiply's input (X16), else None)."""
    m, k = x.shape
    out = torch.empty(m, 2, device=x.device, dtype=torch.float32)
    rounded = torch.empty(m, k, device=x.device, dtype=torch.float16) if f16 and x16 else None
    extra = dict(X16_OUT=True, x16_ptr=rounded) if rounded is not None else {}
    _row_stats_kernel[(m,)](
        x, out, k, x.stride(0), F16=f16, BLOCK=1024, num_warps=4, **extra, **launch.pdl(x),
        **trace.arguments(x, "certified_stats", m, bytes=m * k * x.element_size(), rows=m, n=2,
                          k=k),
    )  # fmt: skip
    return out, rounded
