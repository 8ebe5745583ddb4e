"""A linear layer whose weight is kept in a packed format (W12, FP8): what the formats share."""

from __future__ import annotations

from typing import Any

from torch import nn


class PackedLinear(nn.Module):
    """A bias-free nn.Linear whose `weight` is a packed weight (W12Weight, Fp8Weight: `shape`
    [N, K]); `use_kernel`: its multiply runs the Triton kernels (else a PyTorch path). The
    subclass's forward knows the format; FORMAT names it."""

    FORMAT = ""

    def __init__(self, weight: Any, use_kernel: bool) -> None:
        super().__init__()
        self.weight = weight
        self.out_features, self.in_features = weight.shape
        self.use_kernel = use_kernel

    def extra_repr(self) -> str:
        sizes = f"in_features={self.in_features}, out_features={self.out_features}"
        return f"{sizes}, format={self.FORMAT}"
