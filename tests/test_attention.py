"""layers.attention: the SDPA backend order the engine uses on CUDA gives PyTorch's own result;
KVCache.slot_rows hands out consecutive rows as a view and scattered ones as a gathering cache."""

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


@pytest.mark.parametrize("slots", [[2, 3, 4], [4, 1]])
def test_slot_rows_write_into_their_rows(slots):
    cache = attention.KVCache(2, 6, 2, 8, 4, torch.device("cpu"), torch.float32)
    rows = cache.slot_rows(slots)
    assert rows.contiguous_rows() == (slots == [2, 3, 4])
    k = torch.randn(len(slots), 2, 3, 4)
    v = torch.randn(len(slots), 2, 3, 4)
    positions = torch.tensor([[1, 2, 3]] * len(slots))
    rows.write(1, positions, k, v)
    for b, slot in enumerate(slots):
        assert torch.equal(cache.k[1, slot, :, 1:4], k[b]) and torch.equal(
            cache.v[1, slot, :, 1:4], v[b]
        )
    untouched = [r for r in range(6) if r not in slots]
    assert not cache.k[1, untouched].any() and not cache.k[0].any()
    keys, values = rows.read(1, 4)
    assert torch.equal(keys, cache.k[1, slots, :, :4]) and torch.equal(
        values, cache.v[1, slots, :, :4]
    )
