"""Skinny matrix multiply with W12 weights decoded in registers: y = x @ W^T, M <= 64 rows.

The contract is kernels/linear.py's `skinny_linear` (same optional RMSNorm / SwiGLU prologue and
residual epilogue, same rounding points), with the [N, K] bf16 weight given as a `W12Weight`
(formats/w12.py). Per tile the kernel loads the sign|mantissa bytes [BLOCK_N, BLOCK_K], the
exponent-code bytes [BLOCK_N, BLOCK_K / 2] and the group bases, and rebuilds each weight's exact
bf16 bits, `sign << 15 | (base + code) << 7 | mantissa`; a weight coded ESCAPE contributes 0 in
the main loop, and the epilogue adds x[:, col] * w for each escaped (col, w) of the program's rows
from the CSR escape table (products are exact in fp32, so only the summation order differs from
multiplying by the decoded weight, as between any two kernels). The weights stream once, at
1.5 bytes each plus the bases and escapes.

NOTE: an escaped weight's 0 in the main loop meets an infinite or NaN activation as 0 * inf =
NaN where the decoded weight would give +-inf; activations are finite in the models we run.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from specpilot.formats.w12 import ESCAPE, W12Weight, decode
from specpilot.kernels.common import INTERPRETED, dot, input_tile, row_rstd, store_output
from specpilot.kernels.linear import tile_config

MAX_ROWS = 64


@triton.jit
def _w12_kernel(
    x_ptr,
    sm_ptr,
    code_ptr,
    base_ptr,
    row_ptr,
    esc_col_ptr,
    esc_bits_ptr,
    y_ptr,
    res_ptr,
    nw_ptr,
    M,
    N,
    K,
    stride_xm,
    stride_sm,
    stride_code,
    stride_base,
    stride_ym,
    stride_rm,
    eps,
    GROUP: tl.constexpr,
    ESC: tl.constexpr,
    NORM: tl.constexpr,
    GLU: tl.constexpr,
    RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    USE_DOT: tl.constexpr,
    F32_DOT: tl.constexpr,
):
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    dtype = y_ptr.dtype.element_ty
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk0 = tl.arange(0, BLOCK_K)
    rb0 = tl.arange(0, BLOCK_K // 2)
    m_ok = rm < M
    n_ok = rn < N
    x_rows = x_ptr + rm[:, None] * stride_xm
    rstd = tl.zeros([BLOCK_M], dtype=tl.float32)
    if NORM:
        rstd = row_rstd(x_rows, m_ok, K, eps, BLOCK_M, BLOCK_K)
    if USE_DOT:
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    else:
        acc3 = tl.zeros([BLOCK_M, BLOCK_N, BLOCK_K], dtype=tl.float32)
    code_cols = (K + 1) // 2
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + rk0
        k_ok = rk < K
        xm = m_ok[:, None] & k_ok[None, :]
        a = input_tile(x_rows, rk[None, :], xm, nw_ptr, rstd, K, dtype, NORM, GLU)
        wm = n_ok[:, None] & k_ok[None, :]
        sm = tl.load(sm_ptr + rn[:, None] * stride_sm + rk[None, :], mask=wm, other=0)
        sm = sm.to(tl.int32)
        rb = k0 // 2 + rb0
        pairs = tl.load(
            code_ptr + rn[:, None] * stride_code + rb[None, :],
            mask=n_ok[:, None] & (rb < code_cols)[None, :],
            other=ESC * 17,  # both nibbles ESCAPE
        ).to(tl.int32)
        code = tl.interleave(pairs & 15, pairs >> 4)  # [BLOCK_N, BLOCK_K], column 2j, 2j + 1
        # NOTE: the group's base is gathered per weight; lanes of one group hit one address
        base = tl.load(base_ptr + rn[:, None] * stride_base + (rk // GROUP)[None, :], mask=wm)
        bits = ((sm & 0x80) << 8) | ((base.to(tl.int32) + code) << 7) | (sm & 0x7F)
        bits = tl.where(code == ESC, 0, bits)  # escapes (and padding) weigh 0 here
        w = bits.to(tl.int16).to(tl.bfloat16, bitcast=True)
        if USE_DOT:
            acc += dot(a, tl.trans(w), F32_DOT)
        else:
            acc3 += a.to(tl.float32)[:, None, :] * w.to(tl.float32)[None, :, :]
    if not USE_DOT:
        acc = tl.sum(acc3, axis=2)
    # escaped weights of rows rn: entries row_ptr[n] .. row_ptr[n + 1] - 1 of the CSR table
    first = tl.load(row_ptr + rn, mask=n_ok, other=0)
    count = tl.load(row_ptr + rn + 1, mask=n_ok, other=0) - first
    for j in range(0, tl.max(count, axis=0)):
        has = j < count
        col = tl.load(esc_col_ptr + first + j, mask=has, other=0)
        wbits = tl.load(esc_bits_ptr + first + j, mask=has, other=0)
        w = wbits.to(tl.bfloat16, bitcast=True).to(tl.float32)
        xm = m_ok[:, None] & has[None, :]
        a = input_tile(x_rows, col[None, :], xm, nw_ptr, rstd, K, dtype, NORM, GLU)
        acc += tl.where(xm, a.to(tl.float32) * w[None, :], 0.0)
    store_output(acc, y_ptr, res_ptr, rm, rn, m_ok, n_ok, stride_ym, stride_rm, RESIDUAL)


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
    for name in ("sign_mant", "codes", "base"):
        t = getattr(w, name)
        if t.stride(1) != 1:
            raise ValueError(f"W12 {name} must have unit stride along K")
    for name in ("row_ptr", "esc_col", "esc_bits"):
        if getattr(w, name).stride(0) != 1 and getattr(w, name).numel() > 1:
            raise ValueError(f"W12 {name} must be contiguous")
    devices = {t.device for t in w.tensors().values()} | {x.device}
    if len(devices) != 1:
        raise ValueError(f"x and the W12 arrays must be on one device, got {devices}")


def w12_linear(
    x: torch.Tensor,
    weight: W12Weight,
    *,
    norm_weight: torch.Tensor | None = None,
    eps: float = 1e-6,
    glu: bool = False,
    residual: torch.Tensor | None = None,
    config: dict | None = None,
) -> torch.Tensor:
    """x [M, K] (or [M, 2K] with glu) @ W^T -> [M, N] bf16; the contract of skinny_linear."""
    m = x.shape[0] if x.dim() == 2 else 0
    n, k = weight.shape
    _check(weight, m, x, glu)
    if glu and norm_weight is not None:
        raise ValueError("norm prologue and glu prologue are exclusive")
    if norm_weight is not None and norm_weight.shape != (k,):
        raise ValueError(f"norm_weight {tuple(norm_weight.shape)} != ({k},)")
    if residual is not None and (residual.shape != (m, n) or residual.stride(1) != 1):
        raise ValueError(f"residual {tuple(residual.shape)} must be a row-major [{m}, {n}]")
    y = torch.empty(m, n, device=x.device, dtype=x.dtype)
    # NOTE: skinny_linear's tiles until bench/w12_speed.py has swept W12 on the H200
    cfg = dict(config or tile_config(m, n, k))
    if cfg["BLOCK_K"] % 2:
        raise ValueError(f"BLOCK_K must be even (codes come in pairs), got {cfg['BLOCK_K']}")
    grid = (triton.cdiv(n, cfg["BLOCK_N"]), triton.cdiv(m, cfg["BLOCK_M"]))
    _w12_kernel[grid](
        x,
        weight.sign_mant,
        weight.codes,
        weight.base,
        weight.row_ptr,
        # NOTE: an empty escape table is never read; pass a tensor with storage instead
        weight.esc_col if weight.esc_col.numel() else weight.row_ptr,
        weight.esc_bits if weight.esc_bits.numel() else weight.row_ptr.view(torch.int16),
        y,
        residual if residual is not None else y,
        norm_weight if norm_weight is not None else x,
        m,
        n,
        k,
        x.stride(0),
        weight.sign_mant.stride(0),
        weight.codes.stride(0),
        weight.base.stride(0),
        y.stride(0),
        residual.stride(0) if residual is not None else 0,
        eps,
        GROUP=weight.group_size,
        ESC=ESCAPE,
        NORM=norm_weight is not None,
        GLU=glu,
        RESIDUAL=residual is not None,
        F32_DOT=INTERPRETED,
        **cfg,
    )
    return y


def w12_linear_reference(
    x: torch.Tensor,
    weight: W12Weight,
    *,
    norm_weight: torch.Tensor | None = None,
    eps: float = 1e-6,
    glu: bool = False,
    residual: torch.Tensor | None = None,
) -> torch.Tensor:
    """The same contract in plain PyTorch: decode the weight, then the modules' steps."""
    if glu:
        gate, up = x.chunk(2, dim=-1)
        x = F.silu(gate) * up
    if norm_weight is not None:
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
        x = norm_weight * h.to(x.dtype)
    y = F.linear(x, decode(weight))
    return y if residual is None else residual + y
