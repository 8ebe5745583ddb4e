"""layers/onednn.py and the CPU mechanisms of the Generator (EngineConfig.cpu_linear,
draft_head): same values as nn.Linear up to float32 rounding, same checkpoint keys and tied
weights, training falls back to F.linear, and decoding stays equal to AR."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from specpilot.config import EngineConfig
from specpilot.engine.generator import Generator
from specpilot.engine.llm import LLM
from specpilot.engine.sequence import Sequence
from specpilot.errors import ConfigError
from specpilot.layers import onednn

pytestmark = pytest.mark.skipif(not onednn.available(), reason="no oneDNN linear in this torch")


@pytest.mark.parametrize("rows", [1, 3, 16, 40])
@pytest.mark.parametrize("bias", [False, True])
def test_packed_linear_matches_linear(rows, bias) -> None:
    torch.manual_seed(rows)
    linear = nn.Linear(96, 200, bias=bias)
    packed = onednn.PackedLinear(linear, rows=16)
    x = torch.randn(2, rows, 96)
    with torch.inference_mode():
        torch.testing.assert_close(packed(x), linear(x), rtol=1e-5, atol=1e-5)


def test_pack_linears_keeps_keys_and_tied_weights() -> None:
    emb = nn.Embedding(50, 8)
    model = nn.ModuleDict(
        {"emb": emb, "proj": nn.Linear(8, 8), "head": nn.Linear(8, 50, bias=False)}
    )
    model["head"].weight = emb.weight
    keys = set(model.state_dict())
    assert onednn.pack_linears(model) == 2
    assert set(model.state_dict()) == keys
    assert model["head"].weight is emb.weight
    assert isinstance(model["proj"], onednn.PackedLinear)


def test_packed_linear_falls_back_to_autograd_when_training() -> None:
    linear = nn.Linear(8, 4)
    packed = onednn.PackedLinear(linear, rows=16)
    with torch.no_grad():
        linear.weight.add_(1.0)  # the packed copy is now stale
    x = torch.randn(3, 8, requires_grad=True)
    y = packed(x)
    y.sum().backward()
    torch.testing.assert_close(y, linear(x))
    assert x.grad is not None


def test_bad_knobs_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="cpu_linear"):
        EngineConfig(cpu_linear="mkl")
    with pytest.raises(ConfigError, match="draft_head"):
        EngineConfig(draft_head="int4")
    with pytest.raises(ConfigError, match="prefill must be auto, torch or fused"):
        EngineConfig(prefill="fast")


@pytest.mark.parametrize("cpu_linear,draft_head", [("onednn", "bfloat16"), ("torch", "target")])
def test_cpu_mechanisms_keep_speculative_equal_to_ar(
    qwen_dir, qwen_drafter_dir, cpu_linear, draft_head
) -> None:
    engine = EngineConfig(cpu_linear=cpu_linear, draft_head=draft_head)
    llm = LLM(qwen_dir, draft=str(qwen_drafter_dir), device="cpu", dtype="float32", engine=engine)
    gen: Generator = llm.generator
    packed = [m for m in gen.target.modules() if isinstance(m, onednn.PackedLinear)]
    assert bool(packed) == (cpu_linear == "onednn")
    assert (gen.draft_head is not None) == (draft_head == "bfloat16")
    prompts = ([5, 9, 2, 7], [11, 3, 8, 8, 1, 40, 2, 9, 6])
    spec = [Sequence(list(p), 30, frozenset()) for p in prompts]
    ar = [Sequence(list(p), 30, frozenset()) for p in prompts]
    gen.run(spec, speculative=True)
    gen.run(ar, speculative=False)
    assert [s.output_ids for s in spec] == [s.output_ids for s in ar]


def test_fits_in_memory_counts_linear_bytes(monkeypatch) -> None:
    model = nn.Sequential(nn.Linear(256, 256), nn.Linear(256, 256))  # 512 KiB of fp32 weights
    monkeypatch.setattr(onednn.os, "sysconf", lambda name: 1024 if name == "SC_PAGE_SIZE" else 2048)
    assert onednn.fits_in_memory([model])  # 2 MiB of memory: a quarter is 512 KiB
    monkeypatch.setattr(onednn.os, "sysconf", lambda name: 1024 if name == "SC_PAGE_SIZE" else 2047)
    assert not onednn.fits_in_memory([model])
