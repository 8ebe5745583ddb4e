"""Attention projections and attention over a KV cache.

The cache layout is [batch, kv_heads, max_len, head_dim] per layer; a forward writes the keys and
values of its tokens at their absolute positions, and a query at position p sees exactly the keys at
positions <= p. Because every forward writes all positions from the first uncached one onward, any
stale entry (from a rejected draft) at a position <= p has been overwritten before it is read, so
rolling a cache back is only a matter of the caller's lengths.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from specpilot.layers.norm import RMSNorm
from specpilot.layers.rotary import RotaryTable, apply_rotary


@dataclass
class AttentionMeta:
    """What every attention layer of one forward needs, built once per forward."""

    positions: torch.Tensor  # [B, T] absolute positions of the new tokens
    cos: torch.Tensor  # [B, 1, T, head_dim]
    sin: torch.Tensor  # [B, 1, T, head_dim]
    mask: torch.Tensor  # [B, 1, T, kv_len] bool, True where a key is visible
    kv_len: int  # keys read from the cache: positions [0, kv_len)

    @classmethod
    def causal(cls, positions: torch.Tensor, kv_len: int, table: RotaryTable) -> AttentionMeta:
        """Causal attention over cache positions [0, kv_len) for tokens at `positions`."""
        cos, sin = table.lookup(positions)
        return cls(positions, cos, sin, causal_mask(positions, kv_len), kv_len)


class KVCache:
    """Preallocated keys and values for every layer of one model."""

    def __init__(
        self,
        num_layers: int,
        batch: int,
        num_kv_heads: int,
        max_len: int,
        head_dim: int,
        device: torch.device,
        dtype: torch.dtype,
    ) -> None:
        shape = (num_layers, batch, num_kv_heads, max_len, head_dim)
        self.k = torch.zeros(shape, device=device, dtype=dtype)
        self.v = torch.zeros(shape, device=device, dtype=dtype)
        self.max_len = max_len
        self.rows = torch.arange(batch, device=device)[:, None]  # [B, 1] for scatter indexing

    def write(self, layer: int, positions: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
        """Store k, v [B, kv_heads, T, head_dim] at positions [B, T]."""
        # NOTE: advanced indices on dims 0 and 2 around a slice put [B, T] first: [B, T, Hkv, D].
        self.k[layer][self.rows, :, positions] = k.transpose(1, 2)
        self.v[layer][self.rows, :, positions] = v.transpose(1, 2)

    def read(self, layer: int, kv_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.k[layer, :, :, :kv_len], self.v[layer, :, :, :kv_len]

    def rows_view(self, start: int, stop: int) -> KVCache:
        """Batch rows [start, stop) as a cache of their own that shares this one's memory.

        Each layer's slice stays contiguous ([rows, kv_heads, max_len, head_dim]), so every
        forward, kernel and CUDA graph that takes a cache takes a view as well.
        """
        view = KVCache.__new__(KVCache)
        view.k, view.v = self.k[:, start:stop], self.v[:, start:stop]
        view.max_len = self.max_len
        view.rows = self.rows[: stop - start]
        return view

    def contiguous_rows(self) -> bool:
        """Whether every batch row is its own contiguous slice (what the fused kernels take)."""
        return True

    def slot_rows(self, slots: list[int]) -> KVCache:
        """Rows `slots` (any set, in that order) as a cache of their own, e.g. for a batched
        prefill of requests in their slots: consecutive slots (the scheduler's usual case) are a
        `rows_view`, which every forward and kernel takes; scattered ones a cache for PyTorch-
        module forwards only, whose writes go straight into those rows and whose reads gather
        them (a copy; `contiguous_rows` is False)."""
        if slots == list(range(slots[0], slots[0] + len(slots))):
            return self.rows_view(slots[0], slots[0] + len(slots))
        return _SlotRows(self, slots)


class _SlotRows(KVCache):
    def __init__(self, cache: KVCache, slots: list[int]) -> None:  # shares `cache`, allocates none
        self.k, self.v, self.max_len = cache.k, cache.v, cache.max_len
        self.rows = torch.tensor(slots, device=cache.k.device)[:, None]

    def contiguous_rows(self) -> bool:
        return False

    def read(self, layer: int, kv_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        rows = self.rows[:, 0]
        return self.k[layer, rows, :, :kv_len], self.v[layer, rows, :, :kv_len]


def causal_mask(positions: torch.Tensor, kv_len: int) -> torch.Tensor:
    """[B, 1, T, kv_len]: query at position p sees keys 0..p."""
    keys = torch.arange(kv_len, device=positions.device)
    return (keys[None, None, :] <= positions[:, :, None]).unsqueeze(1)


# NOTE: on CUDA the eager forwards (prompt prefill, the drafter's prompt context, the PyTorch
# path, training) take memory-efficient SDPA, then math. PyTorch's own choice for a masked input
# there is cuDNN attention, which builds an execution plan for every new shape: on the H200 the
# first call at a prompt length not seen before took 251 ms at the SmolLM2 shape and 415 ms at
# Qwen3-8B's, against 0.13 / 0.17 ms memory-efficient (bench/sdpa_shapes.py, docs/LOG.md run
# 36); every new prompt length paid it once, in the drafter's prompt context and the prefill.
# Memory-efficient attention needs as many key heads as query heads, so GQA keys and values are
# expanded first. None: PyTorch's choice (bench/embedded_diag.py --sdpa patches this).
CUDA_SDPA_BACKENDS: list[SDPBackend] | None = [SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def attend(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor, scale: float
) -> torch.Tensor:
    """q [B, H, T, D], k/v [B, Hkv, L, D], mask [B, 1, T, L] -> [B, T, H * D]."""
    backends = CUDA_SDPA_BACKENDS if q.is_cuda else None
    return sdpa(q, k, v, mask, scale, backends).transpose(1, 2).flatten(2)


def sdpa(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    scale: float,
    backends: list[SDPBackend] | None,
    causal: bool = False,
) -> torch.Tensor:
    """SDPA [B, H, T, D] with the given backends in order (None: PyTorch's choice, GQA without
    copying the keys and values per query head); a GQA input is expanded for the backends.
    causal: no mask, query i sees keys 0..i (a prompt from position 0)."""
    group = q.shape[1] // k.shape[1]
    if backends is None:
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, scale=scale, is_causal=causal, enable_gqa=group > 1
        )
    if group > 1:
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    with sdpa_kernel(backends, set_priority=True):
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, scale=scale, is_causal=causal
        )


class AttentionProjections(nn.Module):
    """q/k/v/o projections, optional per-head q/k RMSNorm (Qwen3); names as in HF checkpoints."""

    def __init__(
        self,
        hidden: int,
        heads: int,
        kv_heads: int,
        head_dim: int,
        bias: bool,
        qk_norm: bool,
        eps: float,
    ) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.scale = head_dim**-0.5
        self.q_proj = nn.Linear(hidden, heads * head_dim, bias=bias)
        self.k_proj = nn.Linear(hidden, kv_heads * head_dim, bias=bias)
        self.v_proj = nn.Linear(hidden, kv_heads * head_dim, bias=bias)
        self.o_proj = nn.Linear(heads * head_dim, hidden, bias=bias)
        self.q_norm = RMSNorm(head_dim, eps) if qk_norm else None
        self.k_norm = RMSNorm(head_dim, eps) if qk_norm else None

    def query(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """x [B, T, hidden] -> rotated queries [B, heads, T, head_dim]."""
        q = self.q_proj(x).unflatten(-1, (self.heads, self.head_dim))
        if self.q_norm is not None:
            q = self.q_norm(q)
        return apply_rotary(q.transpose(1, 2), cos, sin)

    def key_value(
        self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x [B, T, hidden] -> rotated keys and values [B, kv_heads, T, head_dim]."""
        k = self.k_proj(x).unflatten(-1, (self.kv_heads, self.head_dim))
        if self.k_norm is not None:
            k = self.k_norm(k)
        v = self.v_proj(x).unflatten(-1, (self.kv_heads, self.head_dim))
        return apply_rotary(k.transpose(1, 2), cos, sin), v.transpose(1, 2)
