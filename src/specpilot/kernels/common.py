"""Pieces shared by the kernels: the interpreter switch for tl.dot, and the two ends of the skinny
multiplies (bf16 and W12): RMSNorm statistics and input tile in the prologue, residual add and
store in the epilogue, each rounded where the PyTorch modules round.
"""

import triton
import triton.language as tl

from specpilot.kernels import interpreted

# NOTE: Triton's CPU interpreter (tests) multiplies bf16 operands of tl.dot wrongly (numpy has no
# bf16), so there the kernels widen them to fp32 first (`dot` with F32_DOT); same values, exact
# products.
INTERPRETED = interpreted()


@triton.jit
def dot(a, b, F32_DOT: tl.constexpr):
    """tl.dot(a, b) with an fp32 accumulator; operands widened to fp32 under the interpreter."""
    if F32_DOT:
        return tl.dot(a.to(tl.float32), b.to(tl.float32))
    return tl.dot(a, b)


@triton.jit
def pdl_enter(PDL: tl.constexpr):
    """With programmatic dependent launch (kernels/launch.py): wait until the previous kernel has
    completed, then let the next one launch; call it before any load of what another kernel
    wrote and before any store. Waiting first keeps at most one kernel resident ahead: letting
    the next launch first chains every later kernel onto the SMs while the first still runs
    (run 49: AR 199 against 206 tok/s without PDL)."""
    if PDL:
        tl.extra.cuda.gdc_wait()
        tl.extra.cuda.gdc_launch_dependents()


@triton.jit
def l2_prefetch(ptr, nbytes):
    """Ask for [ptr, ptr + nbytes) in L2 (Hopper's bulk prefetch, issued by one thread of the
    program; nbytes and ptr multiples of 16). A hint: no value, no ordering."""
    tl.inline_asm_elementwise(
        "{ .reg .pred p; .reg .b32 t; mov.u32 t, %tid.x; setp.eq.u32 p, t, 0; "
        "@p cp.async.bulk.prefetch.L2.global [$1], $2; mov.u32 $0, 0; }",
        "=r,l,r",
        [ptr, nbytes],
        dtype=tl.int32,
        is_pure=False,
        pack=1,
    )


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


@triton.jit
def store_output(
    acc, y_ptr, res_ptr, rm, rn, m_ok, n_ok, stride_ym, stride_rm, RESIDUAL: tl.constexpr
):
    """y[rm, rn] = acc rounded to y's dtype, plus residual[rm, rn] (rounded again) if asked."""
    dtype = y_ptr.dtype.element_ty
    out = acc.to(dtype)
    om = m_ok[:, None] & n_ok[None, :]
    if RESIDUAL:
        r = tl.load(res_ptr + rm[:, None] * stride_rm + rn[None, :], mask=om, other=0.0)
        out = (out.to(tl.float32) + r.to(tl.float32)).to(dtype)
    tl.store(y_ptr + rm[:, None] * stride_ym + rn[None, :], out, mask=om)
