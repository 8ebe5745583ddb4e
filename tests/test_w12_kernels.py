"""The W12 Triton kernel against its PyTorch reference (decode, then the modules' steps), on the
GPU or in Triton's interpreter; the interpreter set-up is test_kernels.py's."""

from __future__ import annotations

import pytest
import torch

from tests.test_kernels import BF16, DEVICE, close  # sets TRITON_INTERPRET=1 without CUDA

# isort: split
from specpilot.formats import w12  # after the interpreter is set up
from specpilot.formats.w12_engine import W12Linear, linear
from specpilot.kernels.linear import skinny_linear
from specpilot.kernels.w12_linear import w12_linear, w12_linear_reference


def weight_with_escapes(n: int, k: int, gen: torch.Generator) -> torch.Tensor:
    w = (torch.randn(n, k, generator=gen) * k**-0.5).to(BF16)
    w[0, :5] = torch.tensor([1e-30, -3e-20, 0.0, -0.0, 2.0**-130])  # tiny, zeros, subnormal
    w[2, -1] = 300.0  # far above its group
    w[3] = 0.0
    w[4, ::3] = torch.tensor(2.0) ** torch.arange(-60, 60, 8.0).repeat(k)[: w[4, ::3].numel()]
    return w


@pytest.mark.parametrize("m", [1, 3, 16, 33])
@pytest.mark.parametrize("mode", ["plain", "norm", "residual", "glu"])
def test_w12_linear(m: int, mode: str) -> None:
    gen = torch.Generator().manual_seed(m)
    n, k = 70, (96 if mode == "glu" else 97)  # neither a multiple of the blocks nor the group
    x = torch.randn(m, 2 * k if mode == "glu" else k, generator=gen).to(BF16)
    w = weight_with_escapes(n, k, gen)
    packed = w12.encode(w, 32)
    assert packed.num_escapes > 10
    kw: dict = {}
    if mode == "norm":
        kw["norm_weight"] = (torch.rand(k, generator=gen) + 0.5).to(DEVICE, BF16)
    if mode == "residual":
        kw["residual"] = torch.randn(m, n, generator=gen).to(DEVICE, BF16)
    if mode == "glu":
        kw["glu"] = True
    x, packed = x.to(DEVICE), packed.to(DEVICE)
    y = w12_linear(x, packed, **kw)
    close(y, w12_linear_reference(x, packed, **kw), 4 if m > 1 else 2)
    # same weights, same tiles: the bf16 kernel sums in the same order except for the escapes
    close(y, skinny_linear(x, w.to(DEVICE), **kw), 4 if m > 1 else 2)


def test_w12_linear_on_fused_row_views() -> None:
    """The fused forwards multiply by row slices of a concatenated weight (views, absolute
    escape offsets) and call `linear` for either weight type."""
    gen = torch.Generator().manual_seed(7)
    w = weight_with_escapes(40, 64, gen)
    fused = w12.cat([w12.encode(w[:9], 16), w12.encode(w[9:], 16)]).to(DEVICE)
    x = torch.randn(2, 64, generator=gen).to(DEVICE, BF16)
    part = fused[9:31]
    close(linear(x, part), w12_linear_reference(x, part))
    assert torch.equal(linear(x, part), w12_linear(x, part))
    assert torch.equal(linear(x, w[9:31].to(DEVICE)), skinny_linear(x, w[9:31].to(DEVICE)))
    layer = W12Linear(fused, use_kernel=True)
    close(layer(x.view(2, 1, 64)).view(2, -1), w12_linear_reference(x, fused))


def test_w12_linear_rejects_bad_input() -> None:
    packed = w12.encode(torch.randn(4, 8).to(BF16)).to(DEVICE)
    x = torch.randn(2, 8, dtype=BF16, device=DEVICE)
    with pytest.raises(ValueError, match="columns"):
        w12_linear(torch.randn(2, 6, dtype=BF16, device=DEVICE), packed)
    with pytest.raises(ValueError, match="at most 64 rows"):
        w12_linear(torch.randn(65, 8, dtype=BF16, device=DEVICE), packed)
    with pytest.raises(ValueError, match="bf16 x"):
        w12_linear(x.half(), packed)
    with pytest.raises(ValueError, match="unit stride"):
        w12_linear(torch.randn(8, 2, dtype=BF16, device=DEVICE).t(), packed)
    with pytest.raises(ValueError, match="residual"):
        w12_linear(x, packed, residual=torch.zeros(3, 2, dtype=BF16, device=DEVICE))
    with pytest.raises(ValueError, match="even"):
        w12_linear(x, packed, config=dict(BLOCK_M=1, BLOCK_N=8, BLOCK_K=7, USE_DOT=False))
