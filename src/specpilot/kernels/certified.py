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

Programs finish in launch order roughly, so the first wave compares against floors of their own
rows only and reads more candidates (a few thousand rows of 151,936 with random weights, about
25 MB, against the 622 MB of int8 rows); later ones see the floor of the rows before them.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from specpilot.kernels.common import count_done, count_reset, dot, input_tile
from specpilot.kernels.tokens import pack_rows

KEY_MIN = tl.constexpr(-(2**63))
# floors and keys per device, left at -inf / KEY_MIN by every launch (as common's counters)
_HELD: dict[torch.device, list[tuple[torch.Tensor, torch.Tensor]]] = {}


def floors_and_keys(device: torch.device, rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The per-row floor (fp32, -inf) and key (int64, the smallest) buffers of at least `rows`
    rows. A larger pair replaces a smaller one for new launches; every pair is kept (captured
    graphs replay their addresses). Made before a CUDA graph capture, like the counters."""
    held = _HELD.setdefault(device, [])
    if not held or held[-1][0].numel() < rows:
        if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
            raise RuntimeError("certified head buffers must be allocated before a graph capture")
        size = max(rows, 64)
        floors = torch.full((size,), float("-inf"), device=device, dtype=torch.float32)
        keys = torch.full((size,), -(2**63), device=device, dtype=torch.int64)
        held.append((floors, keys))
    return held[-1]


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
def certify(
    acc, squares, post, rm, m_ok, rn, n_ok, pid_m, x_rows, nw_ptr, rstd, K, dtype, scale_ptr,
    radius_ptr, exact_ptr, stride_en, floor_ptr, key_ptr, count_ptr, token_ptr, ids_ptr,
    packed_ptr, M, stride_ids, stride_packed, NORM: tl.constexpr, GLU: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, USE_DOT: tl.constexpr,
    F32_DOT: tl.constexpr, TILES_N: tl.constexpr, TILES_M: tl.constexpr, ACCEPT: tl.constexpr,
    WIDTH: tl.constexpr, WIDTH_POW2: tl.constexpr, FENCE: tl.constexpr,
):  # fmt: skip
    """acc [BLOCK_M, BLOCK_N]: the int8 sums of this tile; squares [BLOCK_M, BLOCK_K]: the
    element-wise sums of the inputs' squares; post [BLOCK_M]: p (module doc)."""
    scale = tl.load(scale_ptr + rn, mask=n_ok, other=0.0)
    radius = tl.load(radius_ptr + rn, mask=n_ok, other=0.0)
    approx = acc * scale[None, :]
    norm = tl.sqrt(tl.sum(squares, axis=1))
    sure = norm < float("inf")  # False for inf and NaN: every row a candidate
    reach = norm[:, None] * radius[None, :]
    valid = m_ok[:, None] & n_ok[None, :]
    lower = tl.where(valid, (approx - reach) * post[:, None], float("-inf"))
    upper = (approx + reach) * post[:, None]
    local = tl.max(lower, axis=1)
    seen = tl.atomic_max(floor_ptr + rm, local, mask=m_ok & sure, sem="relaxed", scope="gpu")
    floor = tl.maximum(tl.where(m_ok & sure, seen, float("-inf")), local)
    dropped = upper.to(dtype).to(tl.float32) < floor.to(dtype).to(tl.float32)[:, None]
    candidate = valid & ~(dropped & sure[:, None])
    wanted = tl.max(candidate.to(tl.int32), axis=0) > 0  # [BLOCK_N]: some input row wants it
    if tl.max(wanted.to(tl.int32), axis=0) > 0:
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
            w = tl.load(w_rows + rk[None, :], mask=wanted[:, None] & k_ok[None, :], other=0.0)
            if USE_DOT:
                sums += dot(a, tl.trans(w), F32_DOT)
            else:
                sums3 += a.to(tl.float32)[:, None, :] * w.to(tl.float32)[None, :, :]
        if not USE_DOT:
            sums = tl.sum(sums3, axis=2)
        value = (sums * post[:, None]).to(dtype)
        key = tl.where(candidate, order_key(value, rn[None, :]), KEY_MIN)
        tl.atomic_max(key_ptr + rm, tl.max(key, axis=1), mask=m_ok, sem="relaxed", scope="gpu")
    if count_done(count_ptr + pid_m, rm, TILES_N, FENCE):
        key = tl.load(key_ptr + rm, mask=m_ok, other=0, cache_modifier=".cg")
        tl.store(token_ptr + rm, 2147483647 - (key & 0xFFFFFFFF), mask=m_ok)
        tl.store(key_ptr + rm, tl.full([BLOCK_M], KEY_MIN, tl.int64), mask=m_ok)
        tl.store(floor_ptr + rm, tl.full([BLOCK_M], float("-inf"), tl.float32), mask=m_ok)
        count_reset(count_ptr + pid_m)
        if ACCEPT:  # the last block of input rows to finish packs every verify block
            if count_done(count_ptr + TILES_M, rm, TILES_M, FENCE):
                for block in range(0, M // WIDTH):
                    pack_rows(token_ptr, ids_ptr, packed_ptr, block, stride_ids, stride_packed,
                              WIDTH, WIDTH_POW2)  # fmt: skip
                count_reset(count_ptr + TILES_M)
