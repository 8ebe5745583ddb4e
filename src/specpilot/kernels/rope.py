"""Per-head q/k RMSNorm, rotary embedding and the KV-cache write, fused into one pass.

Input is the output of the fused q|k|v projection, [M, (heads + 2 * kv_heads) * head_dim] for M
tokens (B sequences of T consecutive tokens, row m = b * T + t). One program handles all heads
of one token: query heads are normalised (Qwen3), rotated and returned as [M, heads, head_dim];
key heads are normalised, rotated and stored in the cache at the token's position; value heads
are stored as they are. The code rounds where the PyTorch modules round (norm, scale, each
rotary product, their sum) and is bit-identical to the reference in Triton's interpreter;
compiled, the norm's sum runs in another order and the compiler may keep an intermediate in
fp32, so a few outputs differ by a bf16 rounding or two (tests/test_kernels.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from specpilot.kernels import launch, trace
from specpilot.kernels.common import (
    INTERPRETED,
    count_done,
    count_reset,
    pdl_enter,
    trace_mark,
    zeroed_counters,
)
from specpilot.layers.norm import rms_norm

# the token's position and its rows of the rotary tables read before the PDL wait, while the
# q|k|v multiply before still runs, instead of after it (one dependent round trip fewer after
# the wait: the tables' rows need the position). Safe as attention.EARLY_POSITIONS is: the
# positions are written before the forward's first kernel, at least two kernels earlier, a
# kernel launches its dependents only after its own wait, and the position is read with .cg
# (from L2); the tables never change. Without PDL the kernel starts after the one before has
# ended anyway. Run 142 (the kernel timeline's variants, Qwen3-8B shape, 1k, one process): the
# rope launches 61.4 -> 60.3 us a one-token forward, 64.6 -> 56.8 a 16-token one, 14.9 -> 12.5
# a draft; back to back 4.137 -> 4.133, 4.494 -> 4.487 and 0.989 -> 0.987 ms (the base
# repeated within 0.05%). Same bits in eager launches under PDL (tests/test_kernels.py, also on
# the H200). Run 143 (inside the captured graphs, engine_speed --switch
# kernels.rope.EARLY_TABLES=1, Qwen3-8B shape, 1k): token forcing AR and spec passed; timeline
# variants at 1k / 8k / 32k: rope -2 to -9 us a forward every time, back to back -0.04 to -0.16%
# (the base repeated within 0.16%). On by default since.
EARLY_TABLES = True
# The rope kernel's work in the q|k|v multiply's epilogue (RopeEpilogue): the last of the
# programs whose columns make up one head (a counter per head, common.count_done) reads the
# head's rounded outputs back through L2 and norms, rotates and stores them as the rope kernel
# does, so that no rope launch (and no gap before it) sits between the multiply and the
# attention: 36 launches of ~1.6 us and their gaps a Qwen3-8B forward (run 190's timeline:
# rope 58 us, gaps 189 us in 290 launches). Bf16 skinny tiles only (no K split, no SwiGLU,
# BLOCK_N a divisor or a multiple of head_dim); otherwise, or off, the rope kernel runs. Run 196
# (bench/timeline.py --variants, Qwen3-8B shape, 1k, back to back, base twice): the one-token
# forward level (+0.01%: rope -60 us, the q|k|v multiply +53, gaps -13), the 16-token one
# +1.2% (rope -57, q|k|v +50, the attention after it +53): the last program's head, read back
# and rotated behind its counter, costs the multiply's tail what the rope launch cost. The value
# is the most token rows a forward does it at (0: off; 1: one-token forwards only); a knob for
# the tuner (bench/engine_speed.py --switch kernels.rope.EPILOGUE=N).
EPILOGUE = 0


@triton.jit
def rotary_tables(cos_ptr, sin_ptr, pos, r, HEAD_DIM: tl.constexpr):
    """The cos and sin halves (columns r) of position pos's rows of the rotary tables."""
    half: tl.constexpr = HEAD_DIM // 2
    row = pos * HEAD_DIM
    c1 = tl.load(cos_ptr + row + r)
    c2 = tl.load(cos_ptr + row + half + r)
    s1 = tl.load(sin_ptr + row + r)
    s2 = tl.load(sin_ptr + row + half + r)
    return c1, c2, s1, s2


@triton.jit
def norm_rotate(x1, x2, w1, w2, c1, c2, s1, s2, eps, dtype, HEAD_DIM: tl.constexpr,
                QK_NORM: tl.constexpr):  # fmt: skip
    """Rows of heads given as halves x1, x2 [R, HEAD_DIM / 2]: RMSNorm by the norm weight's
    halves w1, w2 (with QK_NORM), then rotary by the position's table halves c1, c2, s1, s2
    (rotary_tables), rounded where the PyTorch modules round; the rotated halves in `dtype`."""
    x1 = x1.to(tl.float32)
    x2 = x2.to(tl.float32)
    if QK_NORM:
        sum_sq = tl.sum(x1 * x1, axis=1) + tl.sum(x2 * x2, axis=1)
        rstd = tl.math.rsqrt(sum_sq / HEAD_DIM + eps)
        x1 = (x1 * rstd[:, None]).to(dtype).to(tl.float32)
        x2 = (x2 * rstd[:, None]).to(dtype).to(tl.float32)
        x1 = (x1 * w1.to(tl.float32)).to(dtype).to(tl.float32)
        x2 = (x2 * w2.to(tl.float32)).to(dtype).to(tl.float32)
    c1 = c1.to(tl.float32)
    c2 = c2.to(tl.float32)
    s1 = s1.to(tl.float32)
    s2 = s2.to(tl.float32)
    # x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1]; each product rounded first
    o1 = ((x1 * c1).to(dtype).to(tl.float32) + (-x2 * s1).to(dtype).to(tl.float32)).to(dtype)
    o2 = ((x2 * c2).to(dtype).to(tl.float32) + (x1 * s2).to(dtype).to(tl.float32)).to(dtype)
    return o1, o2


@dataclass
class RopeEpilogue:
    """What the rope kernel would take for one layer (qk_rope_write's arguments but the
    projection), for a q|k|v multiply to do its work in the epilogue (skinny_linear's `rope`):
    the multiply fills `q` with the rotated queries [M, heads, D] and writes the keys and values
    into the cache, or leaves `q` None where its tile cannot (the caller then runs
    qk_rope_write on the projection, which the multiply returned as ever)."""

    positions: torch.Tensor  # [B, T]
    cos: torch.Tensor
    sin: torch.Tensor
    k_cache: torch.Tensor  # [B, kv_heads, L, D], one layer
    v_cache: torch.Tensor
    heads: int
    q_norm: torch.Tensor | None
    k_norm: torch.Tensor | None
    eps: float
    q: torch.Tensor | None = None

    def arguments(self, qkv: torch.Tensor, cfg: dict, split: int, swiglu: bool) -> dict:
        """The skinny kernel's ROPE arguments for a multiply writing `qkv` [M, N] on tile
        `cfg`, with `q` made here; {} (and `q` left None) where the tile cannot: a K split,
        the SwiGLU epilogue, or BLOCK_N neither a divisor nor a multiple of the head's
        columns."""
        head_dim = self.k_cache.shape[3]
        block_n = cfg["BLOCK_N"]
        if split > 1 or swiglu or max(block_n, head_dim) % min(block_n, head_dim):
            return {}
        _check(qkv, self.positions, self.cos, self.sin, self.k_cache, self.v_cache, self.heads)
        _check_norms(self.q_norm, self.k_norm)
        kv_heads = self.k_cache.shape[1]
        m = qkv.shape[0]
        self.q = qkv.new_empty(m, self.heads, head_dim)
        heads_all = self.heads + 2 * kv_heads  # a counter per head and block of rows
        counters = zeroed_counters(qkv.device, triton.cdiv(m, cfg["BLOCK_M"]) * heads_all)
        norm = self.q_norm if self.q_norm is not None else self.cos
        return dict(
            ROPE=True,
            rope_count_ptr=counters,
            q_out_ptr=self.q,
            k_cache_ptr=self.k_cache,
            v_cache_ptr=self.v_cache,
            pos_ptr=self.positions.reshape(-1).contiguous(),
            cos_ptr=self.cos,
            sin_ptr=self.sin,
            qn_ptr=norm,
            kn_ptr=self.k_norm if self.k_norm is not None else norm,
            stride_cb=self.k_cache.stride(0),
            stride_ch=self.k_cache.stride(1),
            stride_cl=self.k_cache.stride(2),
            rope_t=self.positions.shape[1],
            rope_eps=self.eps,
            HEADS=self.heads,
            KV_HEADS=kv_heads,
            HEAD_DIM=head_dim,
            QK_NORM=self.k_norm is not None,
            ROPE_FENCE=not INTERPRETED,
        )


@triton.jit
def rope_epilogue(y_ptr, rm, m_ok, stride_ym, count_ptr, q_out_ptr, k_cache_ptr, v_cache_ptr,
                  pos_ptr, cos_ptr, sin_ptr, qn_ptr, kn_ptr, stride_cb, stride_ch, stride_cl, T,
                  eps, HEADS: tl.constexpr, KV_HEADS: tl.constexpr, HEAD_DIM: tl.constexpr,
                  BLOCK_N: tl.constexpr, QK_NORM: tl.constexpr, FENCE: tl.constexpr):  # fmt: skip
    """After a q|k|v tile (rows rm, columns of program_id(0)) has stored its outputs y, the rope
    kernel's work for the heads it completes (`_rope_head`): with BLOCK_N < HEAD_DIM the last
    of the HEAD_DIM / BLOCK_N programs of a head and block of rows does that head (a counter
    each, common.count_done); with BLOCK_N >= HEAD_DIM each program does its own whole heads."""
    if BLOCK_N < HEAD_DIM:
        GROUP: tl.constexpr = HEAD_DIM // BLOCK_N
        head = tl.program_id(0) // GROUP
        counter = count_ptr + tl.program_id(1) * (HEADS + 2 * KV_HEADS) + head
        if count_done(counter, rm, GROUP, FENCE):
            _rope_head(head, y_ptr, rm, m_ok, stride_ym, q_out_ptr, k_cache_ptr, v_cache_ptr,
                       pos_ptr, cos_ptr, sin_ptr, qn_ptr, kn_ptr, stride_cb, stride_ch,
                       stride_cl, T, eps, HEADS, KV_HEADS, HEAD_DIM, QK_NORM)  # fmt: skip
            count_reset(counter)
    else:
        EACH: tl.constexpr = BLOCK_N // HEAD_DIM
        tl.debug_barrier()  # the program's own stores, read back by its other threads
        for j in tl.static_range(EACH):
            head = tl.program_id(0) * EACH + j
            if head < HEADS + 2 * KV_HEADS:
                _rope_head(head, y_ptr, rm, m_ok, stride_ym, q_out_ptr, k_cache_ptr,
                           v_cache_ptr, pos_ptr, cos_ptr, sin_ptr, qn_ptr, kn_ptr, stride_cb,
                           stride_ch, stride_cl, T, eps, HEADS, KV_HEADS, HEAD_DIM,
                           QK_NORM)  # fmt: skip


@triton.jit
def _rope_head(head, y_ptr, rm, m_ok, stride_ym, q_out_ptr, k_cache_ptr, v_cache_ptr, pos_ptr,
               cos_ptr, sin_ptr, qn_ptr, kn_ptr, stride_cb, stride_ch, stride_cl, T, eps,
               HEADS: tl.constexpr, KV_HEADS: tl.constexpr, HEAD_DIM: tl.constexpr,
               QK_NORM: tl.constexpr):  # fmt: skip
    """The rope kernel's work for one head of rows rm of y, read through L2 as stored (rounded,
    so the values are the rope kernel's): a query head normed and rotated into q_out [M, HEADS,
    D], a key head normed, rotated and a value head as it is into the caches at the rows'
    positions (row m = b * T + t)."""
    half: tl.constexpr = HEAD_DIM // 2
    r = tl.arange(0, half)
    om = m_ok[:, None]
    src = y_ptr + rm[:, None] * stride_ym + head * HEAD_DIM + r[None, :]
    x1 = tl.load(src, mask=om, other=0.0, cache_modifier=".cg")
    x2 = tl.load(src + half, mask=om, other=0.0, cache_modifier=".cg")
    pos = tl.load(pos_ptr + rm, mask=m_ok, other=0)
    kvh = tl.where(head >= HEADS + KV_HEADS, head - HEADS - KV_HEADS, head - HEADS)
    cache_row = (rm // T)[:, None] * stride_cb + kvh * stride_ch + pos[:, None] * stride_cl
    cache_row += r[None, :]
    if head >= HEADS + KV_HEADS:  # a value head: into the cache as it is
        tl.store(v_cache_ptr + cache_row, x1, mask=om)
        tl.store(v_cache_ptr + cache_row + half, x2, mask=om)
    else:
        table = pos[:, None] * HEAD_DIM + r[None, :]
        c1 = tl.load(cos_ptr + table, mask=om, other=0.0)
        c2 = tl.load(cos_ptr + table + half, mask=om, other=0.0)
        s1 = tl.load(sin_ptr + table, mask=om, other=0.0)
        s2 = tl.load(sin_ptr + table + half, mask=om, other=0.0)
        is_q = head < HEADS
        w1 = tl.where(is_q, tl.load(qn_ptr + r), tl.load(kn_ptr + r))[None, :]
        w2 = tl.where(is_q, tl.load(qn_ptr + half + r), tl.load(kn_ptr + half + r))[None, :]
        dtype = y_ptr.dtype.element_ty
        o1, o2 = norm_rotate(x1, x2, w1, w2, c1, c2, s1, s2, eps, dtype, HEAD_DIM, QK_NORM)
        if is_q:
            dst = q_out_ptr + (rm[:, None] * HEADS + head) * HEAD_DIM + r[None, :]
            tl.store(dst, o1, mask=om)
            tl.store(dst + half, o2, mask=om)
        else:
            tl.store(k_cache_ptr + cache_row, o1, mask=om)
            tl.store(k_cache_ptr + cache_row + half, o2, mask=om)


@triton.jit
def _qk_rope_kernel(
    qkv_ptr,
    q_out_ptr,
    k_cache_ptr,
    v_cache_ptr,
    pos_ptr,
    cos_ptr,
    sin_ptr,
    qn_ptr,
    kn_ptr,
    stride_qkv,
    stride_cb,
    stride_ch,
    stride_cl,
    T,
    eps,
    HEADS: tl.constexpr,
    KV_HEADS: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    ROWS: tl.constexpr,
    QK_NORM: tl.constexpr,
    PDL: tl.constexpr = False,
    TRACE: tl.constexpr = 0,
    trace_ptr=None,
    clock_ptr=None,
    EARLY: tl.constexpr = False,
    stride_layer_qkv=0,
    stride_layer_cache=0,
    stride_layer_norm=0,
):
    trace_mark(trace_ptr, clock_ptr, 0, TRACE)
    m = tl.program_id(0)
    # several layers' k|v in one launch (kv_rope_write_layers): layer l's columns, caches and
    # k norm lie these strides on; one layer: grid dimension 1 is 1, all offsets 0
    layer = tl.program_id(1).to(tl.int64)
    qkv_ptr += layer * stride_layer_qkv
    k_cache_ptr += layer * stride_layer_cache
    v_cache_ptr += layer * stride_layer_cache
    kn_ptr += layer * stride_layer_norm
    half: tl.constexpr = HEAD_DIM // 2
    r = tl.arange(0, half)
    if EARLY:  # EARLY_TABLES: the position (from L2) and its table rows before the wait
        pos = tl.load(pos_ptr + m, cache_modifier=".cg")
        c1, c2, s1, s2 = rotary_tables(cos_ptr, sin_ptr, pos, r, HEAD_DIM)
    pdl_enter(PDL, trace_ptr, clock_ptr, TRACE)
    if not EARLY:
        pos = tl.load(pos_ptr + m)
        c1, c2, s1, s2 = rotary_tables(cos_ptr, sin_ptr, pos, r, HEAD_DIM)
    dtype = qkv_ptr.dtype.element_ty
    head = tl.arange(0, ROWS)  # q heads, then k heads, then v heads of this token
    is_q = head < HEADS
    is_k = (head >= HEADS) & (head < HEADS + KV_HEADS)
    is_v = (head >= HEADS + KV_HEADS) & (head < HEADS + 2 * KV_HEADS)
    b = m // T
    src = qkv_ptr + m * stride_qkv + head[:, None] * HEAD_DIM + r[None, :]
    valid = (is_q | is_k | is_v)[:, None]
    x1 = tl.load(src, mask=valid, other=0.0)
    x2 = tl.load(src + half, mask=valid, other=0.0)
    kvh = tl.where(is_v, head - HEADS - KV_HEADS, head - HEADS)
    cache_row = b * stride_cb + kvh[:, None] * stride_ch + pos * stride_cl + r[None, :]
    tl.store(v_cache_ptr + cache_row, x1, mask=is_v[:, None])
    tl.store(v_cache_ptr + cache_row + half, x2, mask=is_v[:, None])
    w1 = tl.where(is_q[:, None], tl.load(qn_ptr + r)[None, :], tl.load(kn_ptr + r)[None, :])
    w2 = tl.where(
        is_q[:, None], tl.load(qn_ptr + half + r)[None, :], tl.load(kn_ptr + half + r)[None, :]
    )
    o1, o2 = norm_rotate(x1, x2, w1, w2, c1, c2, s1, s2, eps, dtype, HEAD_DIM, QK_NORM)
    q_dst = q_out_ptr + (m * HEADS + head[:, None]) * HEAD_DIM + r[None, :]
    tl.store(q_dst, o1, mask=is_q[:, None])
    tl.store(q_dst + half, o2, mask=is_q[:, None])
    tl.store(k_cache_ptr + cache_row, o1, mask=is_k[:, None])
    tl.store(k_cache_ptr + cache_row + half, o2, mask=is_k[:, None])
    trace_mark(trace_ptr, clock_ptr, 2, TRACE)


def qk_rope_write(
    qkv: torch.Tensor,
    positions: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    heads: int,
    q_norm: torch.Tensor | None,
    k_norm: torch.Tensor | None,
    eps: float,
) -> torch.Tensor:
    """qkv [B*T, (heads + 2 kv_heads) * D], positions [B, T], cos/sin [max_pos, D],
    k_cache/v_cache [B, kv_heads, L, D] (one layer) -> rotated queries [B*T, heads, D]."""
    _check(qkv, positions, cos, sin, k_cache, v_cache, heads)
    _check_norms(q_norm, k_norm)
    q = qkv.new_empty(qkv.shape[0], heads, k_cache.shape[3])
    _launch(qkv, q, positions, cos, sin, k_cache, v_cache, q_norm, k_norm, eps, heads)
    return q


def kv_rope_write_layers(
    kv: torch.Tensor,
    positions: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    k_caches: torch.Tensor,
    v_caches: torch.Tensor,
    k_norms: torch.Tensor | None,
    eps: float,
) -> None:
    """The keys and values of several layers written at once (a drafter's context: one
    multiply by every layer's k|v weights, models/fused.DRAFT_CONTEXT_ONCE): kv [B*T, layers *
    2 kv_heads * D], layer l's k|v in its l-th slice of columns; k_caches/v_caches [layers, B,
    kv_heads, L, D]; k_norms [layers, D] or None. Each layer as qk_rope_write(slice, ...,
    heads=0, k_norm=k_norms[l]) writes it, in one launch."""
    layers = k_caches.shape[0]
    width = kv.shape[1] // max(layers, 1)
    if layers == 0 or kv.shape[1] != layers * width:
        raise ValueError(f"kv {tuple(kv.shape)} does not split into {layers} layers")
    if v_caches.shape != k_caches.shape or v_caches.stride() != k_caches.stride():
        raise ValueError("k_caches and v_caches must have the same shape and strides")
    head_dim = k_caches.shape[4]
    if k_norms is not None and (k_norms.shape != (layers, head_dim) or k_norms.stride(1) != 1):
        raise ValueError(f"k_norms {tuple(k_norms.shape)} must be [{layers}, {head_dim}]")
    _check(kv[:, :width], positions, cos, sin, k_caches[0], v_caches[0], 0)
    _launch(
        kv, kv.new_empty(0), positions, cos, sin, k_caches, v_caches, k_norms, k_norms, eps, 0,
        layers=(layers, width, k_caches.stride(0), 0 if k_norms is None else k_norms.stride(0)),
    )  # fmt: skip


def _check(
    qkv: torch.Tensor,
    positions: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    heads: int,
) -> None:
    """The shapes and strides one layer's write takes (raises ValueError)."""
    batch, t = positions.shape
    _, kv_heads, length, head_dim = k_cache.shape
    if qkv.shape != (batch * t, (heads + 2 * kv_heads) * head_dim) or qkv.stride(1) != 1:
        raise ValueError(
            f"qkv {tuple(qkv.shape)} does not match positions {tuple(positions.shape)}"
            f" and cache {tuple(k_cache.shape)} with {heads} heads"
        )
    if (
        k_cache.shape[0] != batch
        or v_cache.shape != k_cache.shape
        or v_cache.stride() != k_cache.stride()
    ):
        raise ValueError("k_cache and v_cache must have the same shape, strides and batch")
    if (
        k_cache.stride(3) != 1
        or cos.shape[1] != head_dim
        or not cos.is_contiguous()
        or not sin.is_contiguous()
    ):
        raise ValueError("cache rows and cos/sin tables must be contiguous along head_dim")
    if head_dim % 2 or head_dim & (head_dim - 1):
        raise ValueError(f"head_dim must be a power of two, got {head_dim}")


def _check_norms(q_norm: torch.Tensor | None, k_norm: torch.Tensor | None) -> None:
    """Qwen3's per-head q and k norms come together, or neither (Llama)."""
    if (q_norm is None) != (k_norm is None):
        raise ValueError("q_norm and k_norm come together")


def _launch(
    qkv: torch.Tensor,
    q: torch.Tensor,
    positions: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    q_norm: torch.Tensor | None,
    k_norm: torch.Tensor | None,
    eps: float,
    heads: int,
    layers: tuple[int, int, int, int] = (1, 0, 0, 0),
) -> None:
    """One launch of _qk_rope_kernel, a program per token (and layer: `layers` = (count,
    columns, cache and norm strides between layers))."""
    batch, t = positions.shape
    count, columns, cache_stride, norm_stride = layers
    kv_heads, head_dim = k_cache.shape[-3], k_cache.shape[-1]
    rows = batch * t
    _qk_rope_kernel[(rows, count)](
        qkv,
        q,
        k_cache,
        v_cache,
        positions.reshape(-1).contiguous(),
        cos,
        sin,
        q_norm if q_norm is not None else cos,
        k_norm if k_norm is not None else cos,
        qkv.stride(0),
        k_cache.stride(-4),
        k_cache.stride(-3),
        k_cache.stride(-2),
        t,
        eps,
        HEADS=heads,
        KV_HEADS=kv_heads,
        HEAD_DIM=head_dim,
        ROWS=triton.next_power_of_2(heads + 2 * kv_heads),
        QK_NORM=k_norm is not None,
        **launch.pdl(qkv),
        EARLY=EARLY_TABLES,
        **trace.arguments(qkv, "rope", rows, bytes=qkv.nbytes, rows=rows),
        stride_layer_qkv=columns,
        stride_layer_cache=cache_stride,
        stride_layer_norm=norm_stride,
    )


def qk_rope_write_reference(
    qkv: torch.Tensor,
    positions: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    heads: int,
    q_norm: torch.Tensor | None,
    k_norm: torch.Tensor | None,
    eps: float,
) -> torch.Tensor:
    from specpilot.layers.rotary import apply_rotary

    batch, t = positions.shape
    kv_heads, head_dim = k_cache.shape[1], k_cache.shape[3]
    q, k, v = qkv.view(batch, t, -1, head_dim).split([heads, kv_heads, kv_heads], dim=2)

    def norm(x: torch.Tensor, w: torch.Tensor | None) -> torch.Tensor:
        return x if w is None else rms_norm(x, w, eps)

    c, s = cos[positions].unsqueeze(2), sin[positions].unsqueeze(2)  # [B, T, 1, D]
    q = apply_rotary(norm(q, q_norm), c, s)
    k = apply_rotary(norm(k, k_norm), c, s)
    rows = torch.arange(batch, device=qkv.device)[:, None]
    k_cache[rows, :, positions] = k
    v_cache[rows, :, positions] = v
    return q.reshape(batch * t, heads, head_dim)


def kv_rope_write_layers_reference(
    kv: torch.Tensor,
    positions: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    k_caches: torch.Tensor,
    v_caches: torch.Tensor,
    k_norms: torch.Tensor | None,
    eps: float,
) -> None:
    """kv_rope_write_layers as one qk_rope_write_reference a layer."""
    layers = k_caches.shape[0]
    for layer, columns in enumerate(kv.chunk(layers, dim=1)):
        norm = None if k_norms is None else k_norms[layer]
        qk_rope_write_reference(
            columns, positions, cos, sin, k_caches[layer], v_caches[layer], 0, norm, norm, eps
        )
