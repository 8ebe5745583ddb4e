"""W12 in the engine: linear layers whose weights stay in W12 form on the device.

`convert_model(model)` replaces, in place, every linear layer of a loaded TargetModel or
DFlashDrafter (the decoder layers' q/k/v/o and gate/up/down, the target's lm_head unless it is
tied to the embeddings, the drafter's `fc`), or those of some MATRICES only, by a `W12Linear`
holding the encoded weight; the bf16 weight is dropped (convert on load). Embeddings and norms
stay as they are. A `W12Linear` is an nn.Module, so the PyTorch forwards (prefill, first draft,
references) run unchanged: rows <= 64 go to the Triton kernel where kernels run, anything else
decodes the weight (exactly) and calls F.linear. The fused forwards (models/fused.py) use
`concat_rows` and `linear` below in place of their bf16-only helpers, per weight, so a model with
some matrices in W12 and the rest in bf16 runs through them too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from specpilot.formats import w12
from specpilot.formats.fp8 import Fp8Weight
from specpilot.formats.packed import PackedLinear
from specpilot.formats.w12 import W12Weight

# the linear layers `convert_model` may convert, by matrix: (module of a decoder layer, its
# projections); the fused forwards concatenate q|k|v and gate|up, so each of those converts whole.
# "lm_head" (an untied target head) and "fc" (the drafter's) are the model's own.
MATRICES = {
    "qkv": ("self_attn", ("q_proj", "k_proj", "v_proj")),
    "o": ("self_attn", ("o_proj",)),
    "gate_up": ("mlp", ("gate_proj", "up_proj")),
    "down": ("mlp", ("down_proj",)),
    "lm_head": (None, ("lm_head",)),
    "fc": (None, ("fc",)),
}


# EngineConfig.w12_matrices "auto" (the default is "all", every linear layer, as issue 7 asks):
# at the Qwen3-8B shape on the H200 (1k, paired over bf16, docs/LOG.md runs 120-121) these three
# in W12 gave AR 1.120-1.125x and speculative decoding 1.031-1.055x, against 1.118-1.126x and
# 0.993-0.996x with every matrix: at the 16 rows of a verify or draft forward the W12 kernel
# loses to bf16 on q|k|v, o and down (run 119), and the drafter's fc (K = 5 x 4096) in W12 costs
# its context write a decode. "all" keeps the least memory (11.4 against 12.2 GB there). At
# the Llama-3.1-8B shape, with its own tiles (run 124): AR 1.157x, speculative 1.067x, against
# 1.079x / 0.947x with every matrix; Qwen3-8B at 8k (run 125): 1.123x / 1.052x. Without the LM
# head where the engine certifies verify blocks' heads (EngineConfig.target_head "auto" on a
# shape with a 16-row certified tile): the bf16 head's int8 copy then reads fewer bytes than its
# W12 form. Run 255 (Qwen3-8B, 1k, paired over bf16, 6 rounds): AR 1.101x [1.083-1.119], spec
# 1.000x [0.985-1.013] without it, against 1.084x [1.073-1.098] / 0.966x [0.948-0.984] with it.
AUTO_MATRICES = frozenset({"gate_up", "down", "lm_head"})


def parse_matrices(text: str, head_certified: bool = False) -> frozenset[str]:
    """EngineConfig.w12_matrices: "auto" (AUTO_MATRICES, less the LM head where head_certified:
    the engine certifies verify blocks' heads), "all", or which MATRICES to convert,
    comma-separated (e.g. "gate_up,lm_head": the rest stay bf16)."""
    if text.strip() == "auto":
        return AUTO_MATRICES - {"lm_head"} if head_certified else AUTO_MATRICES
    if text.strip() == "all":
        return frozenset(MATRICES)
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = sorted(set(names) - set(MATRICES))
    if not names or unknown:
        raise ValueError(
            f"w12 matrices: 'auto', 'all' or a comma-separated list of {', '.join(MATRICES)}; "
            f"got {text!r}" + (f" (unknown: {', '.join(unknown)})" if unknown else "")
        )
    return frozenset(names)


def kernels_usable(device: torch.device) -> bool:
    """The W12 kernel runs on CUDA with Triton installed."""
    from specpilot import kernels

    return device.type == "cuda" and kernels.available()


class W12Linear(PackedLinear):
    """A bias-free nn.Linear whose weight is a W12Weight; `weight` is that W12Weight."""

    FORMAT = "W12"
    weight: W12Weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [..., in_features] bf16 -> [..., out_features]."""
        from specpilot.kernels.w12_linear import MAX_ROWS, w12_decode, w12_linear

        rows = x.reshape(-1, self.in_features)
        if self.use_kernel and rows.shape[0] <= MAX_ROWS:
            return w12_linear(rows.contiguous(), self.weight).view(*x.shape[:-1], -1)
        if self.use_kernel:  # more rows (a prompt, the drafter's context): decoded, then cuBLAS.
            # NOTE: w12.decode synchronises with the host 3 times and runs ~20 PyTorch ops: as
            # the drafter's context write inside the decode time it cost W12 speculative
            # decoding ~1.2 ms a step at 1k (docs/LOG.md runs 69-70)
            return F.linear(x, w12_decode(self.weight))
        return F.linear(x, w12.decode(self.weight))


@dataclass
class ConvertReport:
    """What `convert_model` did: tensors converted and their bytes before and after."""

    num_tensors: int
    bf16_bytes: int
    w12_bytes: int
    num_weights: int
    num_escapes: int

    @property
    def escape_rate(self) -> float:
        return self.num_escapes / max(1, self.num_weights)


@torch.no_grad()
def convert_model(
    model: nn.Module,
    group_size: int = w12.DEFAULT_GROUP_SIZE,
    use_kernel: bool | None = None,
    matrices: frozenset[str] = frozenset(MATRICES),
) -> ConvertReport:
    """Replace the linear layers of a TargetModel or DFlashDrafter by W12Linear, in place
    (encoding on the model's device): the decoder layers' projections, the target's lm_head
    unless it is tied to the embeddings (the embedding lookup reads bf16 rows), the drafter's
    `fc`; of those, the ones of `matrices` (MATRICES names; the others stay as they are).
    use_kernel None: the kernel wherever it can run (CUDA + Triton)."""
    unknown = sorted(set(matrices) - set(MATRICES))
    if unknown:
        raise ValueError(f"unknown W12 matrices {unknown}; known: {', '.join(MATRICES)}")
    report = ConvertReport(0, 0, 0, 0, 0)
    for parent, name in _linears(model, matrices):
        linear = getattr(parent, name)
        if isinstance(linear, W12Linear):
            continue
        if linear.bias is not None:
            raise ValueError(f"W12 conversion does not take linear biases ({name})")
        weight = linear.weight.detach()
        if weight.dtype != torch.bfloat16:
            raise ValueError(f"W12 holds bf16 weights; load the model in bf16, not {weight.dtype}")
        packed = w12.encode(weight, group_size)
        kernel = kernels_usable(weight.device) if use_kernel is None else use_kernel
        setattr(parent, name, W12Linear(packed, kernel))
        report.num_tensors += 1
        report.bf16_bytes += weight.numel() * 2
        report.w12_bytes += packed.nbytes()
        report.num_weights += weight.numel()
        report.num_escapes += packed.num_escapes
    return report


def converted_matrices(model: nn.Module) -> list[str]:
    """The MATRICES names whose linear layers in `model` (a TargetModel or DFlashDrafter) hold
    W12 weights, in MATRICES order (a tied lm_head never does)."""
    return [
        matrix
        for matrix in MATRICES
        if any(isinstance(getattr(parent, name), W12Linear)
               for parent, name in _linears(model, frozenset({matrix})))
    ]  # fmt: skip


def _linears(model: nn.Module, matrices: frozenset[str]) -> list[tuple[nn.Module, str]]:
    """(parent module, attribute) of every linear layer of `matrices` that `convert_model`
    converts."""
    from specpilot.models.dflash import DFlashDrafter
    from specpilot.models.target import TargetModel

    if isinstance(model, TargetModel):
        layers, extra = model.model.layers, []
        head = model.lm_head
        if isinstance(head, W12Linear) or head.weight is not model.model.embed_tokens.weight:
            extra = [(model, "lm_head")]
    elif isinstance(model, DFlashDrafter):
        layers, extra = model.layers, [(model, "fc")]
    else:
        raise TypeError(f"convert_model takes a TargetModel or DFlashDrafter, got {type(model)}")
    found = [
        (getattr(layer, part), name)
        for layer in layers
        for matrix, (part, names) in MATRICES.items()
        if part is not None and matrix in matrices
        for name in names
    ]
    return found + [(parent, name) for parent, name in extra if name in matrices]


def _decoded(layer: W12Linear) -> nn.Linear:
    """An nn.Linear holding a W12Linear's decoded bf16 weight."""
    lin = nn.Linear(layer.in_features, layer.out_features, bias=False, device=layer.weight.device)
    lin.weight = nn.Parameter(w12.decode(layer.weight), requires_grad=False)
    return lin


@torch.no_grad()
def dequantize_model(model: nn.Module) -> nn.Module:
    """Replace every W12Linear by an nn.Linear holding its decoded bf16 weight, in place."""
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, W12Linear):
                setattr(parent, name, _decoded(child))
    return model


@torch.no_grad()
def keep_matrices(model: nn.Module, matrices: frozenset[str]) -> None:
    """Decode, in place, the W12 layers of a TargetModel or DFlashDrafter (e.g. loaded from a
    W12 checkpoint) that are not among `matrices` (MATRICES names)."""
    for parent, name in _linears(model, frozenset(MATRICES) - matrices):
        child = getattr(parent, name)
        if isinstance(child, W12Linear):
            setattr(parent, name, _decoded(child))


def stack_rows(
    weights: list[torch.Tensor | W12Weight | Fp8Weight],
) -> torch.Tensor | W12Weight | Fp8Weight:
    """Weights of one K and one format (bf16, W12 or FP8) stacked by rows into a new one, as
    torch.cat(dim=0) stacks bf16 weights."""
    from specpilot.formats.fp8 import cat

    for kind, stack in ((Fp8Weight, cat), (W12Weight, w12.cat)):
        if all(isinstance(w, kind) for w in weights):
            return stack(weights)
        if any(isinstance(w, kind) for w in weights):
            raise ValueError(f"cannot stack {kind.__name__} and other weights")
    return torch.cat([w.detach() for w in weights], dim=0)


def concat_rows(*linears: nn.Module) -> torch.Tensor | W12Weight | Fp8Weight:
    """models/fused.py's `_concat_rows` for bf16, W12 or FP8 linears: one weight [sum of N, K]
    whose row slices become the linears' weights (no memory duplicated)."""
    fused = stack_rows([lin.weight for lin in linears])
    row = 0
    for lin in linears:
        n = lin.out_features
        if isinstance(fused, torch.Tensor):
            lin.weight.data = fused[row : row + n]
        else:
            lin.weight = fused[row : row + n]
        row += n
    return fused


# bench/engine_speed.kernel_profile: each multiply inside a profiler range named by its kind
# (one of PROFILE_KINDS) and shape ("w12 16x6144x4096"), so that a profile gives the device
# time of each shape
PROFILE_RANGES = False
# an FP8 multiply of more than 64 rows (a batched draft) runs as at most this many 64-row skinny
# multiplies, each reading the 1-byte weights (two of them read less than one widening to bf16,
# which writes and reads 2 bytes a weight more); more rows widen the weights for cuBLAS.
# Run 182 (docs/LOG.md): FP8 drafts of 8 sequences this way took 3.07 ms against 1.29 on the
# loaded bf16 drafter, of 32 sequences (widened) 12.27 against 3.18; so "auto" keeps FP8 to one
# block (engine/generator.FP8_DRAFT_MAX_ROWS) and this serves an explicit draft_weights "fp8".
FP8_WIDE_SLICES = 4
PROFILE_KINDS = ("w12", "bf16")


def linear(
    x: torch.Tensor,
    weight: torch.Tensor | W12Weight | Fp8Weight,
    *,
    norm_weight: torch.Tensor | None = None,
    eps: float = 1e-6,
    glu: bool = False,
    residual: torch.Tensor | None = None,
    swiglu: bool = False,
    **hand: Any,
) -> torch.Tensor:
    """skinny_linear for a bf16/fp16 weight or an Fp8Weight (a draft head), w12_linear for a
    W12Weight (same contract). Above
    the skinny kernels' rows (a wide step: many sequences' verify blocks), a bf16 weight goes
    to cuBLAS, after our norm / SwiGLU kernels for the prologue and before the SwiGLU one for
    the epilogue; the residual is then added to the rounded product (one more rounding than
    the fused epilogue: a summation-order difference like any other between kernels).
    `hand`: the skinny and W12 multiplies' norm hand-off (handoff, handed), <= MAX_ROWS rows,
    `rope` (kernels/rope.RopeEpilogue), which only a bf16 skinny multiply takes up (any
    other leaves its `q` None), and `norm_after` (kernels/elementwise.NormAfter), which only a
    W12 multiply that splits K fills."""
    hand = {k: v for k, v in hand.items() if v is not None}
    if not PROFILE_RANGES:
        return _linear(x, weight, norm_weight, eps, glu, residual, swiglu, hand)
    kind = PROFILE_KINDS[0] if isinstance(weight, W12Weight) else PROFILE_KINDS[1]
    n, k = weight.shape
    with torch.profiler.record_function(f"{kind} {x.shape[0]}x{n}x{k}"):
        return _linear(x, weight, norm_weight, eps, glu, residual, swiglu, hand)


def _linear(
    x: torch.Tensor,
    weight: torch.Tensor | W12Weight | Fp8Weight,
    norm_weight: torch.Tensor | None,
    eps: float,
    glu: bool,
    residual: torch.Tensor | None,
    swiglu: bool,
    hand: dict,
) -> torch.Tensor:
    kw = dict(norm_weight=norm_weight, eps=eps, glu=glu, residual=residual, swiglu=swiglu)
    from specpilot.kernels.linear import MAX_ROWS

    rope = hand.pop("rope", None)
    # (a K-split W12 multiply's split sum writes the next norm: the others leave it unready)
    norm_after = hand.pop("norm_after", None)
    if hand and x.shape[0] > MAX_ROWS:
        raise ValueError(f"the norm hand-off is the skinny multiplies' (<= {MAX_ROWS} rows)")
    if hand.get("x_order") == "pair":  # a norm wrote pair order for w12_tc (w12_tc.pair_input)
        from specpilot.kernels import w12_tc, w12_tokens

        if glu or norm_weight is not None or set(hand) - {"x_order", "y_order", "handed_norm"}:
            raise ValueError("a pair-order input takes no prologue or norm hand-off (w12_tc."
                             "VERIFY wants models/fused.NORM_HANDOFF_W12 off)")  # fmt: skip
        if w12_tokens.route(x, weight, swiglu, residual, hand):  # (the verify's o)
            return w12_tokens.w12_tokens_linear(x, weight, residual=residual, x_order="pair",
                                                norm_after=norm_after)  # fmt: skip
        return w12_tc.w12_tc_linear(x, weight, x_order="pair", swiglu=swiglu, residual=residual,
                                    y_order=hand.get("y_order") or "natural",
                                    norm_after=norm_after,
                                    handed_norm=hand.get("handed_norm"))  # fmt: skip
    if x.shape[0] == 1:  # the TMA-fed one-row kernels, where switched on (kernels/w12_row.py)
        from specpilot.kernels import w12_row

        y = w12_row.routed(x, weight, kw, hand if rope is None else dict(hand, rope=rope))
        if y is not None:
            return y

    if x.shape[0] > MAX_ROWS and isinstance(weight, Fp8Weight):  # a wide draft or the
        # drafter's prompt context: up to FP8_WIDE_SLICES skinny multiplies of 64 rows (each
        # reads the FP8 weight once: less than widening it), above that the weights widened
        # (fp8_linear_reference's values up to bf16 rounding) for cuBLAS. Run 178: ~100 slices
        # a 1k prompt's context, launched from Python, cost FP8 drafts 12%
        if x.shape[0] <= FP8_WIDE_SLICES * MAX_ROWS:
            parts = []
            for i in range(0, x.shape[0], MAX_ROWS):
                res = None if residual is None else residual[i : i + MAX_ROWS]
                parts.append(_linear(x[i : i + MAX_ROWS], weight, norm_weight, eps, glu, res,
                                     swiglu, {}))  # fmt: skip
            return torch.cat(parts)
        weight = weight.dequantize(x.dtype)
    if x.shape[0] > MAX_ROWS and not isinstance(weight, W12Weight):
        from specpilot.kernels.elementwise import rmsnorm, silu_mul
        from specpilot.kernels.linear import check_prologue_epilogue

        n, k = weight.shape
        check_prologue_epilogue(x.shape[0], n, k, norm_weight, glu, residual, swiglu)

        if norm_weight is not None:
            x = rmsnorm(x, norm_weight, eps)
        elif glu:
            x = silu_mul(x)
        y = F.linear(x, weight)
        if swiglu:
            return silu_mul(y)
        return y if residual is None else y + residual
    if isinstance(weight, W12Weight):
        from specpilot.kernels.w12_linear import w12_linear

        return w12_linear(x, weight, **kw, **hand, norm_after=norm_after)
    from specpilot.kernels.linear import skinny_linear

    return skinny_linear(x, weight, **kw, **hand, rope=rope)
