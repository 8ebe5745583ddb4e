"""The equality checks on CUDA (skipped without it): fp32 exact, bf16 exact up to near-ties."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM

from specpilot import LLM
from specpilot.config import EngineConfig
from tests.conftest import make_drafter
from tests.test_equality import NEW_TOKENS, PROMPTS

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]


def hf_cuda_greedy(path, dtype: torch.dtype) -> tuple[list[list[int]], torch.nn.Module]:
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).cuda()
    outs = []
    for prompt in PROMPTS:
        ids = torch.tensor([prompt], device="cuda")
        out = model.generate(
            ids,
            max_new_tokens=NEW_TOKENS,
            do_sample=False,
            eos_token_id=None,
            pad_token_id=0,
            attention_mask=torch.ones_like(ids),
        )
        outs.append(out[0, len(prompt) :].tolist())
    return outs, model


# (cuda_graphs, decode_graph): no graphs, graphs, and AR steps through graphs that feed
# themselves (the pipelined loop is LLM's default on CUDA)
GRAPHS = [(False, False), (True, False), (True, True)]


def cuda_llms(target_dir, tmp_path, dtype: str, graphs: tuple[bool, bool]):
    """(draft, LLM) for AR, a random DFlash drafter and replay at tau 7.5, block size 8."""
    drafter = make_drafter(tmp_path / "draft", target_dir)
    for draft in (None, drafter, "replay:7.5"):
        engine = EngineConfig(block_size=8, cuda_graphs=graphs[0], decode_graph=graphs[1])
        yield draft, LLM(target_dir, draft=draft, device="cuda", dtype=dtype, engine=engine)


@pytest.mark.parametrize("graphs", GRAPHS)
def test_cuda_fp32_equal_to_transformers(target_dir, tmp_path, graphs):
    expected, _ = hf_cuda_greedy(target_dir, torch.float32)
    for draft, llm in cuda_llms(target_dir, tmp_path, "float32", graphs):
        for _ in range(2):  # the second call replays graphs captured by the first
            outs = llm.generate(PROMPTS, max_new_tokens=NEW_TOKENS, ignore_eos=True)
            assert [o.output_ids for o in outs] == expected, f"draft={draft}"


@pytest.mark.parametrize("graphs", GRAPHS)
def test_cuda_bf16_equal_to_transformers_up_to_near_ties(target_dir, tmp_path, graphs):
    """bf16: identical, or the first divergence is a near-tie of the target's own logits."""
    expected, hf = hf_cuda_greedy(target_dir, torch.bfloat16)
    for draft, llm in cuda_llms(target_dir, tmp_path, "bfloat16", graphs):
        outs = llm.generate(PROMPTS, max_new_tokens=NEW_TOKENS, ignore_eos=True)
        for prompt, out, ref in zip(PROMPTS, outs, expected):
            if out.output_ids == ref:
                continue
            first = next(i for i, (a, b) in enumerate(zip(out.output_ids, ref)) if a != b)
            ids = torch.tensor([prompt + ref[:first]], device="cuda")
            logits = hf(ids).logits[0, -1].float()
            margin = (logits[ref[first]] - logits[out.output_ids[first]]).abs().item()
            assert margin < 0.25, f"draft={draft}: divergence at {first} with margin {margin}"
            # and every token we emitted is still the bf16 target's own choice (token forcing
            # against the target as loaded: on the tiny llama-tied-gqa4-hd12 shape, bf16
            # rounding alone moves a logit by more than the 0.5 near-tie margin from the
            # float32 copy that LLM.validate uses by default; H200 run 19)
            assert llm.validate(prompt, out.output_ids, reference_dtype=None).passed
