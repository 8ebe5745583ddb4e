"""The input side of the skinny multiplies (bf16 and W12): RMSNorm statistics and the input tile.

Shared by kernels/linear.py and kernels/w12_linear.py so that both fold the same element-wise
steps into their prologue, rounded where the PyTorch modules round.
"""

import triton
import triton.language as tl


@triton.jit
def row_rstd(x_rows, m_ok, K, eps, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    """1 / RMS of each row of x [BLOCK_M, K] (fp32), the RMSNorm scale."""
    rk0 = tl.arange(0, BLOCK_K)
    sum_sq = tl.zeros([BLOCK_M], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + rk0
        xk = tl.load(x_rows + rk[None, :], mask=m_ok[:, None] & (rk[None, :] < K), other=0.0)
        xk = xk.to(tl.float32)
        sum_sq += tl.sum(xk * xk, axis=1)
    return tl.math.rsqrt(sum_sq / K + eps)


@triton.jit
def input_tile(x_rows, cols, mask, nw_ptr, rstd, K, dtype, NORM: tl.constexpr, GLU: tl.constexpr):
    """The multiply's input at columns `cols` (broadcasting with x_rows [BLOCK_M, 1]): x,
    silu(gate) * up (x = [gate | up], K columns each), or RMSNorm(x) * norm weight."""
    a = tl.load(x_rows + cols, mask=mask, other=0.0)
    if GLU:
        g = a.to(tl.float32)
        u = tl.load(x_rows + K + cols, mask=mask, other=0.0).to(tl.float32)
        s = (g / (1.0 + tl.exp(-g))).to(dtype).to(tl.float32)
        a = (s * u).to(dtype)
    if NORM:
        nw = tl.load(nw_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        a = (a.to(tl.float32) * rstd[:, None]).to(dtype).to(tl.float32)
        a = (a * nw).to(dtype)
    return a
