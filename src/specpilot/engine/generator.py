"""The decode loops: prefill, greedy AR decoding and DFlash speculative decoding for a batch.

The generator owns the preallocated KV caches of the target and the drafter and runs a batch of
`Sequence`s to completion. Sequences finish independently; a finished one stays in the batch with
its state frozen (its rows are recomputed but never read) until all are done. The engine knows
nothing about tokenization.

Speculative step, per sequence (start = tokens in the target cache, anchor = the last emitted token,
which is not yet in the cache and sits at position `start`):
1. draft: the drafter reads the context accepted last step and the block [anchor, mask, ...] and
   proposes block_size - 1 tokens;
2. verify: one target forward over [anchor, drafts] at positions start..start+block_size-1;
3. accept: the longest prefix of drafts equal to the target's argmax, plus the target's own next
   token; `start` advances by the number emitted, which rolls both caches back implicitly (entries
   past it are masked and overwritten later).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from specpilot import kernels
from specpilot.config import EngineConfig
from specpilot.engine.graphs import GraphCache
from specpilot.engine.sequence import Sequence
from specpilot.errors import ConfigError
from specpilot.formats import fp8, w12
from specpilot.formats.fp8 import Fp8Weight
from specpilot.formats.w12 import W12Weight
from specpilot.formats.w12_engine import kernels_usable
from specpilot.kernels import launch
from specpilot.kernels.linear import CERTIFIED_TILES, MAX_ROWS
from specpilot.layers.attention import AttentionMeta, KVCache
from specpilot.layers.rotary import RotaryTable
from specpilot.models.dflash import DFlashDrafter
from specpilot.models.target import TargetModel
from specpilot.spec.accept import accept_greedy, next_decode_inputs, next_step_meta
from specpilot.spec.replay import (
    AcceptanceProfile,
    ReplayProposer,
    device_counts,
    replay_drafts,
)


@dataclass
class StepOutput:
    tokens: torch.Tensor  # [B, T] the target's argmax at every row
    accepted: torch.Tensor | None  # [B] drafts accepted (verify blocks only)
    hidden: torch.Tensor | None  # [B, T, *] captured target hidden states
    # [B, 2T + 1] (ids, tokens, accepted) when the forward packed it (kernels/tokens.py)
    packed: torch.Tensor | None = None


@dataclass
class RunStats:
    prefill_s: float
    decode_s: float
    num_steps: int


def certified_rows(target_head: str, shape: tuple[int, ...], device: torch.device) -> int:
    """The forwards (by rows, at most) whose tokens come from a certified LM head of this shape
    (EngineConfig.target_head), 0 for none: "certified" every fused forward's, "certified-decode"
    one-row forwards'; "auto" on a GPU, forwards of up to 16 rows (a verify block) where the
    shape has a measured 16-row certified tile (linear.CERTIFIED_TILES), else one-row forwards'
    where it has a one-row one, else none. A head that is not plain bf16/fp16 (W12) takes none
    whatever this says (FusedTarget.certify_head)."""
    if target_head == "certified":
        return MAX_ROWS
    if target_head == "certified-decode":
        return 1
    if target_head == "auto" and device.type == "cuda" and kernels_usable(device):
        for rows in (16, 1):
            if (rows, *shape) in CERTIFIED_TILES:
                return rows
    return 0


def certifies_verify_heads(target_head: str, shape: tuple[int, ...], device: torch.device) -> bool:
    """Whether a verify block's forward (16 rows) takes its tokens from a certified LM head of
    this shape (certified_rows): where it does, W12 "auto" leaves the head bf16
    (formats/w12_engine.parse_matrices)."""
    return certified_rows(target_head, shape, device) >= 16


def _sync(device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def _record(device: torch.device) -> torch.cuda.Event | None:
    """An event after the work queued so far (None off CUDA, where work is synchronous)."""
    if device.type != "cuda":
        return None
    event = torch.cuda.Event()
    event.record()
    return event


def take_token(seq: Sequence, token: int) -> int:
    """Book one decode step's token into `seq`; returns the tokens it took (0 or 1)."""
    seq.num_cached_tokens += 1
    taken = seq.append([token])
    seq.acceptance_lengths.append(taken)
    return taken


def take_block(seq: Sequence, row: list[int], block_size: int) -> int:
    """Book one speculative step into `seq` from its row of `_spec_step`'s packed result
    (block, the target's argmax per block row, accepted count): the accepted drafts and the
    target's own next token. Returns the tokens taken (the cache advances by as many)."""
    n = row[2 * block_size]
    taken = seq.append(row[1 : 1 + n] + [row[block_size + n]])
    seq.acceptance_lengths.append(taken)
    seq.num_cached_tokens += taken
    return taken


# EngineConfig.min_acceptance looks at the mean acceptance length after this many steps
FALLBACK_PROBE_STEPS = 8


# A pipelined speculative step that may be the last (`may_finish`) is booked once the next
# step's inputs are built and queued, right before its first forward is launched (a `gate`
# that the forward asks), instead of before building them: the host's round trip while the
# device idles is then the booking and the launch only. False: booked first (until session 34).
# On the H200 (docs/LOG.md run 170, Qwen3-8B shape, 1k, paired, pipelined, 8 rounds): booking
# first 0.995x [0.993-0.998] spec@6.55; the loop's idle time 110 -> 59 us a step (replayed
# drafts). bench/engine_speed.py --switch engine.generator.BOOK_AT_LAUNCH=0.
BOOK_AT_LAUNCH = True
# EngineConfig.draft_weights / draft_head "auto" draft in FP8 only up to this many block rows
# (sequences x block width): wider drafts, and the prompts' context writes, run on the loaded
# drafter and the target's head, kept beside the FP8 copies. On the H200 (docs/LOG.md runs
# 182-183, Qwen3-8B shape, 1k, spec@6.55 tok/s with FP8 against the loaded drafter): one
# sequence +4.7-5.4% (runs 179-180, paired); 2 sequences 1,750 against 1,839 and 4 sequences
# 3,178 against 3,329 (0.95x: the FP8 tiles are the 16-row sweep's); 8 x 16 rows (64-row skinny
# slices) drafted in 3.07 ms against 1.29, 32 x 16 (widened for cuBLAS each call) 12.27
# against 3.18: spec 0.84x and 0.71x. So one b16 block. bench/engine_speed.py --switch
# engine.generator.FP8_DRAFT_MAX_ROWS=N.
FP8_DRAFT_MAX_ROWS = 16


def gated(fn: Callable[..., Any]) -> Callable[..., Any]:
    """fn with a `gate` keyword (graphs.CapturedForward's): not called, None returned, when the
    gate, asked first, says no."""

    def call(*args: Any, gate: Callable[[], bool] | None = None) -> Any:
        return None if gate is not None and not gate() else fn(*args)

    return call


def may_finish(seqs: list[Sequence], width: int) -> bool:
    """Whether a step that emits up to `width` tokens a row may leave every sequence at its
    token limit (then a pipelined loop books that step before launching another, which could
    only be discarded)."""
    return all(s.finished or s.max_new_tokens - len(s.output_ids) <= width for s in seqs)


class Generator:
    def __init__(
        self,
        target: TargetModel,
        drafter: DFlashDrafter | None,
        config: EngineConfig,
        device: torch.device,
        dtype: torch.dtype,
    ) -> None:
        loaded = drafter
        fp8_weights = drafter is not None and self._fp8_drafter(config, device, dtype)
        if fp8_weights:
            drafter = fp8.quantized_drafter(drafter, use_kernel=kernels_usable(device))
        self.target, self.drafter, self.config = target, drafter, config
        self.device, self.dtype = device, dtype
        self.block_size = config.block_size or (drafter.config.block_size if drafter else 16)
        self.use_graphs = config.cuda_graphs and device.type == "cuda"
        self.graphs = GraphCache()
        # persistent buffers, reused across runs (graphs capture their addresses)
        self._buffers: dict[str, tuple[KVCache, RotaryTable]] = {}
        self.fused_target, self.fused_drafter = self._fused_models()
        if self.fused_target is not None:  # EngineConfig.target_head
            head = self.fused_target.model.lm_head.weight
            rows = certified_rows(config.target_head, tuple(head.shape), device)
            if rows:
                self.fused_target.certify_head(rows)  # False (none) for a W12 head
        # EngineConfig.pdl for this target ("auto" resolved by its size); no Triton, no PDL
        self.pdl = "off"
        measured = None
        if config.tiles:  # a bad file fails here, whichever kernels run
            from specpilot.kernels import tiles  # NOTE: Triton, only when asked for

            measured = tiles.read(config.tiles)
        if self.fused_target is not None:  # process-wide: see kernels/launch.py
            weight_bytes = sum(t.nbytes for t in (*target.parameters(), *target.buffers()))
            self.pdl = launch.resolve_pdl(config.pdl, weight_bytes)
            self.configure_launches()
            if measured is not None:  # EngineConfig.tiles: this deployment's own tiles
                tiles.install(measured)
        self._pack_cpu_linears()
        # EngineConfig.draft_vocab: the ids the drafter may propose (None: all)
        self.draft_ids = self._load_draft_vocab()
        self.draft_head = self._choose_draft_head()
        if self.fused_drafter is not None:
            self._restrict_head(self.fused_drafter, self.draft_head)
        # (drafter, fused drafter, head) for drafts over FP8_DRAFT_MAX_ROWS rows where "auto"
        # chose FP8; None: every draft takes self.drafter, self.fused_drafter, self.draft_head
        self.wide_draft = self._wide_draft(loaded, fp8_weights) if loaded is not None else None
        # per-step CUDA events of the last speculative run, when profile_steps is set, and the
        # time of its drafter context write (the prompt's keys and values, before the steps)
        self.profile_steps = False
        self.draft_prefill_s = 0.0
        self.step_events: list[tuple[torch.cuda.Event, ...]] = []

    def configure_launches(self) -> None:
        """Put this generator's launch settings (EngineConfig.pdl as resolved, weight_prefetch,
        l2_ahead) in place. They are process-wide and the last Generator built sets them
        (kernels/launch.py), so whoever runs several generators in turn calls this before each
        one's runs; captured graphs keep the settings they were captured with."""
        if self.fused_target is not None:
            launch.configure(self.pdl, self.config.weight_prefetch, self.config.l2_ahead)

    def _fused_models(self) -> tuple[Any, Any]:
        """The Triton-kernel forwards (models/fused.py) this configuration uses, if any."""
        if self.config.kernels == "torch":
            return None, None
        reason = None if kernels.available() else "Triton is not installed or there is no GPU"
        fused_target = fused_drafter = None
        if reason is None:
            from specpilot.models import fused

            reason = fused.unsupported_reason(self.target, self.dtype, self.device)
            if reason is None:
                fused_target = fused.FusedTarget(self.target)
                if self.drafter is not None:
                    why = fused.unsupported_reason(self.drafter, self.dtype, self.device)
                    if why is None:
                        fused_drafter = fused.FusedDrafter(self.drafter, self.target)
                    elif self.config.kernels == "triton":
                        reason = f"drafter: {why}"
        if reason is not None and self.config.kernels == "triton":
            raise ConfigError(f"kernels=triton cannot run here: {reason}")
        return fused_target, fused_drafter

    # ----------------------------------------------------------------------------------------
    # buffers and forwards

    def _buffers_for(self, which: str, batch: int, max_len: int) -> tuple[KVCache, RotaryTable]:
        """The KV cache and rotary table of the target or the drafter, grown when too small."""
        held = self._buffers.get(which)
        if held is not None and held[0].k.shape[1] == batch and held[0].max_len >= max_len:
            return held
        cfg = self.target.config if which == "target" else self.drafter.config
        length = -(-max_len // 256) * 256  # round up: fewer reallocations, fewer recaptures
        self._buffers.pop(which, None)  # free the old cache before allocating the new one
        self.graphs.clear()
        cache = KVCache(
            cfg.num_layers, batch, cfg.num_kv_heads, length, cfg.head_dim, self.device, self.dtype
        )
        table = RotaryTable(
            cfg.head_dim, cfg.rope_theta, cfg.rope_scaling, length, self.device, self.dtype
        )
        self._buffers[which] = (cache, table)
        return cache, table

    def _positions(self, starts: list[int], width: int) -> torch.Tensor:
        base = torch.tensor(starts, device=self.device)[:, None]
        return base + torch.arange(width, device=self.device)[None, :]

    def _verify_fn(
        self, ids: torch.Tensor, positions: torch.Tensor, kv_len: int, capture: tuple[int, ...]
    ) -> StepOutput:
        """Target forward over ids [B, T] at positions [B, T]: the argmax at every row and, for
        a verify block (ids = [anchor, drafts]), the accepted draft count."""
        cache, table = self._buffers["target"]
        block = ids.shape[1] > 1
        if self.fused_target is not None and self.fused_target.fits(*ids.shape):
            out = self.fused_target(ids, positions, cache, table, capture)
            if block and self.fused_target.packs():
                packed = out.packed  # a certified head's (EngineConfig.target_head), else
                if packed is None:  # argmax, accept and packing: one launch
                    _, packed = self.fused_target.greedy_accept(out.logits, ids)
                return StepOutput(packed[:, ids.shape[1] : -1], packed[:, -1], out.hidden, packed)
            tokens = out.tokens if out.tokens is not None else self.fused_target.greedy(out.logits)
        else:
            out = self.target(ids, AttentionMeta.causal(positions, kv_len, table), cache, capture)
            tokens = out.logits.argmax(dim=-1)
        accepted = accept_greedy(ids[:, 1:], tokens) if block else None
        return StepOutput(tokens, accepted, out.hidden)

    def _draft_fn(
        self,
        hidden: torch.Tensor,
        ctx_pos: torch.Tensor,
        anchors: torch.Tensor,
        block_pos: torch.Tensor,
        kv_len: int,
    ) -> torch.Tensor:
        """Drafts [B, k - 1] from the new context's hidden states and the anchors, k the width
        of block_pos (block_size, or narrower for a wide batch: EngineConfig.batch_blocks)."""
        cache, table = self._buffers["draft"]
        k = block_pos.shape[1]
        drafter, fused_drafter, head = self._draft_path(hidden.shape[0] * k)
        if fused_drafter is not None and fused_drafter.fits(
            hidden.shape[0], max(hidden.shape[1], k)
        ):
            return fused_drafter(hidden, ctx_pos, anchors, block_pos, cache, table)
        block = drafter.anchor_block(anchors, k)
        embeds = self.target.embed(block)
        out = drafter(hidden, ctx_pos, embeds, block_pos, cache, table, kv_len)
        # 2-D rows: a strided 3-D input makes the CPU's matmul take a much slower batched path
        rows = out[:, 1:].reshape(-1, out.shape[-1])
        if isinstance(head, Fp8Weight):
            logits = fp8.multiply(rows, head, kernels_usable(self.device))
        elif head is not None:
            logits = F.linear(rows.to(head.dtype), head)
        else:
            logits = self.target.lm_head(rows)
        best = logits.argmax(dim=-1)
        if self.draft_ids is not None:  # a row of the draft vocabulary -> its token id
            best = self.draft_ids[best]
        return best.view(out.shape[0], -1)

    def _draft_path(self, rows: int) -> tuple[DFlashDrafter, Any, torch.Tensor | Fp8Weight | None]:
        """The drafter, fused drafter (or None) and head (`draft_head`'s kinds) that a draft of
        `rows` block rows runs on (FP8_DRAFT_MAX_ROWS)."""
        if self.wide_draft is not None and rows > FP8_DRAFT_MAX_ROWS:
            return self.wide_draft
        return self.drafter, self.fused_drafter, self.draft_head

    def _restrict_head(self, fused_drafter: Any, head: torch.Tensor | Fp8Weight | None) -> None:
        """Give a fused drafter the draft head `head` (`draft_head`'s kinds): an FP8 head as it
        is, the draft vocabulary's rows (the model's dtype) with a draft vocabulary; else it
        keeps the target's head."""
        if isinstance(head, Fp8Weight):
            fused_drafter.restrict_head(head, self.draft_ids)
        elif self.draft_ids is not None:  # the same rows unless the head is a bfloat16 copy
            rows = head if head.dtype == self.dtype else self._head_rows()
            fused_drafter.restrict_head(rows, self.draft_ids)

    def _wide_draft(self, loaded: DFlashDrafter, fp8_weights: bool) -> tuple | None:
        """`wide_draft`: where "auto" chose the FP8 drafter or head, the loaded drafter (its
        own fused forward) and the head "target" would give (the draft vocabulary's rows, else
        the target's); else None."""
        auto_weights = fp8_weights and self.config.draft_weights == "auto"
        auto_head = self.config.draft_head == "auto" and isinstance(self.draft_head, Fp8Weight)
        if not (auto_weights or auto_head):
            return None
        head = self.draft_head
        if auto_head:
            head = None if self.draft_ids is None else self._head_rows()
        drafter, fused_drafter = (loaded if auto_weights else self.drafter), None
        if self.fused_drafter is not None and auto_weights:
            from specpilot.models import fused

            if fused.unsupported_reason(loaded, self.dtype, self.device) is None:
                fused_drafter = fused.FusedDrafter(loaded, self.target)
        elif self.fused_drafter is not None:  # the same layers, the head set again below
            fused_drafter = copy.copy(self.fused_drafter)
            fused_drafter.head, fused_drafter.head_ids = self.target.lm_head.weight, None
        if fused_drafter is not None:
            self._restrict_head(fused_drafter, head)
        return drafter, fused_drafter, head

    def _pack_cpu_linears(self) -> None:
        """EngineConfig.cpu_linear: oneDNN-packed float32 linears on a CPU (layers/onednn.py)."""
        choice = self.config.cpu_linear
        if choice == "torch" or self.device.type != "cpu" or self.dtype != torch.float32:
            return
        from specpilot.layers import onednn

        if not onednn.available():
            if choice == "onednn":
                raise ConfigError("cpu_linear=onednn: this torch build has no oneDNN linear")
            return
        models = [m for m in (self.target, self.drafter) if m is not None]
        if choice == "auto" and not onednn.fits_in_memory(models):
            return  # the packed copies would double the linear weights' memory
        for model in models:
            onednn.pack_linears(model, rows=self.block_size)

    def _load_draft_vocab(self) -> torch.Tensor | None:
        if not self.config.draft_vocab or self.drafter is None:
            return None
        from specpilot.spec.draft_vocab import load_ids

        ids = load_ids(self.config.draft_vocab, self.target.config.vocab_size)
        return ids.to(self.device)

    def _head_rows(self) -> torch.Tensor:
        """The LM head's rows of the draft vocabulary (all of them without one), in the model's
        dtype (decoded from W12)."""
        weight = self.target.lm_head.weight
        if isinstance(weight, W12Weight):
            weight = w12.decode(weight)
        if self.draft_ids is None:
            return weight.detach()
        return weight.detach()[self.draft_ids].contiguous()

    @staticmethod
    def _fp8_drafter(config: EngineConfig, device: torch.device, dtype: torch.dtype) -> bool:
        """EngineConfig.draft_weights as resolved: "auto" is FP8 where the fused kernels may
        run the drafter (CUDA, Triton, bf16, kernels not "torch")."""
        if config.draft_weights != "auto":
            return config.draft_weights == "fp8"
        fused = config.kernels != "torch" and dtype == torch.bfloat16
        return fused and kernels_usable(device)

    def _choose_draft_head(self) -> torch.Tensor | Fp8Weight | None:
        """EngineConfig.draft_head: None (the target's lm_head) or a low-precision copy; with
        a draft vocabulary, that vocabulary's rows (in bfloat16 or FP8 if asked for). "auto"
        is FP8 where the fused drafter runs on CUDA."""
        choice = self.config.draft_head
        if self.drafter is None:
            return None
        if choice == "auto" and self.fused_drafter is not None and self.device.type == "cuda":
            choice = "fp8"
        if choice == "fp8":
            return fp8.quantize(self._head_rows())
        if self.draft_ids is not None:
            rows = self._head_rows()
            return rows.to(torch.bfloat16) if choice == "bfloat16" else rows
        if choice == "target":
            return None
        weight = self.target.lm_head.weight
        if isinstance(weight, W12Weight):  # W12 holds bf16 already
            return w12.decode(weight) if choice == "bfloat16" else None
        if choice == "auto" and (self.device.type != "cpu" or weight.dtype != torch.float32):
            return None
        copy = weight.detach().to(torch.bfloat16)
        if choice == "bfloat16":
            return copy
        rows = torch.randn(self.block_size - 1, weight.shape[1], device=self.device)

        def cost(head: Callable[[torch.Tensor], torch.Tensor]) -> float:  # best of 3 + warm-up
            times = []
            for _ in range(4):
                t0 = time.perf_counter()
                head(rows).argmax(dim=-1)
                times.append(time.perf_counter() - t0)
            return min(times[1:])

        with torch.inference_mode():
            low = cost(lambda x: F.linear(x.to(copy.dtype), copy))
            own = cost(self.target.lm_head)
        return copy if low < own else None

    # NOTE: in a graph the PyTorch path reads the whole cache (static shape; the mask hides
    # unwritten slots); the fused attention reads each row's own length on the device.

    def _target_forward(
        self,
        ids: torch.Tensor,
        positions: torch.Tensor,
        kv_len: int,
        capture: tuple[int, ...],
        gate: Callable[[], bool] | None = None,
    ) -> StepOutput | None:
        """`_verify_fn`, graphed per (batch, width) on CUDA (decode steps, benchmarks); None,
        nothing launched, when `gate` says no."""
        if not self.use_graphs:
            return gated(self._verify_fn)(ids, positions, kv_len, capture, gate=gate)
        max_len = self._buffers["target"][0].max_len

        def forward(ids: torch.Tensor, positions: torch.Tensor) -> StepOutput:
            return self._verify_fn(ids, positions, max_len, capture)

        key = ("target", *ids.shape, capture)
        return self.graphs.get(key, forward)(gate=gate, ids=ids, positions=positions)

    def _fed_decode(self, batch: int, **inputs: torch.Tensor) -> StepOutput:
        """One step of the pipelined AR loop as a CUDA graph that feeds itself
        (EngineConfig.decode_graph): the forward, then the next step's ids (the argmax) and
        positions (+ 1, held at limits) written into the graph's own input buffers, so a step
        is one launch. `inputs` (ids, positions, limits [B, 1]) are copied in at a run's first
        step and left out after it."""
        max_len = self._buffers["target"][0].max_len

        def forward(ids: torch.Tensor, positions: torch.Tensor, limits: torch.Tensor) -> StepOutput:
            return self._verify_fn(ids, positions, max_len, ())

        def feed(static: dict[str, torch.Tensor], out: StepOutput) -> None:
            args = (out.tokens, static["ids"], static["positions"], static["limits"])
            if self.fused_target is None or not self.fused_target.next_decode(*args):
                next_decode_inputs(*args)

        return self.graphs.get(("decode", batch, 1), forward, feed)(**inputs)

    def _draft_forward(
        self,
        hidden: torch.Tensor,
        ctx_pos: torch.Tensor,
        anchors: torch.Tensor,
        block_pos: torch.Tensor,
        kv_len: int,
        gate: Callable[[], bool] | None = None,
    ) -> torch.Tensor | None:
        """`_draft_fn`, graphed on CUDA when the context is at most one block wide (every step,
        the prompt's context being written by `_draft_prefill`; keyed by context and block
        width); None, nothing launched, when `gate` says no."""
        if not self.use_graphs or hidden.shape[1] > self.block_size:
            return gated(self._draft_fn)(hidden, ctx_pos, anchors, block_pos, kv_len, gate=gate)
        max_len = self._buffers["draft"][0].max_len

        def draft(hidden, ctx_pos, anchors, block_pos):  # noqa: ANN001, ANN202
            return self._draft_fn(hidden, ctx_pos, anchors, block_pos, max_len)

        key = ("draft", *hidden.shape[:2], block_pos.shape[1])
        return self.graphs.get(key, draft)(
            gate=gate, hidden=hidden, ctx_pos=ctx_pos, anchors=anchors, block_pos=block_pos
        )

    def _prefill(
        self,
        seqs: list[Sequence],
        capture: tuple[int, ...],
        buffers: tuple[KVCache, RotaryTable] | None = None,
    ) -> torch.Tensor | None:
        """Run the prompts, right-padded into one batch, and emit each sequence's first token;
        return the captured hidden states [B, T, *]. buffers: the cache rows and rotary table
        to use (default the target's; the scheduler passes its slots' rows). Padding positions
        past a prompt write entries that stay masked until the row's own tokens overwrite them."""
        cache, table = buffers or self._buffers["target"]
        lens = [len(s.prompt_ids) for s in seqs]
        width = max(lens)
        ids = torch.zeros(len(seqs), width, dtype=torch.long)
        for b, s in enumerate(seqs):
            ids[b, : lens[b]] = torch.tensor(s.prompt_ids)
        rows = torch.tensor(lens, device=self.device) - 1
        fused = self.fused_target
        mode = self.config.prefill
        if (
            (mode == "fused" or (mode == "auto" and self.device.type == "cuda"))
            and fused is not None
            and fused.prefill_fits(len(seqs), width)
            and cache.contiguous_rows()
        ):
            out = fused.prefill(ids.to(self.device), cache, table, capture, logit_rows=rows)
        else:
            positions = self._positions([0] * len(seqs), width)
            meta = AttentionMeta.causal(positions, width, table)
            out = self.target(ids.to(self.device), meta, cache, capture, logit_rows=rows)
        first = out.logits[:, 0].argmax(dim=-1).tolist()
        for s, token, n in zip(seqs, first, lens):
            s.num_cached_tokens = n
            s.append([token])
        return out.hidden

    def _draft_prefill(
        self,
        seqs: list[Sequence],
        hidden: torch.Tensor,
        buffers: tuple[KVCache, RotaryTable] | None = None,
    ) -> torch.Tensor:
        """Write the drafter's context keys and values of the prompts (`_prefill`'s captured
        hidden states [B, width, *]) into the draft cache (default the generator's; the
        scheduler passes its slots' rows): `DFlashDrafter.write_context`, no block forward.
        Returns the first step's context: zeros [B, block, *] with no valid row, so every
        speculative step, the first included, has a one-block context and replays its CUDA
        graph (a prompt-wide first context made the first step eager: ~24 ms at the SmolLM2
        shape on the H200, docs/LOG.md run 27)."""
        cache, table = buffers or self._buffers["draft"]
        width = hidden.shape[1]
        # the prompts' rows on the loaded drafter where "auto" drafts in FP8 (FP8_DRAFT_MAX_ROWS)
        drafter = self.wide_draft[0] if self.wide_draft is not None else self.drafter
        drafter.write_context(hidden, self._positions([0] * len(seqs), width), cache, table)
        return hidden.new_zeros(len(seqs), self.block_size, hidden.shape[2])

    # ----------------------------------------------------------------------------------------
    # public loops

    @torch.inference_mode()
    def run(
        self, seqs: list[Sequence], speculative: bool, proposer: ReplayProposer | None = None
    ) -> RunStats:
        """Generate for every sequence in place. speculative=False is plain greedy AR decoding."""
        if speculative and self.drafter is None and proposer is None:
            raise ValueError("speculative decoding needs a drafter or a replay proposer")
        extra = 2 * self.block_size + 1 if speculative else 1
        max_len = max(len(s.prompt_ids) + s.max_new_tokens for s in seqs) + extra
        self._buffers_for("target", len(seqs), max_len)
        use_drafter = speculative and self.drafter is not None
        if use_drafter:
            self._buffers_for("draft", len(seqs), max_len)
        capture = self.drafter.config.target_layer_ids if use_drafter else ()
        t0 = _sync(self.device)
        hidden = self._prefill(seqs, capture)
        t1 = _sync(self.device)
        for s in seqs:
            s.time_to_first_token_s = t1 - t0
        if speculative:
            if use_drafter and not all(s.finished for s in seqs):
                t_draft = _sync(self.device) if self.profile_steps else 0.0
                hidden = self._draft_prefill(seqs, hidden)  # the first step's context
                if self.profile_steps:  # inside the decode time: step_breakdown reports it
                    self.draft_prefill_s = _sync(self.device) - t_draft
            steps = self._speculate(seqs, hidden, proposer)
            if not all(s.finished for s in seqs):  # EngineConfig.min_acceptance: AR from here
                steps += self._decode(seqs)
        else:
            steps = self._decode(seqs)
        t2 = _sync(self.device)
        for s in seqs:
            s.decode_time_s = t2 - t1
        return RunStats(prefill_s=t1 - t0, decode_s=t2 - t1, num_steps=steps)

    def run_replay(
        self,
        fresh: Callable[[], list[Sequence]],
        profile: AcceptanceProfile,
        seed: int,
        max_passes: int = 8,
    ) -> tuple[list[Sequence], int]:
        """Speculative run with replayed proposals; returns the sequences and the passes used.

        Continuations start as this engine's AR output. In low precision a verify block can break
        a near-tie differently from a one-token step, after which acceptance would collapse; so
        the speculative run's own output becomes the next continuation until a run reproduces it
        (then acceptance followed the profile). GEMM rows and causal attention make the agreed
        prefix bitwise stable, so each pass extends it. Only the last run counts.
        """
        reference = fresh()
        self.run(reference, speculative=False)
        continuations = [s.output_ids for s in reference]
        vocab = self.target.config.vocab_size
        passes = 0
        while True:
            passes += 1
            seqs = fresh()
            proposer = ReplayProposer(continuations, profile, vocab, seed)
            self.run(seqs, speculative=True, proposer=proposer)
            outputs = [s.output_ids for s in seqs]
            if outputs == continuations or passes == max_passes:
                break
            continuations = outputs
        return seqs, passes

    def _decode(self, seqs: list[Sequence]) -> int:
        if self.config.pipelined(self.device):
            return self._decode_pipelined(seqs)
        steps = 0
        while not all(s.finished for s in seqs):
            starts = [s.num_cached_tokens for s in seqs]
            ids = torch.tensor([[s.last_token] for s in seqs], device=self.device)
            out = self._target_forward(ids, self._positions(starts, 1), max(starts) + 1, ())
            tokens = out.tokens[:, -1].tolist()
            for s, token in zip(seqs, tokens):
                if not s.finished:
                    take_token(s, token)
            steps += 1
        return steps

    def _decode_pipelined(self, seqs: list[Sequence]) -> int:
        """`_decode` with the host one step behind the device (EngineConfig.pipeline): step
        i + 1 reads step i's argmax and position + 1 on the device (the position held at the
        sequence's last one, so a finished row never runs past its cache), and step i's tokens
        are copied back and booked while step i + 1 runs. A step that may be the last (every row
        one token from its limit) is booked before the next launch, so only a stop token leaves
        a step to discard. Rows are independent, so the tokens are `_decode`'s."""
        dev = self.device
        if all(s.finished for s in seqs):
            return 0
        last = [len(s.prompt_ids) + s.max_new_tokens - 1 for s in seqs]
        limits = torch.tensor(last, device=dev)[:, None]
        positions = torch.tensor([[s.num_cached_tokens] for s in seqs], device=dev)
        ids = torch.tensor([[s.last_token] for s in seqs], device=dev)
        bound = max(s.num_cached_tokens for s in seqs)  # >= every row's position this step
        pin = dev.type == "cuda"
        host = [torch.empty(len(seqs), dtype=torch.long, pin_memory=pin) for _ in "ab"]
        pending: tuple[torch.Tensor, Any] | None = None
        steps = launched = 0
        fed = self.use_graphs and self.config.decode_graph
        while True:
            if pending is not None and may_finish(seqs, 1):  # the last token: no step after it
                steps += 1
                if self._book(seqs, *pending, take_token):
                    break
                pending = None
            if fed:  # the graph feeds itself after the run's first step
                first = dict(ids=ids, positions=positions, limits=limits) if not launched else {}
                out = self._fed_decode(len(seqs), **first)
            else:
                out = self._target_forward(ids, positions, bound + 1, ())
                positions = torch.minimum(positions + 1, limits)
            ids = out.tokens[:, -1:]
            bound = min(bound + 1, max(last))
            buffer = host[launched % 2]
            launched += 1
            buffer.copy_(ids[:, 0], non_blocking=pin)
            done = _record(dev)
            if pending is not None:  # book the previous step while this one runs
                finished = self._book(seqs, *pending, take_token)
                steps += 1
                if finished:
                    break
            pending = (buffer, done)
        return steps

    def _spec_step(
        self,
        hidden: torch.Tensor | None,
        meta: torch.Tensor,
        replay: torch.Tensor | None,
        draft_kv: int,
        target_kv: int,
        capture: tuple[int, ...],
        k: int | None = None,
        gate: Callable[[], bool] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None] | None:
        """One speculative step on the device: draft, verify, accept.

        meta [B, 3] = (start, first context position, anchor token) per sequence; replay
        [B, k - 1] replaces the drafts when given; k: the block width (default block_size).
        Returns packed [B, 2 * k + 1] = (block, the target's argmax at each block row, accepted
        count) and the captured hidden states of the block. On CUDA with graphs, once the
        context is at most one block wide, the draft and the verify each replay a graph (or,
        with `step_graph`, the whole step is one graph). `gate`: asked right before the step's
        first forward is launched, after everything before it is queued; when it says no, the
        step launches nothing more and returns None.
        """
        k = k or self.block_size

        def step(
            hidden: torch.Tensor | None,
            meta: torch.Tensor,
            replay: torch.Tensor | None,
            draft_kv: int,
            target_kv: int,
            draft: Callable[..., torch.Tensor],
            verify: Callable[..., StepOutput | None],
            gate: Callable[[], bool] | None = None,
        ) -> tuple[torch.Tensor, torch.Tensor | None] | None:
            starts, ctx_first, anchors = meta.unbind(dim=1)
            block_pos = starts[:, None] + torch.arange(k, device=meta.device)
            drafts = replay
            if hidden is not None:
                ctx_pos = ctx_first[:, None] + torch.arange(hidden.shape[1], device=meta.device)
                drafted = draft(hidden, ctx_pos, anchors, block_pos, draft_kv, gate=gate)
                if drafted is None:  # the gate said no
                    return None
                gate = None
                drafts = drafted if replay is None else replay
            block_ids = torch.cat([anchors[:, None], drafts], dim=1)
            out = verify(block_ids, block_pos, target_kv, capture, gate=gate)
            if out is None:
                return None
            packed = out.packed
            if packed is None:
                packed = torch.cat([block_ids, out.tokens, out.accepted[:, None]], dim=1)
            return packed, out.hidden

        graphable = self.use_graphs and (hidden is None or hidden.shape[1] <= self.block_size)
        eager = gated(self._draft_fn), gated(self._verify_fn)
        if not graphable:
            return step(hidden, meta, replay, draft_kv, target_kv, *eager, gate)
        if not self.config.step_graph:  # two graphs: draft, then verify
            draft, verify = self._draft_forward, self._target_forward
            return step(hidden, meta, replay, draft_kv, target_kv, draft, verify, gate)
        draft_len = self._buffers["draft"][0].max_len if hidden is not None else 0
        target_len = self._buffers["target"][0].max_len
        inputs = {"meta": meta}
        if hidden is not None:
            inputs["hidden"] = hidden
        if replay is not None:
            inputs["replay"] = replay
        width = hidden.shape[1] if hidden is not None else 0
        key = ("step", *meta.shape, width, k, replay is not None, capture)

        def graphed(meta, hidden=None, replay=None):  # noqa: ANN001, ANN202 - graph signature
            return step(hidden, meta, replay, draft_len, target_len, *eager)

        return self.graphs.get(key, graphed)(gate=gate, **inputs)

    def _falls_back(self, seqs: list[Sequence]) -> bool:
        """EngineConfig.min_acceptance: whether the unfinished sequences, once each has had
        FALLBACK_PROBE_STEPS speculative steps, average fewer tokens a step so far than it asks
        (checked before every later step; then the loop stops, `_mark_fallback`, and `run`
        finishes them with AR decoding)."""
        live = [s for s in seqs if not s.finished]
        limit = self.config.min_acceptance
        if not limit or not live:
            return False
        if min(len(s.acceptance_lengths) for s in live) < FALLBACK_PROBE_STEPS:
            return False
        lengths = [n for s in live for n in s.acceptance_lengths]
        return sum(lengths) < limit * len(lengths)

    @staticmethod
    def _mark_fallback(seqs: list[Sequence]) -> None:
        for s in seqs:
            if not s.finished:
                s.ar_from_step = len(s.acceptance_lengths)

    def _speculate(
        self, seqs: list[Sequence], hidden: torch.Tensor | None, proposer: ReplayProposer | None
    ) -> int:
        """Speculative steps until every sequence is done; hidden: the first step's context
        (`_draft_prefill`'s one empty block; None without a drafter). Returns the steps run."""
        if self.config.pipelined(self.device):
            return self._speculate_pipelined(seqs, hidden, proposer)
        k = self.block_size
        drafter = self.drafter
        capture = drafter.config.target_layer_ids if drafter is not None else ()
        ctx_counts = [0] * len(seqs)  # valid context rows: none before the first step
        steps = 0
        self.step_events = []
        while not all(s.finished for s in seqs):
            if self._falls_back(seqs):
                self._mark_fallback(seqs)
                break
            events = self._event() if self.profile_steps else None
            starts = [s.num_cached_tokens for s in seqs]
            # NOTE: padding context rows land at positions >= start, which the drafter masks
            # and the next step overwrites.
            ctx_first = [st - n for st, n in zip(starts, ctx_counts)]
            rows = [[st, c, s.last_token] for st, c, s in zip(starts, ctx_first, seqs)]
            meta = torch.tensor(rows).to(self.device, non_blocking=True)
            replay = None
            if proposer is not None:
                emitted = [len(s.output_ids) for s in seqs]
                replay = proposer.propose(emitted, k - 1).to(self.device, non_blocking=True)
            draft_kv = max(ctx_first) + hidden.shape[1] if hidden is not None else 0
            if events is not None:
                events += self._event()
            packed_d, hidden_out = self._spec_step(
                hidden, meta, replay, draft_kv, max(starts) + k, capture
            )
            if events is not None:
                events += self._event()
            # the one host synchronisation of a step: the block, the target's tokens and the
            # accepted counts, in one copy, for stop checks and bookkeeping
            packed = packed_d.tolist()
            new_counts = [
                0 if s.finished else take_block(s, row, k) for row, s in zip(packed, seqs)
            ]
            if drafter is not None:
                ctx_counts = new_counts
                # the full block of hidden states (rows past each count are masked padding):
                # one static width, so the next step can be replayed as a graph
                hidden = hidden_out
            if events is not None:
                self.step_events.append(events)
            steps += 1
        if self.profile_steps:
            self.step_events.append(self._event())
        return steps

    def _speculate_pipelined(
        self, seqs: list[Sequence], hidden: torch.Tensor | None, proposer: ReplayProposer | None
    ) -> int:
        """`_speculate` with the host one step behind the device (EngineConfig.pipeline).

        Step i + 1's inputs come from step i's result on the device: start + accepted + 1 (held
        at the sequence's limit, prompt + max_new_tokens, so a finished row never runs past its
        cache), the first context position (step i's start) and the anchor (the target's token
        after the accepted drafts); replayed drafts are gathered from the continuations on the
        device with acceptance lengths drawn on the host in the same order as
        `ReplayProposer.propose`. Each step's result is copied to the host behind the launch of
        the next one and booked while that one runs. A step that may be the last (every row
        within a block of its token limit: `may_finish`) is booked before the next launch, so
        that only a stop token leaves a launched step to discard (at 128 new tokens and tau
        6.55 that step was one in ~20); with BOOK_AT_LAUNCH, once the next step's inputs are
        queued, right before its first forward. Rows are independent, so the tokens are those of
        `_speculate`.
        Host-side kv lengths are upper bounds (exact ones would need step i's result); they only
        matter for eager forwards, whose masks hide the positions past each row's own.
        """
        k, dev = self.block_size, self.device
        drafter = self.drafter
        capture = drafter.config.target_layer_ids if drafter is not None else ()
        self.step_events = []
        if all(s.finished for s in seqs):  # e.g. max_new_tokens=1: the prefill's token ends it
            return 0
        limit_list = [len(s.prompt_ids) + s.max_new_tokens for s in seqs]
        limits = torch.tensor(limit_list, device=dev)
        prompt_lens = torch.tensor([len(s.prompt_ids) for s in seqs], device=dev)
        rows = [[s.num_cached_tokens, s.num_cached_tokens, s.last_token] for s in seqs]
        meta = torch.tensor(rows, device=dev)
        start_bound = max(r[0] for r in rows)  # >= every row's start of the coming step
        ctx_bound = start_bound  # >= every row's first context position of the coming step
        if proposer is not None:
            table, table_lengths = proposer.table.to(dev), proposer.lengths.to(dev)
        pin = dev.type == "cuda"
        host = [torch.empty(len(seqs), 2 * k + 1, dtype=torch.long, pin_memory=pin) for _ in "ab"]
        pending: tuple[torch.Tensor, Any] | None = None
        steps = launched = 0

        def take(seq: Sequence, row: list[int]) -> int:
            return take_block(seq, row, k)

        booked: tuple[torch.Tensor, Any] | None = None  # a step booked before the next launch

        def gate() -> bool:  # asked right before the next step's first forward
            nonlocal booked
            finished = self._book(seqs, *booked, take)  # type: ignore[misc]
            booked = None
            return not finished

        while True:
            if pending is not None and may_finish(seqs, k):  # maybe the last
                booked, pending = pending, None
                steps += 1
                if not BOOK_AT_LAUNCH and not gate():  # booked now, before the inputs
                    break
            if pending is not None and self._falls_back(seqs):  # nothing else in flight
                steps += 1
                self._book(seqs, *pending, take)
                self._mark_fallback(seqs)
                break
            replay = None
            if proposer is not None:
                counts = device_counts(proposer.sample_lengths(len(seqs), k - 1), dev)
                args = (table, table_lengths, meta, prompt_lens, counts, k - 1, proposer.vocab_size)
                if self.fused_target is not None:  # one launch (kernels/tokens.py), or None
                    replay = self.fused_target.replay(*args)
                if replay is None:
                    emitted = meta[:, 0] - prompt_lens + 1
                    replay = replay_drafts(table, table_lengths, emitted, *args[4:])
            draft_kv = ctx_bound + hidden.shape[1] if hidden is not None else 0
            result = self._spec_step(
                hidden, meta, replay, draft_kv, start_bound + k, capture,
                gate=None if booked is None else gate,
            )  # fmt: skip
            if booked is not None:
                raise RuntimeError("a speculative step launched without booking the one before")
            if result is None:  # the booked step was the last: nothing launched after it
                break
            packed_d, hidden_out = result
            # the next step's inputs, on the device, ordered before the next launch
            fused_meta = None
            if self.fused_target is not None:  # one launch (kernels/tokens.py), or None
                fused_meta = self.fused_target.next_meta(packed_d, meta, limits)
            meta = next_step_meta(packed_d, meta, limits) if fused_meta is None else fused_meta
            ctx_bound = start_bound
            start_bound = min(start_bound + k, max(limit_list))
            if drafter is not None:
                hidden = hidden_out
            buffer = host[launched % 2]  # the other one holds the step not yet booked
            launched += 1
            buffer.copy_(packed_d, non_blocking=pin)
            done = _record(dev)
            if pending is not None:  # book the previous step while this one runs
                finished = self._book(seqs, *pending, take)
                steps += 1
                if finished:
                    break  # the step just launched is not needed
            pending = (buffer, done)
        return steps

    @staticmethod
    def _book(
        seqs: list[Sequence], buffer: torch.Tensor, done: Any, take: Callable[[Sequence, Any], int]
    ) -> bool:
        """Wait for one pipelined step's result (`buffer`, ready at event `done`) and book each
        unfinished sequence's row with `take` (take_token for AR, take_block for speculative);
        True when every sequence is done."""
        if done is not None:
            done.synchronize()
        for row, s in zip(buffer.tolist(), seqs):
            if not s.finished:
                take(s, row)
        return all(s.finished for s in seqs)

    def _event(self) -> tuple[torch.cuda.Event, ...]:
        if self.device.type != "cuda":
            return ()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return (event,)

    def step_breakdown(self) -> dict[str, float]:
        """Mean milliseconds per speculative step of the last profiled run, on the GPU's clock:
        host_before (inputs built and copied while the GPU waits), step (draft + verify +
        accept, one graph once the context is one block wide), host_after (the copy of the
        results, the bookkeeping, until the next step begins); and, once per run,
        draft_prefill_ms: the drafter's context write of the prompt, which the decode time
        includes (at 32k tokens of the Qwen3-8B shape ~11 ms a run by run 61's step time less
        its parts: ~0.6 ms of each of its 19 steps)."""
        rows = [e for e in self.step_events if len(e) == 3]
        if not rows:
            return {}
        ends = [e[0] for e in self.step_events[1:]]
        before = [a.elapsed_time(b) for a, b, _ in rows]
        step = [b.elapsed_time(c) for _, b, c in rows]
        after = [c.elapsed_time(nxt) for (_, _, c), nxt in zip(rows, ends)]
        n = len(rows)
        return {
            "host_before_ms": sum(before) / n,
            "step_ms": sum(step) / n,
            "host_after_ms": sum(after) / n,
            "steps": n,
            "draft_prefill_ms": self.draft_prefill_s * 1e3,
        }
