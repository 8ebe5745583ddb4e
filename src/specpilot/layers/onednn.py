"""oneDNN-packed linear layers for float32 decoding on a CPU (EngineConfig.cpu_linear).

PyTorch's default CPU matmul is slow at the few rows a decode, verify or draft forward multiplies:
on the 2-core dev box SmolLM2's 49,152 x 576 LM head takes 10.8 ms for one row and 21.4 ms for 16,
while oneDNN with the weight reordered once for 16-row inputs (`torch.ops.mkldnn`, the kernels
torch.compile's CPU backend calls) takes 5.1 and 6.6 ms; in the whole model an AR step went from
~57 to ~38 ms and a 16-token verify from ~104 to ~47 ms (docs/LOG.md, CPU). The values equal
`F.linear`'s up to float32 summation order, and AR and speculative decoding run the same layers,
so every emitted token is still the model's own argmax.
"""

from __future__ import annotations

import os

import torch
import torch.nn.functional as F
from torch import nn


def available() -> bool:
    return torch.backends.mkldnn.is_available() and all(
        hasattr(torch.ops.mkldnn, op) for op in ("_linear_pointwise", "_reorder_linear_weight")
    )


class PackedLinear(nn.Module):
    """A bias-free or biased nn.Linear whose forward runs oneDNN on a packed copy of its weight.

    The dense parameter stays registered under the same name (checkpoint keys and tied
    embeddings are unchanged). The packed copy is taken once: with autograd on (training) the
    forward falls back to `F.linear`, so an updated weight is never read stale.
    """

    def __init__(self, linear: nn.Linear, rows: int) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight = linear.weight
        self.bias = linear.bias
        self.packed = torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), rows)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_grad_enabled() and (x.requires_grad or self.weight.requires_grad):
            return F.linear(x, self.weight, self.bias)
        shape = x.shape
        rows = x.reshape(-1, shape[-1]).contiguous()
        bias = self.bias.detach() if self.bias is not None else None
        y = torch.ops.mkldnn._linear_pointwise(rows, self.packed, bias, "none", [], "")
        return y.view(*shape[:-1], self.out_features)


def packable(module: nn.Module) -> bool:
    """A plain float32 nn.Linear on the CPU: what `pack_linears` replaces."""
    return (
        type(module) is nn.Linear
        and module.weight.dtype == torch.float32
        and module.weight.device.type == "cpu"
    )


def pack_linears(model: nn.Module, rows: int = 16) -> int:
    """Replace every packable linear inside `model` by a PackedLinear (weights reordered for
    `rows`-row inputs); returns how many were replaced."""
    replaced = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if packable(child):
                setattr(parent, name, PackedLinear(child, rows))
                replaced += 1
    return replaced


def fits_in_memory(models: list[nn.Module], share: float = 0.25) -> bool:
    """Whether packed copies of these models' packable linear weights take at most `share` of
    the machine's physical memory (the dense weights stay, so packing adds their size again)."""
    extra = sum(
        m.weight.numel() * m.weight.element_size()
        for model in models
        for m in model.modules()
        if packable(m)
    )
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # no sysconf: assume it fits
        return True
    return extra <= share * total
