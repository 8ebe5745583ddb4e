"""The parameters of one pre-norm decoder layer, shared by targets and DFlash drafters.

Both hold attention projections, a SwiGLU MLP and two RMSNorms under Hugging Face names; they
differ only in how attention is fed (the target attends over its cache, the drafter injects
context), so each model file writes its own forward over this block.
"""

from torch import nn

from specpilot.layers.attention import AttentionProjections
from specpilot.layers.mlp import MLP
from specpilot.layers.norm import RMSNorm


class DecoderBlock(nn.Module):
    def __init__(
        self,
        hidden: int,
        intermediate: int,
        heads: int,
        kv_heads: int,
        head_dim: int,
        *,
        eps: float,
        qk_norm: bool,
        attention_bias: bool = False,
        mlp_bias: bool = False,
    ) -> None:
        super().__init__()
        self.self_attn = AttentionProjections(
            hidden, heads, kv_heads, head_dim, attention_bias, qk_norm, eps
        )
        self.mlp = MLP(hidden, intermediate, mlp_bias)
        self.input_layernorm = RMSNorm(hidden, eps)
        self.post_attention_layernorm = RMSNorm(hidden, eps)
