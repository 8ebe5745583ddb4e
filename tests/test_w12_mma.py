"""kernels/w12_mma.py (inline PTX: mma.sync with the weights decoded into its registers): its
products against the PyTorch reference on the GPU; here on the CPU, what it takes and refuses."""

from __future__ import annotations

import pytest
import torch

from tests.test_kernels import BF16, CUDA, DEVICE, close  # sets TRITON_INTERPRET=1 without CUDA
from tests.test_w12_kernels import close_columns, weight_with_escapes

# isort: split
from specpilot.formats import w12
from specpilot.kernels import w12_mma
from specpilot.kernels.w12_linear import w12_linear_reference

gpu = pytest.mark.skipif(not CUDA, reason="inline PTX (mma.sync): CUDA only")


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("m", [1, 2, 5, 8, 11, 16])
@pytest.mark.parametrize("residual", [False, True])
def test_mma_linear_matches_the_reference(m: int, residual: bool) -> None:
    """Rows 1-16 (above 8: a second mma a fragment) against decode-then-multiply: weights with
    escapes, zeros and a subnormal (the escape table), N not a multiple of the 16-row tile, two
    blocks of K split over warps."""
    gen = torch.Generator().manual_seed(m)
    n, k = 70, 512
    w = weight_with_escapes(n, k, gen)
    packed = w12.encode(w, 128).to(DEVICE)
    assert packed.num_escapes > 10
    x = torch.randn(m, k, generator=gen).to(DEVICE, BF16)
    res = torch.randn(m, n, generator=gen).to(DEVICE, BF16) if residual else None
    expected = w12_linear_reference(x, packed, residual=res)
    tiles = [(1, 2, 1), (4, 1, 1), (2, 1, 2)]
    keys = ("WARPS_N", "WARPS_K", "TILES")  # warps along N and along K, row tiles a warp
    for cfg in [None] + [dict(zip(keys, t)) for t in tiles if m <= 8 or t[2] == 1]:
        y = w12_mma_linear(x, packed, res, cfg)
        close_columns(y, expected, 2)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("n,k", [(4096, 4096), (6144, 4096), (4096, 12288)])
def test_mma_linear_at_8b_shapes(n: int, k: int) -> None:
    """One row at Qwen3-8B's shapes with the default tiles (normal weights: few escapes)."""
    gen = torch.Generator(device=DEVICE).manual_seed(n + k)
    w = (torch.randn(n, k, generator=gen, device=DEVICE) * 0.02).to(BF16)
    packed = w12.encode(w, 128)
    x = torch.randn(1, k, generator=gen, device=DEVICE).to(BF16)
    close(w12_mma_linear(x, packed), w12_linear_reference(x, packed), 2)


def w12_mma_linear(x, packed, res=None, cfg=None):
    return w12_mma.w12_mma_linear(x, packed, residual=res, config=cfg)


def test_mma_usable_and_its_refusals() -> None:
    """What it takes: CUDA bf16 rows 1-16 of aligned x, K a multiple of 256, groups of a multiple
    of 128; anything else goes to w12_linear, and a direct call says why."""
    gen = torch.Generator().manual_seed(0)
    packed = w12.encode((torch.randn(32, 256, generator=gen) * 0.05).to(BF16), 128).to(DEVICE)
    x = torch.randn(1, 256, generator=gen).to(DEVICE, BF16)
    assert w12_mma.mma_usable(x, packed) == CUDA
    odd_k = w12.encode((torch.randn(32, 200, generator=gen) * 0.05).to(BF16), 128).to(DEVICE)
    small_group = w12.encode((torch.randn(32, 256, generator=gen) * 0.05).to(BF16), 32)
    x17 = torch.randn(17, 256, generator=gen).to(DEVICE, BF16)
    for xx, ww in ((x[:, :200], odd_k), (x, small_group.to(DEVICE)), (x17, packed),
                   (x.float(), packed)):  # fmt: skip
        assert not w12_mma.mma_usable(xx, ww)
    if not CUDA:
        with pytest.raises(ValueError, match="w12_mma_linear takes CUDA bf16"):
            w12_mma.w12_mma_linear(x, packed)


def test_mma_tile_splits_k_over_warps_for_narrow_weights() -> None:
    """The rule: K split over warps until ~4 warps an H200 SM, whole blocks a warp."""
    assert w12_mma.mma_tile(4096, 4096) == dict(WARPS_N=1, WARPS_K=4, TILES=1)  # 256 tiles
    assert w12_mma.mma_tile(24576, 4096) == dict(WARPS_N=4, WARPS_K=1, TILES=1)  # 1536
    assert w12_mma.mma_tile(4096, 12288)["WARPS_K"] == 4  # 48 blocks: 12 a warp
    assert w12_mma.mma_tile(4096, 256)["WARPS_K"] == 1  # one block: nothing to split
    assert w12_mma.mma_tile(6144, 4096) == dict(WARPS_N=1, WARPS_K=4, TILES=1)  # measured
