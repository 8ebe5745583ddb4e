"""Target models: one decoder-only implementation for the Qwen3 and Llama-3 families.

The two families differ only in knobs of `ModelConfig` (per-head q/k RMSNorm for Qwen3, rope
scaling, biases), so they share this file; parameter names follow Hugging Face checkpoints so that
state dicts load without renaming. A forward takes new tokens at absolute positions, writes their
keys and values into a `KVCache`, and returns logits and, on request, the hidden states of chosen
layers (what a DFlash drafter is conditioned on).
"""

from dataclasses import dataclass

import torch
from torch import nn

from specpilot.config import ModelConfig
from specpilot.layers.attention import AttentionMeta, KVCache, attend
from specpilot.layers.block import DecoderBlock
from specpilot.layers.norm import RMSNorm


@dataclass
class TargetOutput:
    logits: torch.Tensor | None  # [B, T, vocab] (or [B, 1, vocab] for the rows asked for)
    hidden: torch.Tensor | None  # [B, T, len(capture) * hidden]: outputs of the captured layers
    # a certified head's forward (models/fused.py) returns no logits but their argmax [B, T],
    # and for verify blocks the packed result [B, 2T + 1] (kernels/tokens.argmax_accept's)
    tokens: torch.Tensor | None = None
    packed: torch.Tensor | None = None


class DecoderLayer(DecoderBlock):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(
            cfg.hidden_size,
            cfg.intermediate_size,
            cfg.num_heads,
            cfg.num_kv_heads,
            cfg.head_dim,
            eps=cfg.rms_norm_eps,
            qk_norm=cfg.qk_norm,
            attention_bias=cfg.attention_bias,
            mlp_bias=cfg.mlp_bias,
        )

    def forward(
        self, x: torch.Tensor, meta: AttentionMeta, cache: KVCache, index: int
    ) -> torch.Tensor:
        attn = self.self_attn
        h = self.input_layernorm(x)
        q = attn.query(h, meta.cos, meta.sin)
        k, v = attn.key_value(h, meta.cos, meta.sin)
        cache.write(index, meta.positions, k, v)
        keys, values = cache.read(index, meta.kv_len)
        x = x + attn.o_proj(attend(q, keys, values, meta.mask, attn.scale))
        return x + self.mlp(self.post_attention_layernorm(x))


class DecoderStack(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


class TargetModel(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.config = cfg
        self.model = DecoderStack(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model.embed_tokens(input_ids)

    def forward(
        self,
        input_ids: torch.Tensor,
        meta: AttentionMeta,
        cache: KVCache,
        capture: tuple[int, ...] = (),
        logit_rows: torch.Tensor | None = None,
    ) -> TargetOutput:
        """input_ids [B, T] at meta.positions.

        capture: layer ids whose outputs are returned, concatenated (the last layer's output is
        taken after the final norm, as Hugging Face's hidden_states report it).
        logit_rows: [B] index of the single row per sequence whose logits are wanted (prefill);
        None computes logits for every row (decode, verify).
        """
        x = self.model.embed_tokens(input_ids)
        last = len(self.model.layers) - 1
        captured: dict[int, torch.Tensor] = {}
        for i, layer in enumerate(self.model.layers):
            x = layer(x, meta, cache, i)
            if i in capture and i != last:
                captured[i] = x
        x = self.model.norm(x)
        if last in capture:
            captured[last] = x
        hidden = torch.cat([captured[i] for i in capture], dim=-1) if capture else None
        if logit_rows is not None:
            x = x[torch.arange(x.shape[0], device=x.device), logit_rows].unsqueeze(1)
        return TargetOutput(logits=self.lm_head(x), hidden=hidden)
