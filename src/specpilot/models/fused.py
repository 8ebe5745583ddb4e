"""Decode, verify and draft forwards through the Triton kernels (CUDA, bf16/fp16, <= 64 tokens).

The PyTorch modules in target.py and dflash.py define the models; these classes run the same
parameters with fewer, fused launches: per layer the input norm (its own kernel, in the q|k|v
multiply's prologue for narrow inputs: PROLOGUE_ROWS, or, up to NORM_HANDOFF_MAX_ROWS rows,
handed on by the multiply before: no kernel), one q|k|v multiply, one kernel for
q/k norm + rotary + cache write, split-K attention, the output projection with the residual add
in its epilogue, the post-attention norm, one gate|up multiply ending in silu(gate) * up
(SWIGLU_EPILOGUE_MIN_ROWS; else a SwiGLU kernel or the down multiply's prologue), and the down
projection with the residual add in its epilogue. q|k|v and gate|up weights are concatenated
once; the modules' own parameters become views of the concatenation, so no memory is
duplicated and the PyTorch path (prefill, first draft) keeps working on the same storage.
Weights converted to W12 (formats/w12_engine.py) go through the same code: `linear` sends
them to the W12 kernel.

Numerics: every element-wise step rounds where the modules round, but for the norm hand-off's
(x * w rounded, then the multiply's sums scaled by 1 / RMS, where the norm rounds x / RMS and
then its product by w); otherwise only the summation order of dot products and of attention
differs. Either can break exact near-ties differently in bf16 (the latitude of any change of
kernel; token forcing checks it).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.nn.attention import SDPBackend

from specpilot import kernels
from specpilot.formats.certified import KERNEL_DTYPES, CertifiedHead, certify
from specpilot.formats.fp8 import Fp8Weight
from specpilot.formats.w12 import W12Weight
from specpilot.formats.w12_engine import W12Linear, concat_rows, linear, stack_rows
from specpilot.kernels import launch, tokens, w12_row, w12_tc, w12_tokens, w12_ws
from specpilot.kernels import rope as rope_kernels
from specpilot.kernels import w12_linear as w12_kernels
from specpilot.kernels.attention import decode_attention, num_splits_for
from specpilot.kernels.elementwise import NormAfter, prefetch_l2, rmsnorm, silu_mul
from specpilot.kernels.linear import MAX_ROWS, Handoff, certified_argmax
from specpilot.kernels.rope import RopeEpilogue, kv_rope_write_layers, qk_rope_write
from specpilot.layers import attention as attention_layer
from specpilot.layers.attention import KVCache
from specpilot.layers.block import DecoderBlock
from specpilot.layers.rotary import RotaryTable
from specpilot.models.dflash import DFlashDrafter
from specpilot.models.target import TargetModel, TargetOutput


def unsupported_reason(model: nn.Module, dtype: torch.dtype, device: torch.device) -> str | None:
    """Why the fused path cannot run this model, or None when it can (importing this module
    already needs Triton; `kernels.available()` says whether it can launch here)."""
    if device.type != "cuda" and not kernels.interpreted():
        return f"device {device} (the kernels run on CUDA, or in Triton's interpreter for tests)"
    if dtype not in (torch.bfloat16, torch.float16):
        return f"dtype {dtype} (the kernels take bf16/fp16)"
    cfg = model.config
    if cfg.head_dim & (cfg.head_dim - 1) or cfg.head_dim < 16:
        return f"head_dim {cfg.head_dim} (the kernels take powers of two >= 16)"
    if any(name.endswith("bias") for name, _ in model.named_parameters()):
        return "linear biases"
    if dtype != torch.bfloat16 and any(isinstance(m, W12Linear) for m in model.modules()):
        return f"W12 weights with dtype {dtype} (W12 holds bf16)"
    if isinstance(model, DFlashDrafter):
        layers = range(cfg.num_layers)
        if any(cfg.layer_window(i) is not None or cfg.layer_is_causal(i) for i in layers):
            return "sliding-window or causal drafter layers"
    return None


# A wide step (several sequences' verify or draft blocks, more rows than the skinny kernels
# take) runs the same launches with its multiplies on cuBLAS (formats/w12_engine.linear): the
# attention kernel reads each row's own length, where the PyTorch path's masked SDPA reads the
# whole cache for every row with the K/V heads expanded. Up to this many rows, and tokens a row
# (the attention kernel's query tile is group x width).
MAX_WIDE_ROWS = 1024
MAX_WIDE_WIDTH = 16


def fits(batch: int, width: int, has_w12: bool) -> bool:
    """Whether a forward of `batch` rows x `width` tokens runs fused (W12 multiplies stop at
    the skinny limit)."""
    rows = batch * width
    if rows <= MAX_ROWS:
        return True
    return not has_w12 and width <= MAX_WIDE_WIDTH and rows <= MAX_WIDE_ROWS


# NOTE: up to this many rows, and for inputs at most PROLOGUE_MAX_K wide, a multiply computes the
# RMSNorm ("norm") or SwiGLU ("glu") of its input itself, in every program's prologue (cheaper
# than a launch); otherwise the norm / SwiGLU kernel writes the input first. Measured on the
# H200 (docs/LOG.md run 27): at the Qwen3-8B shape (K = 4096 / 12288) a decode forward took
# 4,481 us of kernels without any prologue against 4,719 with them (every one of ~2,048
# programs re-reads and re-reduces the whole row); at the SmolLM2 shape (K = 576 / 1536, a
# launch-bound forward) 2- and 4-row forwards with the prologue inside the tensor-core tile
# took 1.81 ms against 1.08 for 8 rows without it. So: one row, narrow inputs only.
# bench/decode_profile.py's arms patch these.
PROLOGUE_ROWS = {"norm": 1, "glu": 1}
PROLOGUE_MAX_K = 2048
# W12 multiplies take 2 weight rows a program (8 for bf16), so 4x the programs redo the prologue,
# in a kernel that is short of instructions already: with the prologue a W12 decode forward took
# 5,333 us of kernels, without it 4,160 (run 27).
W12_PROLOGUE_ROWS = {"norm": 0, "glu": 0}
# NOTE: a prompt's causal attention needs no mask, so FlashAttention can take it (no per-shape
# plan, like memory-efficient attention: layers/attention.CUDA_SDPA_BACKENDS)
PREFILL_SDPA_BACKENDS = [
    SDPBackend.FLASH_ATTENTION,
    SDPBackend.EFFICIENT_ATTENTION,
    SDPBackend.MATH,
]


# From this many token rows on, the gate|up multiply ends in silu(gate) * up (the kernels'
# swiglu epilogue: the bits of the SwiGLU kernel after it, one launch fewer a layer) instead of
# the SwiGLU kernel or the down multiply's GLU prologue; 0: never. On the H200 at the Qwen3-8B
# shape under pdl "small" (docs/LOG.md runs 96-97) it shortened the 16-row forward ~1% but
# lengthened the one-row one 4.37 -> 4.52 ms (a one-row multiply right after a multiply is
# slower when PDL launches it, run 102). Under pdl "kernels" (multiplies launched plainly; the
# 8B default) the one-row forward stays level: three processes each (runs 104-105), 16-row
# forward 4.65-4.77 against 4.70-4.80 ms, pipelined spec@6.55 1,116-1,133 against 1,100-1,113,
# one-row 4.31-4.36 against 4.29-4.34 ms; at the SmolLM2-135M shape (pdl "all") the draft
# 0.189 -> 0.162 ms and pipelined spec 6,251 -> 6,583 tok/s (run 105). W12 takes it too (AR
# 1.132x bf16, spec 1.012x in run 105). bench/engine_speed.py --swiglu-epilogue N measures it.
SWIGLU_EPILOGUE_MIN_ROWS = 1
# The norm hand-off (kernels/linear.Handoff): up to this many token rows, a multiply ending in
# the residual add (o, down) also writes the next RMSNorm's input times its weight and its
# tiles' sums of squares, and the multiply after it (gate|up, the next layer's q|k|v, the LM
# head) takes those, scaling its sums by 1 / RMS in its epilogue: no norm kernel between them
# (72 of the 73 in a 36-layer target forward), where both weights are bf16 (else
# NORM_HANDOFF_W12). Unlike the norm prologues of runs 98-99, nothing is added to the multiply's
# loop. 0: never. On the H200 at the Qwen3-8B shape, 1k (docs/LOG.md runs 156-157): with the
# multiplies it puts behind an element-wise multiply launched early and spread (EVEN_SHARED) the
# one-row forward took +10%; launched plainly (launch.pdl's rule for handed multiplies since),
# back to back one row 4.180 -> 4.146 ms, 16 rows 4.424 -> 4.382; paired, pipelined, 6 rounds:
# AR 1.005x [1.005-1.006], spec@6.55 1.013x [1.005-1.020] (1: 1.006x / 1.002x).
# bench/engine_speed.py --switch models.fused.NORM_HANDOFF_MAX_ROWS=N.
NORM_HANDOFF_MAX_ROWS = 16
# ... with W12 multiplies on either side too (the W12 kernel's hand-off; a K-split tile, like
# the 16-row W12 down's, hands nothing on: its norm kernel stays). Off: run 161 (W12 "auto",
# back to back) level, one row 3.744 -> 3.738 ms, 16 rows 4.317 -> 4.311 (the decode's gaps
# 149 -> 186 us: its handed multiplies behind element-wise tiles launch plainly).
NORM_HANDOFF_W12 = False
# where a one-row forward hands its norms on (the others: every site), a sum of HAND_O (the
# output projection to gate|up) and HAND_DOWN (the down multiply to the next q|k|v or the LM
# head); 0: none, as NORM_HANDOFF_MAX_ROWS 0 for one row. Each site puts a multiply right
# behind a multiply, which a one-row forward launches plainly (launch.pdl's `handed`), so the
# two sites may differ in what they give. Both: run 163 (kernel timeline, one process, back to
# back) the one-row forward 4.144 ms with both, 4.160 with HAND_O alone, 4.173 with HAND_DOWN
# alone. bench/engine_speed.py --switch models.fused.NORM_HANDOFF_ONE_ROW_SITES=N.
HAND_O, HAND_DOWN = 1, 2
NORM_HANDOFF_ONE_ROW_SITES = HAND_O | HAND_DOWN
# Where a W12 multiply ending in the residual add (o, down) splits K, its split sum also writes
# the RMSNorm after it for the next multiply (gate|up, the next layer's q|k|v), in the order
# that one reads (kernels/elementwise.split_sum_norm: the bits of the split sum and rmsnorm
# launches it replaces, one launch for the two). A 16-row W12 verify forward has ~72 such
# pairs (run 306's timeline: 108 split sums, 73 norms). Off: it loses. Run 315 (H100, verify
# graph back to back): 5.274 ms against 5.238 / 5.238; its 71 launches took 3.60 us each (one
# program a row reads the partial sums serially) against the 1.81 + 1.16 us of the two it
# replaced, and their gaps fell only 31 us. bench/engine_speed.py --switch
# models.fused.SPLIT_SUM_NORM=1.
SPLIT_SUM_NORM = False
# ... or hands that norm on (kernels/elementwise.NormAfter.handed) where the next multiply runs
# on kernels/w12_tc (pair order): the split sum writes u = its sum times the norm weight and
# its programs' sums of squares, and w12_tc scales its sums by the tokens' 1 / RMS (as the bf16
# norm hand-off, NORM_HANDOFF_MAX_ROWS): no norm kernel between o and gate|up or between the
# down and the next q|k|v, and the split sum keeps its many programs (run 315's SPLIT_SUM_NORM
# lost on its one program a row). Run 322 (H100, the W12 verify graph): the norms took 3.5-4.5
# us each from the split sum's exit, ~72 a forward. On since run 325 (H100, the W12 verify
# graph back to back): 4.824 ms against 4.927 / 4.925; exit to exit over the forward the norms
# 313 -> 3.5 us, the split sums 120 -> 369 (each now 5 us: it squares and scales too), gate|up
# 2,051 -> 2,017; the one-row decode level (4.390 against 4.384; it takes no split sum). Run
# 326: Qwen3-8B 4.839 / 4.840 against 4.954 off, Llama-3.1-8B 4.767 / 4.771 against 4.837; end
# to end (forcing passed), paired spec rounds over their before_325 rounds: Qwen3 (run 325)
# 1,111 against 1,098 tok/s medians, Llama (run 326) +2.6% and +1.4%.
# bench/engine_speed.py --switch models.fused.SPLIT_SUM_HAND=0.
SPLIT_SUM_HAND = True
# How a fused draft computes its new context's keys and values: 0, in each layer, a k|v multiply
# of the context and its write into the cache (5 small multiplies of ~8 MB in FP8 at the
# Qwen3-8B shape, each ~8 us against ~2 at the bandwidth, run 180); 1, one multiply by every
# layer's k|v weights stacked (FusedDrafter.context_kv: a copy, the layers' count times k|v's
# bytes), then each layer's write; 2, that multiply, then one write of every layer
# (kernels/rope.kv_rope_write_layers). The context depends on the target only, so nothing
# between the layers changes it. Run 181 (docs/LOG.md; FP8 drafter, 1k): in the draft graph the
# five k|v multiplies of 6.5 us became one of 15.7 and the rope's 10 launches 6; the draft
# 0.658 -> 0.638 (1) -> 0.633 ms (2) back to back; paired, pipelined, 8 rounds, spec@6.55
# 1.000x / 0.996x (level: the step's -0.5% is within the pairs' noise).
# bench/engine_speed.py --switch models.fused.DRAFT_CONTEXT_ONCE=N.
DRAFT_CONTEXT_ONCE = 2
SWITCH_RULES = {"DRAFT_CONTEXT_ONCE": (lambda n: n in (0, 1, 2), "0, 1 or 2")}


def prologue_rows(
    weight: torch.Tensor | W12Weight | Fp8Weight, kind: str, row_kernels: bool = True
) -> int:
    """The most rows whose multiply by `weight` computes the `kind` prologue itself;
    row_kernels: a multiply (`linear`) the TMA-fed one-row kernels may take, which take the norm
    (kernels/w12_row.ONE_ROW, BF16_ONE_ROW)."""
    row = 0
    if row_kernels and not isinstance(weight, Fp8Weight):
        row = w12_row.prologue_rows(weight, kind)
    if isinstance(weight, W12Weight):
        return max(W12_PROLOGUE_ROWS[kind], row)
    return max(PROLOGUE_ROWS[kind] if weight.shape[1] <= PROLOGUE_MAX_K else 0, row)


def planes(weight: torch.Tensor | W12Weight | Fp8Weight) -> tuple[torch.Tensor, ...]:
    """The tensors a multiply by `weight` streams: the weight, or a W12 weight's two planes."""
    if isinstance(weight, W12Weight):
        return weight.low, weight.codes
    return (weight.weight,) if isinstance(weight, Fp8Weight) else (weight,)


def ahead(where: str, weight: torch.Tensor | W12Weight | Fp8Weight) -> tuple[torch.Tensor, ...]:
    """The bytes of `weight` (its planes if W12) for a kernel before its multiply to ask L2
    for (EngineConfig.l2_ahead; kernels/launch.l2_ahead), or none."""
    return launch.l2_ahead(where, *planes(weight))


class _SideStream:
    """A forward's L2 requests on a side stream (launch.SIDE_AHEAD_BYTES): each `ask` forks
    from the forward's stream at that point (the kernel launched before it, e.g. a layer's
    q|k|v multiply, ends first) and launches a prefetch kernel there; `join` makes the forward's
    stream wait for them once, at its end, so that no kernel between waits on them. Captured
    into a CUDA graph as a branch of the forward."""

    streams: dict[torch.device, torch.cuda.Stream] = {}

    def __init__(self) -> None:
        self.stream: torch.cuda.Stream | None = None

    def ask(self, regions: tuple[torch.Tensor, ...]) -> None:
        if not regions:
            return
        device = regions[0].device
        if self.stream is None:
            if device not in self.streams:
                self.streams[device] = torch.cuda.Stream(device)
            self.stream = self.streams[device]
        self.stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(self.stream):
            prefetch_l2(regions)

    def join(self) -> None:
        if self.stream is not None:
            torch.cuda.current_stream(self.stream.device).wait_stream(self.stream)


def handoff_for(
    rows: int, producer: torch.Tensor | W12Weight, after: tuple | None, site: int
) -> Handoff | None:
    """A Handoff for the multiply by `producer` (ending in the residual add; `site` HAND_O or
    HAND_DOWN) to fill for the one after it, `after` = (norm weight, eps, next weight), or None
    (NORM_HANDOFF_MAX_ROWS, NORM_HANDOFF_ONE_ROW_SITES)."""
    if after is None or rows > min(NORM_HANDOFF_MAX_ROWS, MAX_ROWS):
        return None
    if rows == 1 and (
        not NORM_HANDOFF_ONE_ROW_SITES & site or w12_row.bf16_takes_the_norm(producer)
    ):
        return None  # (BF16_ONE_ROW: its kernel norms in the multiply's prologue instead)
    norm, eps, consumer = after
    w12 = isinstance(producer, W12Weight) or isinstance(consumer, W12Weight)
    return Handoff(norm, eps) if NORM_HANDOFF_W12 or not w12 else None


def normed_linear(
    x: torch.Tensor,
    weight: torch.Tensor | W12Weight | Fp8Weight,
    norm: torch.Tensor,
    eps: float,
    residual: torch.Tensor | None = None,
    swiglu: bool = False,
    handed: Handoff | None = None,
    rope: RopeEpilogue | None = None,
    y_order: str | None = None,
) -> torch.Tensor:
    """(RMSNorm(x) * norm) @ weight^T [+ residual], or with swiglu silu(gate) * up of it; from a
    filled `handed` (the multiply before handed the norm on) without a norm kernel; `rope`: a
    q|k|v multiply's rope work in its epilogue where it can (kernels/rope.RopeEpilogue);
    y_order: a W12 multiply's (w12_linear)."""
    a, normed = normed_input(x, weight, norm, eps, handed)
    return linear(a, weight, residual=residual, swiglu=swiglu, rope=rope, y_order=y_order,
                  **normed)  # fmt: skip


def normed_input(
    x: torch.Tensor,
    weight: torch.Tensor | W12Weight | Fp8Weight,
    norm: torch.Tensor,
    eps: float,
    handed: Handoff | NormAfter | None = None,
    row_kernels: bool = True,
) -> tuple[torch.Tensor, dict]:
    """How a multiply by `weight` takes RMSNorm(x) * norm -> (its input, its norm keywords):
    a filled `handed`'s u (the multiply before handed the norm on, or its split sum wrote it:
    a NormAfter), x with the norm for the multiply's prologue (up to prologue_rows), or x normed
    by an rmsnorm launch first (which asks L2 for the head of `weight`, EngineConfig.l2_ahead;
    in the order of `norm_order`). row_kernels: as prologue_rows's (False: a multiply not
    through `linear`)."""
    if isinstance(handed, NormAfter):
        if handed.ready:
            return handed.u, handed.keywords()
        handed = None
    if handed is not None and handed.ready:
        return handed.u, dict(handed=handed)
    order = norm_order(x, weight, row_kernels)
    if order is None:
        return x, dict(norm_weight=norm, eps=eps)
    u = rmsnorm(x, norm, eps, ahead("head", weight), join=order == "join", pair=order == "pair")
    return u, dict(x_order=order) if order else {}


def norm_order(
    x: torch.Tensor, weight: torch.Tensor | W12Weight | Fp8Weight, row_kernels: bool = True
) -> str | None:
    """The order normed_input's rmsnorm writes RMSNorm(x) in for a multiply by `weight`: None
    where the multiply norms in its own prologue (up to prologue_rows), "pair" for
    kernels/w12_tc (pair_input), "join" for a W12 tile that reads it so (w12_linear.join_input),
    else "" (natural)."""
    if x.shape[0] <= prologue_rows(weight, "norm", row_kernels):
        return None
    if row_kernels and w12_tc.pair_input(weight, x):
        return "pair"
    return "join" if w12_kernels.join_input(weight, x.shape[0]) else ""


def norm_after_for(
    x: torch.Tensor, after: tuple | None, hand: Handoff | None, pair: Callable | None = None
) -> NormAfter | None:
    """The NormAfter that a multiply ending in the residual add (its output rows as x's)
    carries for the multiply `after` = (norm weight, eps, weight) describes (SPLIT_SUM_NORM, and
    no hand-off `hand` of that norm), in normed_input's order for it (pair: in pair order, for
    that pair_kernel), handed on where SPLIT_SUM_HAND and w12_tc takes it; None where that
    multiply norms in its prologue."""
    if not (SPLIT_SUM_NORM or SPLIT_SUM_HAND) or after is None or hand is not None:
        return None
    norm, eps, consumer = after
    order = "pair" if pair is not None else norm_order(x, consumer)
    if order is None:
        return None
    # (norm_order's "pair" is w12_tc's input; a pair_kernel may be w12_ws, which takes none)
    tc = pair is w12_tc.w12_tc_linear if pair is not None else order == "pair"
    handed = SPLIT_SUM_HAND and tc
    if not handed and not SPLIT_SUM_NORM:
        return None
    return NormAfter(norm, eps, ahead("head", consumer), order, handed=handed)


def glu_linear(
    gate_up: torch.Tensor,
    weight: torch.Tensor | W12Weight,
    residual: torch.Tensor,
    handoff: Handoff | None = None,
    norm_after: NormAfter | None = None,
) -> torch.Tensor:
    """(silu(gate) * up) @ weight^T + residual (filling `handoff` or `norm_after` where it
    can)."""
    hand = dict(handoff=handoff, norm_after=norm_after)
    if gate_up.shape[0] <= prologue_rows(weight, "glu"):
        return linear(gate_up, weight, glu=True, residual=residual, **hand)
    act = silu_mul(gate_up, ahead("head", weight))
    return linear(act, weight, residual=residual, **hand)


class _FusedBlock:
    """The concatenated weights of one DecoderBlock and the launches of its layer forward."""

    def __init__(self, block: DecoderBlock) -> None:
        attn = block.self_attn
        self.heads, self.kv_heads, self.head_dim = attn.heads, attn.kv_heads, attn.head_dim
        self.scale = attn.scale
        self.qkv = concat_rows(attn.q_proj, attn.k_proj, attn.v_proj)
        self.kv = self.qkv[attn.heads * attn.head_dim :]  # k|v rows (drafter context)
        self.o = attn.o_proj.weight
        self.gate_up = concat_rows(block.mlp.gate_proj, block.mlp.up_proj)
        self.down = block.mlp.down_proj.weight
        self.in_norm = block.input_layernorm.weight
        self.post_norm = block.post_attention_layernorm.weight
        self.eps = block.input_layernorm.eps
        self.q_norm = attn.q_norm.weight if attn.q_norm is not None else None
        self.k_norm = attn.k_norm.weight if attn.k_norm is not None else None

    def write_kv(
        self,
        qkv: torch.Tensor,
        heads: int,
        positions: torch.Tensor,
        table: RotaryTable,
        cache: KVCache,
        index: int,
    ) -> torch.Tensor:
        return qk_rope_write(
            qkv,
            positions,
            table.cos,
            table.sin,
            cache.k[index],
            cache.v[index],
            heads,
            self.q_norm,
            self.k_norm,
            self.eps,
        )

    def rope_epilogue(
        self, positions: torch.Tensor, table: RotaryTable, cache: KVCache, index: int
    ) -> RopeEpilogue | None:
        """What the q|k|v multiply needs to do write_kv's work in its epilogue
        (up to kernels/rope.EPILOGUE token rows), or None."""
        if positions.numel() > rope_kernels.EPILOGUE:
            return None
        return RopeEpilogue(positions, table.cos, table.sin, cache.k[index], cache.v[index],
                            self.heads, self.q_norm, self.k_norm, self.eps)  # fmt: skip

    def attend(
        self,
        qkv: torch.Tensor,
        positions: torch.Tensor,
        table: RotaryTable,
        cache: KVCache,
        index: int,
        num_splits: int,
        causal: bool = True,
        rope: RopeEpilogue | None = None,
    ) -> torch.Tensor:
        """q/k norm, rotary, the cache write and split-K attention over the cache for the
        q|k|v projection's output -> [M, heads * D]; the first three done already where the
        multiply took `rope` up (its `q` filled)."""
        q = rope.q if rope is not None else None
        if q is None:
            q = self.write_kv(qkv, self.heads, positions, table, cache, index)
        return decode_attention(
            q, cache.k[index], cache.v[index], positions, num_splits, causal=causal,
            ahead=ahead("o", self.o), pair=w12_tc.pair_input(self.o, qkv),
            w12_o=isinstance(self.o, W12Weight),
        )  # fmt: skip

    def finish(
        self,
        x: torch.Tensor,
        attn_out: torch.Tensor,
        after: tuple | None = None,
        norm_next: bool = False,
    ) -> tuple[torch.Tensor, Handoff | NormAfter | None]:
        """Output projection, residual, MLP, residual: [M, hidden] -> [M, hidden], and the
        next norm handed on (filled, or None) to the multiply `after` = (norm weight, eps,
        weight) describes (NORM_HANDOFF_MAX_ROWS), or, norm_next (`after` is the next layer's
        q|k|v), written by the down's split sum (SPLIT_SUM_NORM)."""
        rows = x.shape[0]
        mlp_in = (self.post_norm, self.eps, self.gate_up)
        hand = handoff_for(rows, self.o, mlp_in, HAND_O)
        pair_mlp = pair_kernel(self.gate_up, self.down, x)
        post = norm_after_for(x, mlp_in, hand, pair=pair_mlp)
        # (attend wrote attn_out in pair order where o runs on w12_tc)
        o_order = "pair" if w12_tc.pair_input(self.o, attn_out) else None
        x = linear(attn_out, self.o, residual=x, handoff=hand, x_order=o_order, norm_after=post)
        nxt = handoff_for(rows, self.down, after, HAND_DOWN)
        nxt_norm = norm_after_for(x, after if norm_next else None, nxt)
        if pair_mlp is not None:
            # the norm in pair order, gate|up with SwiGLU writing it, the down reading it
            # (post's order is "pair" here: its keywords give x_order, and handed_norm if handed)
            if post is not None and post.ready:
                xp, kw = post.u, post.keywords()
            else:
                xp = rmsnorm(x, self.post_norm, self.eps, ahead("head", self.gate_up), pair=True)
                kw = dict(x_order="pair")
            act = pair_mlp(xp, self.gate_up, swiglu=True, y_order="pair", **kw)
            down = pair_mlp
            if w12_tokens.down_route(act, self.down, x):  # (w12_tokens.STREAM)
                down = w12_tokens.w12_tokens_linear
            x = down(act, self.down, x_order="pair", residual=x, norm_after=nxt_norm)
        elif 0 < SWIGLU_EPILOGUE_MIN_ROWS <= rows:
            # W12 gate|up and down where the down's tile reads join_order (w12_linear)
            order = "join" if w12_kernels.join_between(self.gate_up, self.down, rows) else None
            act = normed_linear(x, self.gate_up, self.post_norm, self.eps, swiglu=True,
                                handed=post or hand, y_order=order)  # fmt: skip
            x = linear(act, self.down, residual=x, handoff=nxt, x_order=order,
                       norm_after=nxt_norm)  # fmt: skip
        else:
            gate_up = normed_linear(x, self.gate_up, self.post_norm, self.eps, handed=post or hand)
            x = glu_linear(gate_up, self.down, residual=x, handoff=nxt, norm_after=nxt_norm)
        for handed in (nxt, nxt_norm):
            if handed is not None and handed.ready:
                return x, handed
        return x, None


def pair_kernel(gate_up, down, x: torch.Tensor):
    """The Gluon multiply that takes a forward's W12 gate|up and down in pair order where its
    switch is on (kernels/w12_tc.VERIFY first, then w12_ws.VERIFY), else None."""
    if w12_tc.verify_route(gate_up, down, x):
        return w12_tc.w12_tc_linear
    if w12_ws.verify_route(gate_up, down, x):
        return w12_ws.w12_ws_linear
    return None


def norm_after(blocks: list[_FusedBlock], i: int, end: tuple | None) -> tuple | None:
    """What block i's down multiply hands its norm on to (`_FusedBlock.finish`'s `after`): the
    next block's input norm and q|k|v multiply, (norm weight, eps, weight); after the last
    block, `end`."""
    if i + 1 < len(blocks):
        nxt = blocks[i + 1]
        return nxt.in_norm, nxt.eps, nxt.qkv
    return end


class FusedTarget:
    """TargetModel decode/verify forward over at most 64 tokens per step, or a wide step (see
    `fits`)."""

    def __init__(self, model: TargetModel) -> None:
        self.model = model
        self.has_w12 = any(isinstance(m, W12Linear) for m in model.modules())
        self.blocks = [_FusedBlock(layer) for layer in model.model.layers]
        # EngineConfig.target_head: the LM head's int8 copy (certify_head), used in forwards of
        # at most certified_rows rows
        self.certified: CertifiedHead | None = None
        self.certified_rows = 0

    def certify_head(self, rows: int = MAX_ROWS) -> bool:
        """Decode and verify forwards of at most `rows` rows (1 to MAX_ROWS) find their tokens
        through a certified head (formats/certified.py) from now on; False (and nothing
        changes) for a head that is not a plain bf16/fp16 tensor (W12)."""
        if not 1 <= rows <= MAX_ROWS:
            raise ValueError(f"a certified head serves 1 to {MAX_ROWS} rows, got {rows}")
        head = self.model.lm_head.weight
        if not isinstance(head, torch.Tensor) or head.dtype not in KERNEL_DTYPES:
            return False
        self.certified = certify(head.detach())
        self.certified_rows = rows
        return True

    def fits(self, batch: int, width: int) -> bool:
        return fits(batch, width, self.has_w12)

    @staticmethod
    def greedy(logits: torch.Tensor) -> torch.Tensor:
        """Each row's argmax of logits this forward returned (module `greedy`)."""
        return greedy(logits)

    @staticmethod
    def packs() -> bool:
        """Whether `greedy_accept` runs (tokens.ON): else the caller accepts and packs."""
        return tokens.ON

    @staticmethod
    def next_meta(
        packed: torch.Tensor, meta: torch.Tensor, limits: torch.Tensor
    ) -> torch.Tensor | None:
        """The pipelined loop's next step inputs by tokens.next_meta (tokens.ON and NEXT_META);
        None when switched off (the caller's spec/accept.next_step_meta then)."""
        if tokens.ON and tokens.NEXT_META:
            return tokens.next_meta(packed, meta, limits)
        return None

    @staticmethod
    def next_decode(
        tokens_: torch.Tensor, ids: torch.Tensor, positions: torch.Tensor, limits: torch.Tensor
    ) -> bool:
        """The pipelined AR loop's next step inputs in place by tokens.next_decode (tokens.ON
        and NEXT_META); False, nothing done, when switched off (the caller's
        spec/accept.next_decode_inputs then)."""
        if tokens.ON and tokens.NEXT_META:
            tokens.next_decode(tokens_, ids, positions, limits)
            return True
        return False

    @staticmethod
    def replay(*args: torch.Tensor | int) -> torch.Tensor | None:
        """The pipelined loop's replayed drafts (benchmarks) by tokens.replay_drafts, from its
        arguments (tokens.ON and REPLAY); None when switched off (the caller's
        spec/replay.replay_drafts then)."""
        if tokens.ON and tokens.REPLAY:
            return tokens.replay_drafts(*args)
        return None

    @staticmethod
    def greedy_accept(logits: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """A verify block's (tokens [B, K], packed [B, 2K + 1]): tokens.argmax_accept."""
        return tokens.argmax_accept(logits, ids)

    def _layers(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        cache: KVCache,
        table: RotaryTable,
        capture: tuple[int, ...],
        attend: Callable[[int, _FusedBlock, torch.Tensor, RopeEpilogue | None], torch.Tensor],
        hand_head: bool = True,
        rope_for: Callable[[int, _FusedBlock], RopeEpilogue | None] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, Handoff | None]:
        """Embedding and decoder layers, attention by attend(layer, block, q|k|v projection,
        its RopeEpilogue from rope_for(layer, block) or None) -> [B*T, heads * D] -> the last
        layer's output [B*T, hidden] (before the final norm), the captured layers [B, T, *]
        (None without capture; the last one after the norm) and the final norm handed on to
        the LM head of every row (hand_head; else None)."""
        batch, t = input_ids.shape
        model = self.model.model
        x = embed(input_ids, model.embed_tokens.weight)
        last = len(self.blocks) - 1
        captured: dict[int, torch.Tensor] = {}
        head = (model.norm.weight, model.norm.eps, self.model.lm_head.weight)
        handed = None
        side = _SideStream()
        for i, blk in enumerate(self.blocks):
            rope = rope_for(i, blk) if rope_for is not None else None
            qkv = normed_linear(x, blk.qkv, blk.in_norm, blk.eps, handed=handed, rope=rope)
            side.ask(launch.side_ahead(*planes(blk.o)))  # o's weights, while attention waits
            after = norm_after(self.blocks, i, head if hand_head else None)
            x, handed = blk.finish(x, attend(i, blk, qkv, rope), after, norm_next=i < last)
            if i in capture and i != last:
                captured[i] = x
        side.join()
        if last in capture:  # the last layer is captured after the final norm
            captured[last] = model.norm(x)
        hidden = None
        if capture:
            hidden = torch.cat([captured[i] for i in capture], dim=-1).view(batch, t, -1)
        return x, hidden, handed

    def _logits(self, x: torch.Tensor, handed: Handoff | None = None) -> torch.Tensor:
        norm = self.model.model.norm
        return normed_linear(x, self.model.lm_head.weight, norm.weight, norm.eps, handed=handed)

    def __call__(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        cache: KVCache,
        table: RotaryTable,
        capture: tuple[int, ...] = (),
    ) -> TargetOutput:
        """input_ids, positions [B, T] (consecutive per row) -> logits for every row."""
        num_splits = attention_splits(cache)
        batch, t = input_ids.shape
        if not self.fits(batch, t):
            raise ValueError(f"fused forward cannot take {batch} rows x {t} tokens")

        def attend(
            i: int, blk: _FusedBlock, qkv: torch.Tensor, rope: RopeEpilogue | None
        ) -> torch.Tensor:
            return blk.attend(qkv, positions, table, cache, i, num_splits, rope=rope)

        def rope_for(i: int, blk: _FusedBlock) -> RopeEpilogue | None:
            return blk.rope_epilogue(positions, table, cache, i)

        with launch.forward_rows(batch * t):
            x, hidden, handed = self._layers(
                input_ids, positions, cache, table, capture, attend, rope_for=rope_for
            )
            if self.certified is not None and batch * t <= self.certified_rows:
                found, packed = self._certified_tokens(x, handed, input_ids if t > 1 else None)
                return TargetOutput(None, hidden, found.view(batch, t), packed)
            logits = self._logits(x, handed).view(batch, t, -1)
        return TargetOutput(logits=logits, hidden=hidden)

    def _certified_tokens(
        self, x: torch.Tensor, handed: Handoff | None, ids: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The certified head's tokens [B * T] (and with verify blocks' ids their packed rows)
        for the last layer's output x, normed as every normed multiply is (`normed_input`).
        NOTE: a W12 down hands no norm on; with the norm in every program's prologue at K 4096
        (not normed_input's rule) the W12 engine's certified head made decode 4.232 ms against
        3.762 with a W12 head (run 253)."""
        norm = self.model.model.norm
        # (not a `linear`: no one-row kernel of kernels/w12_row takes it, nor its norm)
        a, normed = normed_input(x, self.certified.weight, norm.weight, norm.eps, handed,
                                 row_kernels=False)  # fmt: skip
        return certified_argmax(a, self.certified, ids=ids, **normed)

    def prefill_fits(self, batch: int, width: int) -> bool:
        """Whether `prefill` takes a prompt batch (W12 multiplies stop at the skinny limit)."""
        return not self.has_w12 or batch * width <= MAX_ROWS

    def prefill(
        self,
        input_ids: torch.Tensor,
        cache: KVCache,
        table: RotaryTable,
        capture: tuple[int, ...] = (),
        logit_rows: torch.Tensor | None = None,
    ) -> TargetOutput:
        """Prompts from position 0, right-padded into [B, T] (EngineConfig.prefill = "fused"):
        the launches of `__call__` (cuBLAS multiplies past the skinny rows), with attention by
        causal SDPA over the prompts' own keys, just written to `cache` (contiguous rows)
        instead of the split-K decode kernel, whose query tile takes at most 16 tokens. A
        padding position only sees keys at or before it, so no real token sees padding.
        logit_rows [B]: the one row per prompt whose logits are computed (None: all)."""
        batch, t = input_ids.shape
        if not self.prefill_fits(batch, t):
            raise ValueError(f"fused prefill cannot take {batch} x {t} tokens of W12 weights")
        positions = torch.arange(t, device=input_ids.device)[None, :].expand(batch, t)
        backends = PREFILL_SDPA_BACKENDS if input_ids.is_cuda else None

        def attend(
            i: int, blk: _FusedBlock, qkv: torch.Tensor, rope: RopeEpilogue | None
        ) -> torch.Tensor:
            q = blk.write_kv(qkv, blk.heads, positions, table, cache, i)
            q = q.view(batch, t, blk.heads, blk.head_dim).transpose(1, 2)
            keys, values = cache.k[i][:, :, :t], cache.v[i][:, :, :t]
            out = attention_layer.sdpa(q, keys, values, None, blk.scale, backends, causal=True)
            return out.transpose(1, 2).reshape(batch * t, -1)

        x, hidden, _ = self._layers(
            input_ids, positions, cache, table, capture, attend, hand_head=False
        )
        rows = x.view(batch, t, -1)
        if logit_rows is not None:
            rows = rows[torch.arange(batch, device=x.device), logit_rows].unsqueeze(1)
        logits = self._logits(rows.reshape(-1, rows.shape[-1]))
        return TargetOutput(logits=logits.view(batch, rows.shape[1], -1), hidden=hidden)


class FusedDrafter:
    """DFlashDrafter forward for one step whose new context is at most 64 tokens.

    Unlike the PyTorch forward, the block's own keys and values are written into the drafter's
    cache at the block's positions: the block then attends, non-causally, to cache positions
    [0, last block position], which is exactly context plus block. The next step's context
    writes overwrite them (positions below the next block's start) or they lie beyond what the
    next block reads, so the cache invariant of the PyTorch path holds.
    """

    def __init__(self, drafter: DFlashDrafter, target: TargetModel) -> None:
        self.drafter, self.target = drafter, target
        self.has_w12 = any(isinstance(m, W12Linear) for m in drafter.modules())
        self.blocks = [_FusedBlock(layer) for layer in drafter.layers]
        # the draft head: the target's LM head, or the rows of a draft vocabulary and their ids,
        # or an FP8 copy of either (EngineConfig.draft_head "fp8")
        self.head: torch.Tensor | W12Weight | Fp8Weight = target.lm_head.weight
        self.head_ids: torch.Tensor | None = None
        # every layer's k|v rows and k norm stacked (DRAFT_CONTEXT_ONCE)
        self.context_kv = stack_rows([blk.kv for blk in self.blocks])
        norms = [blk.k_norm for blk in self.blocks]
        self.k_norms = None if norms[0] is None else torch.stack(norms)

    def restrict_head(self, rows: torch.Tensor | Fp8Weight, ids: torch.Tensor | None) -> None:
        """Propose only the tokens `ids` (None: all), whose LM-head rows are `rows` [len(ids),
        hidden]: an FP8 head as it is; bf16 rows W12-encoded when the target's head is W12 (the
        same kernel, fewer rows)."""
        if isinstance(rows, Fp8Weight):
            self.head = rows
        elif isinstance(self.head, W12Weight):
            from specpilot.formats import w12

            self.head = w12.encode(rows, self.head.group_size)
        else:
            self.head = rows
        self.head_ids = ids

    def fits(self, batch: int, width: int) -> bool:
        return fits(batch, width, self.has_w12)

    def __call__(
        self,
        target_hidden: torch.Tensor,
        ctx_positions: torch.Tensor,
        anchors: torch.Tensor,
        block_positions: torch.Tensor,
        cache: KVCache,
        table: RotaryTable,
    ) -> torch.Tensor:
        """Drafts [B, block - 1]: the argmax of the target's lm_head on block rows 1.. of the
        blocks [anchor, mask, ..., mask] (anchors [B]; the block as wide as block_positions)."""
        batch, n = ctx_positions.shape
        k = block_positions.shape[1]
        if not self.fits(batch, max(n, k)):
            raise ValueError(f"fused draft cannot take {batch} rows x {max(n, k)} tokens")
        num_splits = attention_splits(cache)
        d = self.drafter
        # the block's embeddings first: between the hidden norm and the first k|v multiply a
        # PyTorch gather cut their PDL chain, 8 us from the norm's end to that multiply's
        # start in run 145's draft timeline
        x = anchor_blocks(anchors, d, k, self.target.model.embed_tokens)
        ctx = linear(target_hidden.reshape(batch * n, -1), d.fc.weight)
        ctx = rmsnorm(ctx, d.hidden_norm.weight, d.hidden_norm.eps)
        self._write_context(ctx, ctx_positions, cache, table)
        handed = None
        for i, blk in enumerate(self.blocks):
            if not DRAFT_CONTEXT_ONCE:
                blk.write_kv(linear(ctx, blk.kv), 0, ctx_positions, table, cache, i)
            qkv = normed_linear(x, blk.qkv, blk.in_norm, blk.eps, handed=handed)
            attn = blk.attend(qkv, block_positions, table, cache, i, num_splits, causal=False)
            # nothing after the last: the head takes rows 1.. of each block, with its own norm
            x, handed = blk.finish(x, attn, norm_after(self.blocks, i, None), norm_next=True)
        rows = x.view(batch, k, -1)[:, 1:].reshape(batch * (k - 1), -1)
        logits = normed_linear(rows, self.head, d.norm.weight, d.norm.eps)
        best = greedy(logits)
        if self.head_ids is not None:  # a row of the draft vocabulary -> its token id
            best = self.head_ids[best]
        return best.view(batch, k - 1)

    def _write_context(
        self, ctx: torch.Tensor, positions: torch.Tensor, cache: KVCache, table: RotaryTable
    ) -> None:
        """Every layer's keys and values of the new context into the cache, as
        DRAFT_CONTEXT_ONCE says (0: nothing here, each layer writes its own)."""
        if not DRAFT_CONTEXT_ONCE:
            return
        kv = linear(ctx, self.context_kv)
        if DRAFT_CONTEXT_ONCE == 2:
            eps = self.blocks[0].eps
            layers = len(self.blocks)
            kv_rope_write_layers(kv, positions, table.cos, table.sin, cache.k[:layers],
                                 cache.v[:layers], self.k_norms, eps)  # fmt: skip
            return
        for i, columns in enumerate(kv.chunk(len(self.blocks), dim=1)):
            self.blocks[i].write_kv(columns, 0, positions, table, cache, i)


def embed(ids: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """ids [B, T] -> their embedding rows [B * T, hidden]: kernels/tokens' gather (tokens.ON)
    or PyTorch's."""
    if tokens.ON:
        return tokens.embed_rows(ids, weight)
    return torch.nn.functional.embedding(ids, weight).view(ids.numel(), -1)


def anchor_blocks(
    anchors: torch.Tensor, drafter: DFlashDrafter, width: int, embedding: nn.Embedding
) -> torch.Tensor:
    """The embedding rows [B * width, hidden] of the drafter's blocks [anchor, mask, ...]: one
    gather (tokens.ON), or PyTorch's fill, copy and gather (DFlashDrafter.anchor_block)."""
    if tokens.ON:
        mask_id = drafter.config.mask_token_id
        return tokens.embed_anchor_blocks(anchors, mask_id, width, embedding.weight)
    block = drafter.anchor_block(anchors, width)
    return embedding(block).view(block.numel(), -1)


def greedy(logits: torch.Tensor) -> torch.Tensor:
    """logits [..., vocab] -> each row's argmax [...]: kernels/tokens' (tokens.ON) or
    PyTorch's; the same indices."""
    return tokens.argmax_rows(logits) if tokens.ON else logits.argmax(dim=-1)


def attention_splits(cache: KVCache) -> int:
    """Key slices per attention launch for this cache (fixed per cache, so graphs stay valid)."""
    device = cache.k.device
    sms = 8
    if device.type == "cuda":
        sms = torch.cuda.get_device_properties(device).multi_processor_count
    _, batch, kv_heads, length, _ = cache.k.shape
    return num_splits_for(batch, kv_heads, length, sms)
