"""The DFlash drafter against a reference written here from the published algorithm."""

from __future__ import annotations

import math

import torch
from transformers import AutoModelForCausalLM

from specpilot.layers.attention import AttentionMeta, KVCache
from specpilot.layers.rotary import RotaryTable
from specpilot.models.dflash import DFlashDrafter
from specpilot.models.loader import load_drafter, load_target
from tests.conftest import make_drafter

CPU = torch.device("cpu")


def rms(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    return w * (x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rope(x: torch.Tensor, pos: torch.Tensor, theta: float) -> torch.Tensor:
    """x [heads, T, d] rotated at integer positions pos [T] (half-rotation layout)."""
    d = x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, d, 2).float() / d)
    ang = pos.float()[:, None] * inv[None, :]
    cos, sin = torch.cat([ang.cos()] * 2, -1), torch.cat([ang.sin()] * 2, -1)
    rot = torch.cat([-x[..., d // 2 :], x[..., : d // 2]], -1)
    return x * cos + rot * sin


def reference_draft_logits(
    drafter: DFlashDrafter,
    embed: torch.Tensor,
    lm_head: torch.Tensor,
    ctx_hidden: torch.Tensor,
    block_ids: torch.Tensor,
) -> torch.Tensor:
    """Published DFlash step for one sequence: the context is every token before the block.

    ctx_hidden [n, layers * hidden] for positions 0..n-1; block_ids [bs] at positions n..n+bs-1.
    Returns logits [bs - 1, vocab] of block rows 1..bs-1.
    """
    cfg = drafter.config
    eps, hd = cfg.rms_norm_eps, cfg.head_dim
    n, bs = ctx_hidden.shape[0], block_ids.shape[0]
    ctx = rms(ctx_hidden @ drafter.fc.weight.T, drafter.hidden_norm.weight, eps)
    x = embed[block_ids]
    kpos, qpos = torch.arange(n + bs), torch.arange(n, n + bs)
    for layer in drafter.layers:
        a = layer.self_attn
        h = rms(x, layer.input_layernorm.weight, eps)
        q = (h @ a.q_proj.weight.T).view(bs, -1, hd)
        both = torch.cat([ctx, h], 0)  # keys/values from [context, block]
        k = (both @ a.k_proj.weight.T).view(n + bs, -1, hd)
        v = (both @ a.v_proj.weight.T).view(n + bs, -1, hd).transpose(0, 1)
        q = rope(rms(q, a.q_norm.weight, eps).transpose(0, 1), qpos, cfg.rope_theta)
        k = rope(rms(k, a.k_norm.weight, eps).transpose(0, 1), kpos, cfg.rope_theta)
        rep = q.shape[0] // k.shape[0]
        k, v = k.repeat_interleave(rep, 0), v.repeat_interleave(rep, 0)
        scores = (q @ k.transpose(1, 2)) / math.sqrt(hd)  # non-causal: everything visible
        out = (scores.softmax(-1) @ v).transpose(0, 1).reshape(bs, -1)
        x = x + out @ a.o_proj.weight.T
        hh = rms(x, layer.post_attention_layernorm.weight, eps)
        m = layer.mlp
        x = (
            x
            + (torch.nn.functional.silu(hh @ m.gate_proj.weight.T) * (hh @ m.up_proj.weight.T))
            @ m.down_proj.weight.T
        )
    x = rms(x, drafter.norm.weight, eps)
    return x[1:] @ lm_head.T


def test_target_hidden_capture_matches_transformers(qwen_dir):
    target, _ = load_target(qwen_dir, CPU, torch.float32)
    ids = torch.tensor([[3, 14, 15, 92, 65, 35, 89, 79]])
    layers = tuple(range(target.config.num_layers))  # includes the last (normed) layer
    cache = KVCache(
        target.config.num_layers,
        1,
        target.config.num_kv_heads,
        8,
        target.config.head_dim,
        CPU,
        torch.float32,
    )
    table = RotaryTable(
        target.config.head_dim,
        target.config.rope_theta,
        target.config.rope_scaling,
        8,
        CPU,
        torch.float32,
    )
    pos = torch.arange(8)[None]
    out = target(ids, AttentionMeta.causal(pos, 8, table), cache, layers)
    hf = AutoModelForCausalLM.from_pretrained(qwen_dir, dtype=torch.float32)
    ref = hf(ids, output_hidden_states=True)
    expected = torch.cat([ref.hidden_states[i + 1] for i in layers], -1)
    torch.testing.assert_close(out.hidden, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out.logits, ref.logits, rtol=1e-5, atol=1e-5)


def test_drafter_block_logits_match_reference(qwen_dir, qwen_drafter_dir):
    """Two steps with the drafter's cache and a batch of two unequal contexts vs the reference."""
    target, _ = load_target(qwen_dir, CPU, torch.float32)
    drafter, _ = load_drafter(qwen_drafter_dir, target.config, CPU, torch.float32)
    cfg = drafter.config
    bs, width = cfg.block_size, len(cfg.target_layer_ids) * cfg.hidden_size
    gen = torch.Generator().manual_seed(0)
    full = torch.randn(2, 20, width, generator=gen)  # target hidden for positions 0..19
    embed, head = target.model.embed_tokens.weight, target.lm_head.weight
    table = RotaryTable(cfg.head_dim, cfg.rope_theta, cfg.rope_scaling, 64, CPU, torch.float32)
    cache = KVCache(cfg.num_layers, 2, cfg.num_kv_heads, 64, cfg.head_dim, CPU, torch.float32)
    anchors = torch.tensor([7, 200])

    def step(starts: list[int], counts: list[int]) -> torch.Tensor:
        n = max(counts)
        ctx_pos = torch.tensor([s - c for s, c in zip(starts, counts)])[:, None] + torch.arange(n)
        ctx = torch.stack([full[b, ctx_pos[b].clamp(max=19)] for b in range(2)])
        block = torch.full((2, bs), cfg.mask_token_id)
        block[:, 0] = anchors
        block_pos = torch.tensor(starts)[:, None] + torch.arange(bs)
        kv_len = int(ctx_pos.max()) + 1
        hidden = drafter(ctx, ctx_pos, embed[block], block_pos, cache, table, kv_len)
        return hidden[:, 1:] @ head.T, block

    # step 1: contexts of 9 and 5 prompt tokens; step 2: 4 and 11 more accepted tokens
    for starts, counts in (([9, 5], [9, 5]), ([13, 16], [4, 11])):
        logits, block = step(starts, counts)
        for b in range(2):
            ref = reference_draft_logits(drafter, embed, head, full[b, : starts[b]], block[b])
            torch.testing.assert_close(logits[b], ref, rtol=1e-4, atol=1e-4)


def test_sliding_window_layers_restrict_context(qwen_dir, tmp_path):
    """A sliding layer with a window smaller than the context sees less: drafts change."""
    target, _ = load_target(qwen_dir, CPU, torch.float32)
    full_dir = make_drafter(tmp_path / "full", qwen_dir, seed=5)
    slide_dir = make_drafter(
        tmp_path / "slide",
        qwen_dir,
        seed=5,
        layer_types=["sliding_attention", "full_attention"],
        sliding_window=4,
    )
    full, _ = load_drafter(full_dir, target.config, CPU, torch.float32)
    slide, _ = load_drafter(slide_dir, target.config, CPU, torch.float32)
    assert slide.config.layer_window(0) == 4 and slide.config.layer_is_causal(0)
    cfg = full.config
    width = len(cfg.target_layer_ids) * cfg.hidden_size
    ctx = torch.randn(1, 12, width, generator=torch.Generator().manual_seed(1))
    outs = []
    for model in (full, slide):
        table = RotaryTable(cfg.head_dim, cfg.rope_theta, cfg.rope_scaling, 32, CPU, torch.float32)
        cache = KVCache(cfg.num_layers, 1, cfg.num_kv_heads, 32, cfg.head_dim, CPU, torch.float32)
        block = torch.full((1, cfg.block_size), cfg.mask_token_id)
        outs.append(
            model(
                ctx,
                torch.arange(12)[None],
                target.embed(block),
                12 + torch.arange(cfg.block_size)[None],
                cache,
                table,
                12,
            )
        )
    assert not torch.allclose(outs[0], outs[1])
