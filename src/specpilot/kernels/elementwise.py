"""Row-wise RMSNorm and SwiGLU, each once a forward step, for the multiply after it to read.

The skinny linear can fold these steps into its prologue (kernels/linear.py), but every one of
its programs then recomputes them inside its weight stream's loop, which lost at the 8B shapes
at every row count (docs/LOG.md runs 27, 98-99, 104); models/fused.PROLOGUE_ROWS and
PROLOGUE_MAX_K keep the prologue for one row of narrow models only. Everywhere else they run
here. Rounding follows the PyTorch modules step by step.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from specpilot.kernels import launch, trace
from specpilot.kernels.common import (
    ahead_arguments,
    join_position,
    l2_prefetch_regions,
    pair_position,
    pdl_enter,
    trace_mark,
)
from specpilot.layers.norm import rms_norm

# programs added to a launch given `ahead` bytes, each asking L2 for an equal share of them
AHEAD_PROGRAMS = 32
# warps a program of the RMSNorm launch (one program a row: its sum of squares reduced across
# the warps through shared memory, or, on 1 warp, in each thread's registers and the warp's
# shuffles: the attention merge's lesson, docs/LOG.md runs 138-139). 4: Triton's default;
# run 142 (Qwen3-8B shape, 1k, one process) 1 warp made the one-token forward's 73 RMSNorm
# launches 81 -> 115 us (4.137 -> 4.302 ms back to back), 2 warps 122 us: a 4,096-element row
# is too long for one warp's serial sums. bench/engine_speed.py --switch
# kernels.elementwise.NORM_WARPS=N.
NORM_WARPS = 4


@triton.jit
def _ask_ahead(row, M, ask, AHEAD: tl.constexpr, ahead0_ptr, ahead0_bytes, ahead1_ptr,
               ahead1_bytes):  # fmt: skip
    """Programs past the M rows (AHEAD_PROGRAMS of them; where `ask`) ask L2 for their shares
    of the regions; whether this program is one of them."""
    extra = False
    if AHEAD > 0:
        if row >= M:
            extra = True
            if ask:
                l2_prefetch_regions(AHEAD, ahead0_ptr, ahead0_bytes, ahead1_ptr, ahead1_bytes,
                                    row - M, tl.num_programs(0) - M)  # fmt: skip
    return extra


@triton.jit
def _rmsnorm_kernel(
    x_ptr, w_ptr, y_ptr, M, K, stride_x, stride_y, eps, BLOCK: tl.constexpr,
    PDL: tl.constexpr = False, AHEAD: tl.constexpr = 0, ahead0_ptr=None, ahead0_bytes=0,
    ahead1_ptr=None, ahead1_bytes=0, TRACE: tl.constexpr = 0, trace_ptr=None, clock_ptr=None,
    JOIN: tl.constexpr = False, PAIR: tl.constexpr = False, SPLITS: tl.constexpr = 0,
    part_ptr=None, res_ptr=None, stride_r=0, EARLY_TRIGGER: tl.constexpr = False,
):  # fmt: skip
    """y[row] = weight * RMSNorm(x[row]), in the JOIN or PAIR order where asked. SPLITS > 0
    (split_sum_norm): first x[row] = the SPLITS partial rows (fp32) summed in order, rounded,
    plus the residual (kernels/w12_linear._split_sum_kernel's bits), stored and read back as
    the plain norm reads its input (its bits). EARLY_TRIGGER: the next kernel may launch before
    this one's wait (launch.WIDE_EARLY)."""
    trace_mark(trace_ptr, clock_ptr, 0, TRACE)
    row = tl.program_id(0)
    if _ask_ahead(row, M, True, AHEAD, ahead0_ptr, ahead0_bytes, ahead1_ptr, ahead1_bytes):
        trace_mark(trace_ptr, clock_ptr, 2, TRACE)
        return
    pdl_enter(PDL, trace_ptr, clock_ptr, TRACE, EARLY=EARLY_TRIGGER)
    dtype = y_ptr.dtype.element_ty
    cols = tl.arange(0, BLOCK)
    ok = cols < K
    if SPLITS > 0:  # (not SPLIT_K: kernels/aot.OFF sets that to 1 for the multiplies)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for s in tl.static_range(SPLITS):
            acc += tl.load(part_ptr + (s * M + row) * K + cols, mask=ok, other=0.0)
        r = tl.load(res_ptr + row * stride_r + cols, mask=ok, other=0.0).to(tl.float32)
        out = (acc.to(dtype).to(tl.float32) + r).to(dtype)
        tl.store(x_ptr + row * stride_x + cols, out, mask=ok)
        tl.debug_barrier()  # the row's stores seen by every thread of the program
    x = tl.load(x_ptr + row * stride_x + cols, mask=ok, other=0.0).to(tl.float32)
    rstd = tl.math.rsqrt(tl.sum(x * x, axis=0) / K + eps)
    h = (x * rstd).to(dtype).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=ok, other=0.0).to(tl.float32)
    at = join_position(cols) if JOIN else cols  # JOIN: for a W12 JOIN 2 multiply
    if PAIR:  # for kernels/w12_ws.py
        at = pair_position(cols)
    tl.store(y_ptr + row * stride_y + at, (h * w).to(dtype), mask=ok)
    trace_mark(trace_ptr, clock_ptr, 2, TRACE)


@triton.jit
def _silu_mul_kernel(
    x_ptr, y_ptr, M, K, stride_x, stride_y, BLOCK: tl.constexpr, PDL: tl.constexpr = False,
    AHEAD: tl.constexpr = 0, ahead0_ptr=None, ahead0_bytes=0, ahead1_ptr=None, ahead1_bytes=0,
    TRACE: tl.constexpr = 0, trace_ptr=None, clock_ptr=None,
):  # fmt: skip
    trace_mark(trace_ptr, clock_ptr, 0, TRACE)
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    if _ask_ahead(row, M, chunk == 0, AHEAD, ahead0_ptr, ahead0_bytes, ahead1_ptr, ahead1_bytes):
        trace_mark(trace_ptr, clock_ptr, 2, TRACE)
        return  # an extra row's first chunk asks for its share
    pdl_enter(PDL, trace_ptr, clock_ptr, TRACE)
    dtype = y_ptr.dtype.element_ty
    cols = chunk * BLOCK + tl.arange(0, BLOCK)
    ok = cols < K
    g = tl.load(x_ptr + row * stride_x + cols, mask=ok, other=0.0).to(tl.float32)
    u = tl.load(x_ptr + row * stride_x + K + cols, mask=ok, other=0.0).to(tl.float32)
    s = (g / (1.0 + tl.exp(-g))).to(dtype).to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, (s * u).to(dtype), mask=ok)
    trace_mark(trace_ptr, clock_ptr, 2, TRACE)


def _check_rows(x: torch.Tensor, name: str) -> None:
    if x.dim() != 2 or x.stride(1) != 1:
        raise ValueError(f"{name} wants a 2-D tensor with unit column stride, got {tuple(x.shape)}")
    if x.dtype not in (torch.bfloat16, torch.float16):
        raise ValueError(f"{name} wants bf16/fp16, got {x.dtype}")


def rmsnorm(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float,
    ahead: tuple[torch.Tensor, ...] = (),
    join: bool = False,
    pair: bool = False,
) -> torch.Tensor:
    """x [M, K] -> weight * normalised x, [M, K] in x's dtype. ahead: bytes (ahead_arguments)
    that AHEAD_PROGRAMS extra programs ask L2 for: the head of the multiply that reads y. join:
    y's columns in the W12 JOIN tiles' order (kernels/w12_linear.join_order, K a multiple of
    128), for a multiply that takes x_order "join". pair: in kernels/w12_ws.pair_order (K a
    multiple of 256), the input of its multiply."""
    _check_rows(x, "rmsnorm")
    if weight.shape != (x.shape[1],):
        raise ValueError(f"weight {tuple(weight.shape)} does not match x {tuple(x.shape)}")
    _check_order("rmsnorm", x.shape[1], join, pair)
    return _launch_norm(x, weight, eps, ahead, join, pair, dict(kernel="rmsnorm", bytes=x.nbytes))


def _launch_norm(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float,
    ahead: tuple[torch.Tensor, ...],
    join: bool,
    pair: bool,
    record: dict,
    **split,
) -> torch.Tensor:
    """_rmsnorm_kernel over x's rows (and the ahead programs) into a new tensor, checked by the
    caller: rmsnorm's launch, or split_sum_norm's with `split` (SPLITS and its pointers: x is
    then written first). record: the kernel timeline's name and bytes for the launch."""
    y = torch.empty_like(x)
    m, k = x.shape
    grid = (m + (AHEAD_PROGRAMS if ahead else 0),)
    meta = dict(bytes=record["bytes"], rows=m) | ({"n": k} if split else {})
    _rmsnorm_kernel[grid](
        x, weight, y, m, k, x.stride(0), y.stride(0), eps, BLOCK=triton.next_power_of_2(k),
        **launch.pdl_early(x, launch.wide_early(x, 2)), **ahead_arguments(ahead),
        **trace.arguments(x, record["kernel"], grid[0], **meta), JOIN=join, PAIR=pair,
        num_warps=NORM_WARPS, **split,
    )  # fmt: skip
    return y


def _check_order(what: str, k: int, join: bool, pair: bool) -> None:
    """A norm written in join order wants K a multiple of 128, in pair order 256 (not both)."""
    if join and k % 128:
        raise ValueError(f"{what} join order wants K a multiple of 128, got {k}")
    if pair and (join or k % 256):
        raise ValueError(f"{what} pair order: not with join, K a multiple of 256 ({k})")


@dataclass
class NormAfter:
    """The RMSNorm after a multiply that ends in the residual add (o, down), for the multiply
    after it (gate|up, the next q|k|v): where the first splits K, its split sum writes the norm
    too (`split_sum_norm`: one launch for the two, models/fused.SPLIT_SUM_NORM) and `u` holds
    it, in the order the next multiply reads ("join" or "pair", as rmsnorm's; "": natural);
    else `u` stays None and the caller norms as before. Same bits either way.

    handed (models/fused.SPLIT_SUM_HAND; "pair" order, for kernels/w12_tc): the split sum hands
    the norm on instead (as kernels/linear.Handoff): u = the sum times the norm weight, rounded,
    and `squares` [M, its programs] the sums of squares of the sum, from which the next multiply
    scales its sums by the rows' 1 / RMS (w12_tc_linear's handed_norm): no norm in a kernel,
    the bf16 hand-off's rounding points instead of the norm's (token forcing checks them)."""

    weight: torch.Tensor
    eps: float
    ahead: tuple[torch.Tensor, ...] = ()
    order: str = ""
    u: torch.Tensor | None = None
    handed: bool = False
    squares: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if self.handed and self.order != "pair":
            raise ValueError(f"a handed NormAfter is w12_tc's (order 'pair'), not {self.order!r}")

    @property
    def ready(self) -> bool:
        return self.u is not None

    def keywords(self) -> dict:
        """The next multiply's x_order keyword for u (and handed_norm: this, where handed)."""
        order = dict(x_order=self.order) if self.order else {}
        return order | (dict(handed_norm=self) if self.handed else {})

    def hand_arguments(self, y: torch.Tensor, programs: int) -> dict:
        """A split sum's launch keywords (kernels/w12_linear._split_sum_kernel's HAND_OUT) that
        hand this norm on from y [M, N], its programs along N each writing a slot of squares:
        u and squares made here."""
        m, n = y.shape
        _check_order("a handed norm", n, False, True)
        if self.weight.shape != (n,):
            raise ValueError(f"a handed norm's weight {tuple(self.weight.shape)} for N {n}")
        self.u = torch.empty_like(y)
        self.squares = torch.empty(m, programs, device=y.device, dtype=torch.float32)
        sq = self.squares
        return dict(HAND_OUT=True, u_ptr=self.u, hw_ptr=self.weight, sq_ptr=sq,
                    stride_um=self.u.stride(0), stride_sq=sq.stride(0), PAIR=True)  # fmt: skip


def split_sum_norm(
    part: torch.Tensor, y: torch.Tensor, residual: torch.Tensor, norm: NormAfter
) -> None:
    """y [M, N] = the sum of a K split's partial rows part [splits, M, N] (fp32), rounded, plus
    the residual (kernels/w12_linear.sum_splits's bits), and norm.u = rmsnorm(y, norm.weight,
    norm.eps, norm.ahead, in norm.order)'s bits: one launch, a program a row (and the ahead
    programs)."""
    splits, m, n = part.shape
    if y.shape != (m, n) or residual.shape != (m, n) or norm.weight.shape != (n,):
        raise ValueError(f"split_sum_norm: y {tuple(y.shape)}, residual "
                         f"{tuple(residual.shape)}, norm {tuple(norm.weight.shape)} for "
                         f"{m} x {n}")  # fmt: skip
    if y.stride(1) != 1 or residual.stride(1) != 1 or not part.is_contiguous():
        raise ValueError("split_sum_norm wants rows of unit stride and contiguous partial sums")
    if norm.order not in ("", "join", "pair"):
        raise ValueError(f"split_sum_norm: order '', 'join' or 'pair', got {norm.order!r}")
    join, pair = norm.order == "join", norm.order == "pair"
    _check_order("split_sum_norm", n, join, pair)
    record = dict(kernel="split_sum_norm", bytes=part.nbytes)
    norm.u = _launch_norm(y, norm.weight, norm.eps, norm.ahead, join, pair, record, SPLITS=splits,
                          part_ptr=part, res_ptr=residual, stride_r=residual.stride(0))  # fmt: skip


def silu_mul(x: torch.Tensor, ahead: tuple[torch.Tensor, ...] = ()) -> torch.Tensor:
    """x [M, 2K] = [gate | up] -> silu(gate) * up, [M, K]. ahead: as rmsnorm's."""
    _check_rows(x, "silu_mul")
    if x.shape[1] % 2:
        raise ValueError(f"silu_mul wants an even number of columns, got {x.shape[1]}")
    m, k = x.shape[0], x.shape[1] // 2
    y = torch.empty(m, k, device=x.device, dtype=x.dtype)
    block = 1024
    extra = ahead_arguments(ahead)
    grid = (m + (AHEAD_PROGRAMS if ahead else 0), triton.cdiv(k, block))
    _silu_mul_kernel[grid](
        x, y, m, k, x.stride(0), y.stride(0), BLOCK=block, **launch.pdl(x), **extra,
        **trace.arguments(x, "silu_mul", grid[0] * grid[1], bytes=x.nbytes, rows=m),
    )  # fmt: skip
    return y


@triton.jit
def _prefetch_kernel(ahead0_ptr, ahead0_bytes, AHEAD: tl.constexpr, ahead1_ptr=None,
                     ahead1_bytes=0):  # fmt: skip
    """Each program asks L2 for its share of the regions (nothing else)."""
    l2_prefetch_regions(AHEAD, ahead0_ptr, ahead0_bytes, ahead1_ptr, ahead1_bytes,
                        tl.program_id(0), tl.num_programs(0))  # fmt: skip


def prefetch_l2(ahead: tuple[torch.Tensor, ...]) -> None:
    """One launch of AHEAD_PROGRAMS programs asking L2 for `ahead` (launch.side_ahead's uint8
    views; nothing when empty): a hint, launched plainly, for a side stream (launch.py's
    SIDE_AHEAD_BYTES)."""
    if ahead:
        _prefetch_kernel[(AHEAD_PROGRAMS,)](**ahead_arguments(ahead), num_warps=1)


def rmsnorm_reference(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return rms_norm(x, weight, eps)


def silu_mul_reference(x: torch.Tensor) -> torch.Tensor:
    gate, up = x.chunk(2, dim=-1)
    return F.silu(gate) * up
