"""Token-for-token equality with Hugging Face transformers' greedy `generate`."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForCausalLM

from specpilot import LLM
from specpilot.layers.rotary import inverse_frequencies
from tests.conftest import make_drafter

PROMPTS = [[5, 17, 42, 99, 7, 3, 250], [11, 12], [200, 100, 50, 25, 12, 6, 3, 1, 0, 9, 8, 77]]
NEW_TOKENS = 40


def hf_greedy(path, prompt: list[int], n: int = NEW_TOKENS, eos: int | None = None) -> list[int]:
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    out = model.generate(
        torch.tensor([prompt]),
        max_new_tokens=n,
        do_sample=False,
        eos_token_id=eos,
        pad_token_id=0,
        attention_mask=torch.ones(1, len(prompt)),
    )
    return out[0, len(prompt) :].tolist()


@pytest.fixture(scope="module")
def references(target_dir) -> dict[int, list[int]]:
    return {i: hf_greedy(target_dir, p) for i, p in enumerate(PROMPTS)}


def test_rotary_matches_transformers(target_dir):
    from specpilot.config import ModelConfig

    cfg = ModelConfig.from_hf(json.loads((target_dir / "config.json").read_text()))
    hf = AutoModelForCausalLM.from_pretrained(target_dir, dtype=torch.float32)
    ours = inverse_frequencies(cfg.head_dim, cfg.rope_theta, cfg.rope_scaling)
    torch.testing.assert_close(ours, hf.model.rotary_emb.inv_freq.float(), rtol=1e-6, atol=0)


def test_ar_matches_transformers(target_dir, references):
    llm = LLM(target_dir, device="cpu", dtype="float32")
    for i, prompt in enumerate(PROMPTS):
        out = llm.generate(prompt, max_new_tokens=NEW_TOKENS, ignore_eos=True)[0]
        assert out.output_ids == references[i], f"prompt {i}"
        assert out.drafter == "none" and out.acceptance_lengths == [1] * (NEW_TOKENS - 1)
    # outputs vary: a degenerate model repeating one token would hide position bugs
    assert len(set(references[0])) > 10


def test_batch_ar_matches_transformers(target_dir, references):
    llm = LLM(target_dir, device="cpu", dtype="float32")
    outs = llm.generate(PROMPTS, max_new_tokens=NEW_TOKENS, ignore_eos=True)
    assert [o.output_ids for o in outs] == [references[i] for i in range(len(PROMPTS))]


def test_dflash_drafter_matches_transformers(target_dir, references, tmp_path):
    drafter = make_drafter(tmp_path / "draft", target_dir)
    llm = LLM(target_dir, draft=drafter, device="cpu", dtype="float32")
    outs = llm.generate(PROMPTS, max_new_tokens=NEW_TOKENS, ignore_eos=True)
    for i, out in enumerate(outs):
        assert out.output_ids == references[i], f"prompt {i}"
        assert out.drafter == "dflash"
        assert sum(out.acceptance_lengths) == NEW_TOKENS - 1


@pytest.mark.parametrize("profile", ["7.5", "1:0.1,4:0.3,8:0.6"])
def test_replay_high_acceptance_matches_transformers(target_dir, references, profile):
    """Multi-token accepts and cache rollback in every step, batched with unequal acceptances."""
    llm = LLM(
        target_dir,
        draft=f"replay:{profile}",
        device="cpu",
        dtype="float32",
        engine=__import__("specpilot.config").config.EngineConfig(block_size=8),
    )
    outs = llm.generate(PROMPTS, max_new_tokens=NEW_TOKENS, ignore_eos=True)
    for i, out in enumerate(outs):
        assert out.output_ids == references[i], f"prompt {i}"
        assert out.drafter == "replay"
        assert max(out.acceptance_lengths) > 4  # multi-token accepts really happened
        assert out.mean_acceptance_length > 3


def test_replay_with_real_drafter_compute(qwen_dir, qwen_drafter_dir):
    ref = hf_greedy(qwen_dir, PROMPTS[0])
    llm = LLM(qwen_dir, draft=qwen_drafter_dir, replay="8", device="cpu", dtype="float32")
    out = llm.generate(PROMPTS[0], max_new_tokens=NEW_TOKENS, ignore_eos=True)[0]
    assert out.output_ids == ref
    assert out.drafter == "replay"
    assert out.acceptance_lengths[:-1] == [8] * (len(out.acceptance_lengths) - 1)


def test_stop_token_matches_transformers(qwen_dir):
    full = hf_greedy(qwen_dir, PROMPTS[0])
    stop = full[12]
    expected = hf_greedy(qwen_dir, PROMPTS[0], eos=stop)
    assert expected == full[: full.index(stop) + 1]
    for draft in (None, "replay:6"):
        llm = LLM(qwen_dir, draft=draft, device="cpu", dtype="float32")
        out = llm.generate(PROMPTS[0], max_new_tokens=NEW_TOKENS, stop_token_ids=[stop])[0]
        assert out.output_ids == expected
        assert out.finish_reason == "stop"


def test_max_tokens_is_exact(qwen_dir, qwen_drafter_dir):
    for n in (1, 2, 9, 17):
        for draft in (None, qwen_drafter_dir, "replay:8"):
            llm = LLM(qwen_dir, draft=draft, device="cpu", dtype="float32")
            out = llm.generate(PROMPTS[1], max_new_tokens=n, ignore_eos=True)[0]
            assert len(out.output_ids) == n and out.finish_reason == "length"
