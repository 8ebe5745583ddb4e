"""The DFlash drafter (z-lab checkpoint format).

Per step the drafter sees (a) the target's hidden states of `target_layer_ids` for the tokens the
target accepted since the last step, concatenated and projected by `fc` + `hidden_norm` into one
context vector per token, and (b) the block [anchor token, mask, ..., mask] embedded by the target's
embedding. In every layer the context vectors become keys/values (through that layer's k/v
projections, k_norm and rotary embedding at their own positions) that are appended to the drafter's
KV cache; the block's queries attend to all cached context plus the block itself (non-causally,
unless the layer is causal), and the target's lm_head turns block rows 1..block_size-1 into drafts.
The block's own keys are never cached: the next step starts from the accepted context only.
"""

import torch
from torch import nn

from specpilot.config import DraftConfig
from specpilot.layers.attention import KVCache, attend
from specpilot.layers.block import DecoderBlock
from specpilot.layers.norm import RMSNorm
from specpilot.layers.rotary import RotaryTable


def default_target_layer_ids(num_target_layers: int, num_draft_layers: int) -> list[int]:
    """Evenly spaced target layers from 1 to num_target_layers - 3 (one per draft layer)."""
    if num_draft_layers == 1:
        return [num_target_layers // 2]
    first, last = 1, num_target_layers - 3
    if last <= first:  # tiny targets: spread over all layers instead
        first, last = 0, num_target_layers - 1
    step = (last - first) / (num_draft_layers - 1)
    return [int(round(first + i * step)) for i in range(num_draft_layers)]


def block_visibility(
    query_pos: torch.Tensor, key_pos: torch.Tensor, window: int | None, causal: bool
) -> torch.Tensor:
    """query_pos [B, Q], key_pos [B, K] -> [B, 1, Q, K] bool."""
    diff = query_pos[:, :, None] - key_pos[:, None, :]  # q - k
    visible = torch.ones_like(diff, dtype=torch.bool)
    if causal:
        visible &= diff >= 0
    if window is not None:
        visible &= diff < window
        if not causal:
            visible &= -diff < window
    return visible.unsqueeze(1)


def draft_layer(cfg: DraftConfig) -> DecoderBlock:
    """One drafter layer: Qwen3-style (q/k norm) parameters; its forward is in the drafter."""
    return DecoderBlock(
        cfg.hidden_size,
        cfg.intermediate_size,
        cfg.num_heads,
        cfg.num_kv_heads,
        cfg.head_dim,
        eps=cfg.rms_norm_eps,
        qk_norm=True,
        attention_bias=cfg.attention_bias,
    )


class DFlashDrafter(nn.Module):
    def __init__(self, cfg: DraftConfig) -> None:
        super().__init__()
        self.config = cfg
        self.layers = nn.ModuleList(draft_layer(cfg) for _ in range(cfg.num_layers))
        self.fc = nn.Linear(
            len(cfg.target_layer_ids) * cfg.hidden_size, cfg.hidden_size, bias=False
        )
        self.hidden_norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)

    def anchor_block(self, anchors: torch.Tensor, width: int) -> torch.Tensor:
        """The input block [B, width]: each anchor [B], then mask tokens."""
        block = torch.full(
            (anchors.shape[0], width), self.config.mask_token_id, device=anchors.device
        )
        block[:, 0] = anchors
        return block

    def write_context(
        self,
        target_hidden: torch.Tensor,
        ctx_positions: torch.Tensor,
        cache: KVCache,
        rotary: RotaryTable,
    ) -> None:
        """Every layer's context keys and values: target_hidden [B, N, len(target_layer_ids) *
        hidden] at ctx_positions [B, N], projected once (fc, norm) and written into `cache`.
        They depend on the context alone, not on any block: a prompt's context is written with
        this and no block forward (`Generator._draft_prefill`)."""
        ctx = self.hidden_norm(self.fc(target_hidden))
        cos, sin = rotary.lookup(ctx_positions)
        for i, layer in enumerate(self.layers):
            k, v = layer.self_attn.key_value(ctx, cos, sin)
            cache.write(i, ctx_positions, k, v)

    def forward(
        self,
        target_hidden: torch.Tensor,
        ctx_positions: torch.Tensor,
        block_embeds: torch.Tensor,
        block_positions: torch.Tensor,
        cache: KVCache,
        rotary: RotaryTable,
        kv_len: int,
    ) -> torch.Tensor:
        """Draft hidden states [B, block, hidden] (after the final norm).

        target_hidden [B, N, len(target_layer_ids) * hidden] at ctx_positions [B, N]: the newly
        accepted context, written into `cache`. Padding entries (sequences with fewer new tokens)
        must sit at positions >= the block's first position: they are masked out and overwritten
        by the next step's context.
        block_embeds [B, block, hidden] at block_positions [B, block] (consecutive per sequence).
        kv_len: cache positions read, > every entry of ctx_positions.
        """
        self.write_context(target_hidden, ctx_positions, cache, rotary)
        blk_cos, blk_sin = rotary.lookup(block_positions)
        start = block_positions[:, :1]  # [B, 1] the anchor's position = number of cached tokens
        cache_pos = torch.arange(kv_len, device=block_embeds.device)[None, :]
        cache_pos = cache_pos.expand(block_embeds.shape[0], -1)
        masks: dict[tuple[int | None, bool], torch.Tensor] = {}
        x = block_embeds
        for i, layer in enumerate(self.layers):
            window, causal = self.config.layer_window(i), self.config.layer_is_causal(i)
            if (window, causal) not in masks:
                cached = block_visibility(block_positions, cache_pos, window, causal)
                cached &= (cache_pos < start).unsqueeze(1).unsqueeze(1)
                own = block_visibility(block_positions, block_positions, window, causal)
                masks[window, causal] = torch.cat([cached, own], dim=-1)
            attn = layer.self_attn
            h = layer.input_layernorm(x)
            q = attn.query(h, blk_cos, blk_sin)
            k_blk, v_blk = attn.key_value(h, blk_cos, blk_sin)
            keys, values = cache.read(i, kv_len)
            keys = torch.cat([keys, k_blk], dim=2)
            values = torch.cat([values, v_blk], dim=2)
            x = x + attn.o_proj(attend(q, keys, values, masks[window, causal], attn.scale))
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        return self.norm(x)
