"""layers.attention.sdpa: the backend order the engine uses on CUDA gives PyTorch's own result."""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention import SDPBackend

from specpilot.layers import attention


def _inputs(heads: int, kv_heads: int, rows: int, length: int, device: str, dtype: torch.dtype):
    gen = torch.Generator().manual_seed(heads * 100 + rows)
    q = torch.randn(2, heads, rows, 16, generator=gen).to(device, dtype)
    k = torch.randn(2, kv_heads, length, 16, generator=gen).to(device, dtype)
    v = torch.randn(2, kv_heads, length, 16, generator=gen).to(device, dtype)
    causal = torch.ones(rows, length, dtype=torch.bool).tril(length - rows)
    hidden = torch.rand(2, 1, rows, length, generator=gen) < 0.2  # e.g. another row's padding
    mask = causal & ~hidden
    mask[..., 0] = True  # every query sees at least one key
    return q, k, v, mask.to(device)


@pytest.mark.parametrize("heads,kv_heads", [(4, 4), (6, 2), (8, 1)])
def test_expanded_gqa_equals_grouped_heads(heads, kv_heads):
    q, k, v, mask = _inputs(heads, kv_heads, rows=5, length=13, device="cpu", dtype=torch.float32)
    expected = attention.sdpa(q, k, v, mask, 0.25, None)  # PyTorch's choice, enable_gqa
    got = attention.sdpa(q, k, v, mask, 0.25, [SDPBackend.MATH])  # keys expanded per head
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("length", [97, 301])  # lengths no earlier test used: fresh shapes
def test_cuda_attend_matches_float32_math(length):
    q, k, v, mask = _inputs(9, 3, rows=length, length=length, device="cuda", dtype=torch.bfloat16)
    got = attention.attend(q, k, v, mask, 0.125).float()
    ref = attention.sdpa(q.float(), k.float(), v.float(), mask, 0.125, [SDPBackend.MATH])
    torch.testing.assert_close(got, ref.transpose(1, 2).flatten(2), rtol=2e-2, atol=2e-2)
