"""FP8 draft head: an LM head in 8 bits (e4m3) with one scale per row, for proposals only.

A speculative step multiplies by the LM head twice: the verify forward (whose argmax decides
every emitted token, so it keeps the target's exact weights) and the drafter (whose argmax only
proposes). The drafter's head may therefore be any approximation of the target's: a proposal
that the exact head would not make is rejected by verification, so outputs stay the target's
own argmax whatever the drafter's rounding, and only the acceptance length can change
(EngineConfig.draft_head "fp8"). At the Qwen3-8B shape the head is 1.24 GB of the ~3.3 GB a
DFlash-b16 draft reads; in 8 bits it is half of that. The same holds for the drafter's own
weights (EngineConfig.draft_weights "fp8": `quantized_drafter`, ~2.1 GB in bf16 at that shape).

Format: `weight` [N, K] torch.float8_e4m3fn and `scale` [N] fp32, w ~= weight * scale, the
scale a row's largest magnitude over e4m3's largest finite value (448), so that every row uses
the whole range (rounded to nearest; a row of zeros takes scale 1). The multiply
(kernels/linear.skinny_linear) widens the weights to fp16 (exact: every e4m3 value is an fp16)
and the input to fp16, sums in fp32 and scales each output column by its row's scale:
`fp8_linear_reference` is that arithmetic in PyTorch.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from specpilot.formats.packed import PackedLinear
from specpilot.layers.norm import rms_norm

E4M3_MAX = 448.0  # torch.finfo(torch.float8_e4m3fn).max
CHUNK_ROWS = 8192
KERNEL_DTYPES = (torch.bfloat16, torch.float16)  # the skinny kernel's inputs


@dataclass
class Fp8Weight:
    """One [N, K] weight in e4m3 with a scale per row: w[n] ~= weight[n] * scale[n]."""

    weight: torch.Tensor  # [N, K] torch.float8_e4m3fn
    scale: torch.Tensor  # [N] float32

    def __post_init__(self) -> None:
        if self.weight.dim() != 2 or self.weight.dtype != torch.float8_e4m3fn:
            raise ValueError(
                f"FP8 weight must be a 2-D float8_e4m3fn tensor, got "
                f"{tuple(self.weight.shape)} {self.weight.dtype}"
            )
        if self.scale.shape != self.weight.shape[:1] or self.scale.dtype != torch.float32:
            raise ValueError(
                f"FP8 scale must be float32 [{self.weight.shape[0]}], got "
                f"{tuple(self.scale.shape)} {self.scale.dtype}"
            )
        if self.scale.device != self.weight.device:
            raise ValueError("FP8 weight and scale must be on one device")

    @property
    def shape(self) -> tuple[int, int]:
        return self.weight.shape[0], self.weight.shape[1]

    @property
    def device(self) -> torch.device:
        return self.weight.device

    def nbytes(self) -> int:
        return self.weight.numel() + 4 * self.scale.numel()

    def dequantize(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """The weights it stands for [N, K]: exact in float32; in a narrower dtype each weight
        and scale rounded to it, then their product (no float32 temporary)."""
        return self.weight.to(dtype) * self.scale.to(dtype)[:, None]

    def __getitem__(self, rows: slice) -> Fp8Weight:
        """`w[a:b]`: rows a..b-1 as views (code that slices bf16 weights by rows works as is)."""
        if not isinstance(rows, slice) or rows.step not in (None, 1):
            raise TypeError("an FP8 weight can only be sliced by a range of rows")
        return Fp8Weight(self.weight[rows], self.scale[rows])


def cat(weights: list[Fp8Weight]) -> Fp8Weight:
    """The rows of several FP8 weights of one K, stacked."""
    return Fp8Weight(torch.cat([w.weight for w in weights]), torch.cat([w.scale for w in weights]))


class Fp8Linear(PackedLinear):
    """A bias-free nn.Linear whose weight is an Fp8Weight (a drafter's, EngineConfig.draft_weights
    "fp8"): formats/w12_engine.linear where the kernels run (the skinny kernel up to 64 rows,
    the widened weights on cuBLAS above), else fp8_linear_reference."""

    FORMAT = "FP8"
    weight: Fp8Weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [..., in_features] -> [..., out_features] in x's dtype."""
        y = multiply(x.reshape(-1, self.in_features), self.weight, self.use_kernel)
        return y.view(*x.shape[:-1], -1)


def multiply(x: torch.Tensor, w: Fp8Weight, use_kernel: bool) -> torch.Tensor:
    """x [M, K] @ w^T -> [M, N] in x's dtype: formats/w12_engine.linear where the kernels run
    and take x's dtype (bf16, fp16), else fp8_linear_reference."""
    if use_kernel and x.dtype in KERNEL_DTYPES:
        from specpilot.formats.w12_engine import linear

        return linear(x.contiguous(), w)
    return fp8_linear_reference(x, w)


@torch.no_grad()
def quantized_drafter(drafter: nn.Module, use_kernel: bool) -> nn.Module:
    """A copy of a DFlashDrafter whose linear layers (its layers' projections and `fc`) hold FP8
    weights; norms and everything else copied as they are. The drafter only proposes, so its
    rounding never changes an emitted token (acceptance: bench/draft_head_acceptance.py)."""
    import copy

    from specpilot.formats import w12
    from specpilot.formats.w12_engine import MATRICES, W12Linear, _linears

    # NOTE: the copy shares nothing with the original, whose generators keep their weights
    shadow = copy.deepcopy(drafter)
    for parent, name in _linears(shadow, frozenset(MATRICES)):
        lin = getattr(parent, name)
        if isinstance(lin, W12Linear):  # W12 holds bf16 weights exactly: decoded, then FP8
            weight = w12.decode(lin.weight)
        elif lin.bias is not None:
            raise ValueError(f"an FP8 drafter takes no linear biases ({name})")
        else:
            weight = lin.weight
        setattr(parent, name, Fp8Linear(quantize(weight), use_kernel))
    return shadow


def quantize(w: torch.Tensor) -> Fp8Weight:
    """A weight [N, K] (any float dtype, finite) in e4m3 with one scale per row."""
    if w.dim() != 2 or not w.is_floating_point():
        raise ValueError(f"quantize wants a 2-D float weight, got {tuple(w.shape)} {w.dtype}")
    q = torch.empty(w.shape, dtype=torch.float8_e4m3fn, device=w.device)
    scale = torch.empty(w.shape[0], dtype=torch.float32, device=w.device)
    for i in range(0, w.shape[0], CHUNK_ROWS):  # float32 temporaries of CHUNK_ROWS rows
        part = w[i : i + CHUNK_ROWS].detach().float()
        if not torch.isfinite(part).all():
            raise ValueError("an FP8 draft head needs finite weights (this one has inf or NaN)")
        peak = part.abs().amax(dim=1)
        s = torch.where(peak > 0, peak / E4M3_MAX, torch.ones_like(peak))
        # NOTE: part / s lies in [-448, 448] up to the division's rounding; clamped so that a
        # rounding past 448 cannot become NaN (e4m3fn has no infinity)
        q[i : i + CHUNK_ROWS] = (part / s[:, None]).clamp(-E4M3_MAX, E4M3_MAX)
        scale[i : i + CHUNK_ROWS] = s
    return Fp8Weight(q, scale)


def fp8_linear_reference(
    x: torch.Tensor, w: Fp8Weight, norm_weight: torch.Tensor | None = None, eps: float = 1e-6
) -> torch.Tensor:
    """The FP8 multiply's arithmetic in PyTorch: (RMSNorm(x) * norm_weight, or x) rounded to x's
    dtype, widened through fp16, times the weights, summed in fp32, scaled per row -> x's dtype."""
    if norm_weight is not None:
        x = rms_norm(x, norm_weight, eps)
    y = x.to(torch.float16).float() @ w.weight.float().T
    return (y * w.scale).to(x.dtype)
