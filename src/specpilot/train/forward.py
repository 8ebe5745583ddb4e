"""The drafter's training forward: many blocks per sequence in one pass, as inference sees them.

At inference (`DFlashDrafter.forward`) a block [anchor, mask, ..., mask] at positions
p..p+K-1 attends to the context keys/values of positions < p (the target hidden states of
`target_layer_ids` through fc + hidden_norm and each layer's k/v projections) and to itself
non-causally (unless the layer is causal or windowed). Training puts A such blocks per sequence
side by side: keys are [context of all T positions; all A * K block rows], and the mask lets a block
row see the context before its own anchor and the rows of its own block only. With the same
parameters and inputs the block logits therefore equal the inference forward's (tested).
"""

from __future__ import annotations

import torch

from specpilot.layers.attention import attend
from specpilot.layers.rotary import RotaryTable
from specpilot.models.dflash import DFlashDrafter, block_visibility


def block_positions(anchor_pos: torch.Tensor, block_size: int) -> torch.Tensor:
    """anchor_pos [B, A] -> positions of every block row [B, A * block_size]."""
    offsets = torch.arange(block_size, device=anchor_pos.device)
    return (anchor_pos[:, :, None] + offsets).flatten(1)


def training_masks(
    drafter: DFlashDrafter, anchor_pos: torch.Tensor, num_ctx: int, block_size: int
) -> dict[tuple[int | None, bool], torch.Tensor]:
    """Per (window, causal) kind of layer: [B, 1, A * K, num_ctx + A * K] bool visibility."""
    device = anchor_pos.device
    batch, anchors = anchor_pos.shape
    blk_pos = block_positions(anchor_pos, block_size)
    ctx_pos = torch.arange(num_ctx, device=device)[None, :].expand(batch, -1)
    start = anchor_pos.repeat_interleave(block_size, dim=1)  # [B, A*K] each row's anchor position
    before_anchor = (ctx_pos[:, None, :] < start[:, :, None]).unsqueeze(1)
    owner = torch.arange(anchors, device=device).repeat_interleave(block_size)
    same_block = (owner[:, None] == owner[None, :])[None, None]
    cfg = drafter.config
    masks: dict[tuple[int | None, bool], torch.Tensor] = {}
    for i in range(cfg.num_layers):
        kind = (cfg.layer_window(i), cfg.layer_is_causal(i))
        if kind not in masks:
            cached = block_visibility(blk_pos, ctx_pos, *kind) & before_anchor
            own = block_visibility(blk_pos, blk_pos, *kind) & same_block
            masks[kind] = torch.cat([cached, own], dim=-1)
    return masks


def draft_blocks(
    drafter: DFlashDrafter,
    target_hidden: torch.Tensor,
    block_embeds: torch.Tensor,
    anchor_pos: torch.Tensor,
    rotary: RotaryTable,
) -> torch.Tensor:
    """Draft hidden states [B, A, K, hidden] (after the final norm) of A blocks per sequence.

    target_hidden [B, T, len(target_layer_ids) * hidden]: the target's captured hidden states at
    positions 0..T-1 (rows at or past a block's anchor are invisible to that block).
    block_embeds [B, A, K, hidden]: embedded [anchor, mask, ..., mask] blocks.
    anchor_pos [B, A]: each block's anchor position (its context is positions < anchor).
    rotary: covers positions up to max(anchor_pos) + K - 1.
    """
    batch, num_ctx, _ = target_hidden.shape
    anchors, block_size = block_embeds.shape[1], block_embeds.shape[2]
    ctx = drafter.hidden_norm(drafter.fc(target_hidden))  # [B, T, hidden]
    ctx_pos = torch.arange(num_ctx, device=ctx.device)[None, :].expand(batch, -1)
    ctx_cos, ctx_sin = rotary.lookup(ctx_pos)
    blk_cos, blk_sin = rotary.lookup(block_positions(anchor_pos, block_size))
    masks = training_masks(drafter, anchor_pos, num_ctx, block_size)
    cfg = drafter.config
    x = block_embeds.flatten(1, 2)  # [B, A*K, hidden]
    for i, layer in enumerate(drafter.layers):
        attn = layer.self_attn
        h = layer.input_layernorm(x)
        q = attn.query(h, blk_cos, blk_sin)
        k_ctx, v_ctx = attn.key_value(ctx, ctx_cos, ctx_sin)
        k_blk, v_blk = attn.key_value(h, blk_cos, blk_sin)
        values = torch.cat([v_ctx, v_blk], dim=2)
        # NOTE: under autocast q/k leave the fp32 norms and rotary in fp32 while v is bf16; attend
        # in the projections' dtype (a no-op in fp32).
        keys = torch.cat([k_ctx, k_blk], dim=2).to(values.dtype)
        mask = masks[cfg.layer_window(i), cfg.layer_is_causal(i)]
        x = x + attn.o_proj(attend(q.to(values.dtype), keys, values, mask, attn.scale))
        x = x + layer.mlp(layer.post_attention_layernorm(x))
    return drafter.norm(x).unflatten(1, (anchors, block_size))


def decay_weights(block_size: int, gamma: float, device: torch.device) -> torch.Tensor:
    """Loss weight of block rows 1..K-1: exp(-(i - 1) / gamma) (early drafts matter most)."""
    i = torch.arange(1, block_size, device=device, dtype=torch.float32)
    return torch.exp(-(i - 1) / gamma)


def block_loss(logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Weighted cross-entropy. logits [B, A, K-1, vocab], labels [B, A, K-1] (-100: ignored),
    weights [K-1]; normalised by the weight of the rows that count."""
    valid = labels >= 0
    ce = torch.nn.functional.cross_entropy(
        logits.float().flatten(0, 2), labels.clamp(min=0).flatten(), reduction="none"
    ).view_as(labels)
    w = weights.expand_as(labels) * valid
    return (ce * w).sum() / w.sum().clamp(min=1e-9)
