"""Continuous batching over one `Generator`: a step-level API (add / step / abort).

Slots are the rows of the generator's KV caches, allocated once for `max_running` rows and
`max_len` positions. `add_many(requests)` prefills the given sequences in one batched forward
into the lowest free rows (each one's first token comes from that prefill; `add` is one of
them); every `step()` then runs one decode forward (AR) or one draft + verify (speculative) for
rows [0, n), n - 1 being the highest occupied slot, so the requests running at
the same time share their forwards. Slots are handed out lowest first, and when a request leaves,
the highest running ones move down into the freed slots (`_compact`), so n is the number running
and a lone request runs at batch 1. (A free row inside [0, n) would be padding: anchor 0 at
position 0, writing only into its own free cache row, which the next prefill of that slot
overwrites.)

Each row keeps its own acceptance and implicit rollback exactly as in `Generator._speculate`:
`num_cached_tokens` advances by the tokens emitted, and stale cache entries past it are masked
until overwritten. A sequence that finishes (stop token, token limit) or is aborted leaves its slot
at once; the others never wait for it. The drafter's context for a row is its whole
prompt, whose keys and values `add` writes into the row's draft cache (so a joining request
never widens the step), and the accepted part of the last verify block afterwards.

NOTE: the scheduler owns its generator: before each forward it points the generator's buffers at
row-prefix views of its own caches (`KVCache.rows_view`). Not thread-safe: one thread drives it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specpilot.engine.generator import Generator, take_block, take_token
from specpilot.engine.sequence import Sequence
from specpilot.layers.attention import KVCache
from specpilot.spec.replay import AcceptanceProfile, ReplayProposer


@dataclass
class StepResult:
    num_rows: int  # batch rows the forwards ran over (active + padding)
    acceptance_lengths: list[int]  # tokens emitted by each active row this step
    finished: list[Sequence]  # sequences that finished this step (their slots are free again)


class Scheduler:
    def __init__(
        self,
        generator: Generator,
        max_running: int,
        max_len: int,
        replay: AcceptanceProfile | None = None,
    ) -> None:
        if max_running <= 0:
            raise ValueError(f"max_running must be > 0, got {max_running}")
        self.gen = generator
        self.replay = replay
        self.speculative = generator.drafter is not None or replay is not None
        self.block_size = generator.block_size
        # room for a block past the last token (verify writes up to 2 * block_size ahead)
        self.extra = 2 * self.block_size + 1 if self.speculative else 1
        self.max_len = max_len
        drafter = generator.drafter
        self.capture = drafter.config.target_layer_ids if drafter is not None else ()
        # width of the drafter's context hidden states (the captured target layers side by side)
        self.context_dim = drafter.config.hidden_size * len(self.capture) if drafter else 0
        # the block width of a step over n rows (EngineConfig.batch_blocks), parsed once
        config = generator.config
        self.blocks = [config.block_for(n, self.block_size) for n in range(max_running + 1)]
        self.target_cache, self.target_table = generator._buffers_for(
            "target", max_running, max_len + self.extra
        )
        self.draft_cache = self.draft_table = None
        if drafter is not None:
            self.draft_cache, self.draft_table = generator._buffers_for(
                "draft", max_running, max_len + self.extra
            )
        self.views: dict[int, tuple[KVCache, KVCache | None]] = {}
        self.seqs: list[Sequence | None] = [None] * max_running
        self.proposers: list[ReplayProposer | None] = [None] * max_running
        # drafter context per row: its part of `block_hidden`, `ctx_counts[row]` valid rows (0
        # for a row that just joined: its prompt's context was written at `add`)
        self.ctx_counts = [0] * max_running
        self.block_hidden: torch.Tensor | None = None  # [rows of the last step, block, *]

    # ----------------------------------------------------------------------------------------
    # slots

    @property
    def max_running(self) -> int:
        return len(self.seqs)

    @property
    def running(self) -> list[Sequence]:
        return [s for s in self.seqs if s is not None]

    @property
    def num_free(self) -> int:
        return sum(s is None for s in self.seqs)

    def fits(self, prompt_len: int, max_new_tokens: int) -> bool:
        return prompt_len + max_new_tokens <= self.max_len

    @torch.inference_mode()
    def add(self, seq: Sequence, continuation: list[int] | None = None, seed: int = 0) -> None:
        """Prefill `seq` into the lowest free slot; it emits its first token (and may already be
        finished, in which case it never takes a slot). continuation: the known greedy output
        that replayed proposals draw from (replay only; empty or wrong ones only cost speed)."""
        self.add_many([(seq, continuation, seed)])

    @torch.inference_mode()
    def add_many(self, requests: list[tuple[Sequence, list[int] | None, int]]) -> None:
        """`add` for several (seq, continuation, seed) at once: one batched target prefill and
        one batched drafter-context prefill into the lowest free slots (a request arriving
        while others run costs the running ones one prefill, however many arrive together)."""
        seqs = [seq for seq, _, _ in requests]
        for seq in seqs:
            if not seq.prompt_ids or not self.fits(len(seq.prompt_ids), seq.max_new_tokens):
                raise ValueError("the prompt and max_new_tokens do not fit the scheduler's max_len")
        free = [slot for slot, held in enumerate(self.seqs) if held is None]
        if len(free) < len(seqs):  # callers check num_free
            raise ValueError(f"{len(seqs)} requests for {len(free)} free slots")
        slots = free[: len(seqs)]
        hidden = self._prefill(slots, seqs)
        live = [b for b, seq in enumerate(seqs) if not seq.finished]
        if hidden is not None and live:  # the drafter's context K/V of the prompts, written now
            self._draft_prefill([slots[b] for b in live], [seqs[b] for b in live], hidden[live])
        vocab = self.gen.target.config.vocab_size
        for b in live:
            seq, continuation, seed = requests[b]
            self.seqs[slots[b]] = seq
            self.ctx_counts[slots[b]] = 0
            if self.replay is not None:
                proposer = ReplayProposer([continuation or []], self.replay, vocab, seed)
                self.proposers[slots[b]] = proposer

    @torch.inference_mode()
    def abort(self, seq: Sequence) -> bool:
        """Free the slot of a running sequence; False when it is not running."""
        for slot, held in enumerate(self.seqs):
            if held is seq:
                self._free(slot)
                self._compact()
                return True
        return False

    def _free(self, slot: int) -> None:
        self.seqs[slot] = None
        self.proposers[slot] = None
        self.ctx_counts[slot] = 0

    def reset(self) -> None:
        """Free every slot (after a failed step: the running requests are given up)."""
        for slot in range(self.max_running):
            self._free(slot)
        self.block_hidden = None

    def _compact(self) -> None:
        """Move the highest running sequences down into free slots below them, so that a step
        runs over rows [0, number running) with no padding rows in between (a finished
        request in slot 2 would otherwise leave slots 0..30 computing for 10 live ones: docs/
        LOG.md run 19). A move copies the row's written keys and values (target and drafter
        caches; at the Qwen3-8B shape and 1k tokens ~150 MB, ~0.1 ms on an H200) and its
        drafter context, acceptance replay and counts; rows are independent, so the tokens are
        unchanged."""
        while True:
            free = [slot for slot, held in enumerate(self.seqs) if held is None]
            top = self._num_rows() - 1
            if not free or free[0] >= top:
                return
            self._move(top, free[0])

    def _move(self, src: int, dst: int) -> None:
        seq = self.seqs[src]
        # written entries end before num_cached_tokens + one verify block (stale ones past the
        # count are masked and need not move)
        for cache in (self.target_cache, self.draft_cache):
            if cache is not None:
                length = min(cache.max_len, seq.num_cached_tokens + self.block_size)
                cache.k[:, dst, :, :length] = cache.k[:, src, :, :length]
                cache.v[:, dst, :, :length] = cache.v[:, src, :, :length]
        last = self.block_hidden
        if last is not None and src < last.shape[0] and dst < last.shape[0]:
            last[dst] = last[src]
        elif self.ctx_counts[src] and self.gen.drafter is not None:  # context lost: a bug
            raise RuntimeError(f"slot {src} has drafter context but no hidden states to move")
        self.seqs[dst], self.proposers[dst] = seq, self.proposers[src]
        self.ctx_counts[dst] = self.ctx_counts[src]
        self._free(src)

    def _num_rows(self) -> int:
        return max((i + 1 for i, s in enumerate(self.seqs) if s is not None), default=0)

    def _use_rows(self, n: int) -> None:
        """Point the generator's buffers at rows [0, n) of the slot caches (views cached per n,
        so a CUDA graph captured for batch n always sees the same memory)."""
        if n not in self.views:
            draft = self.draft_cache.rows_view(0, n) if self.draft_cache is not None else None
            self.views[n] = (self.target_cache.rows_view(0, n), draft)
        target, draft = self.views[n]
        self.gen._buffers["target"] = (target, self.target_table)
        if draft is not None:
            self.gen._buffers["draft"] = (draft, self.draft_table)

    def _prefill(self, slots: list[int], seqs: list[Sequence]) -> torch.Tensor | None:
        """The prompts into their slots' cache rows (Generator._prefill: one batch, each emits its
        first token); returns the captured hidden states [B, width, *] (None without a drafter)."""
        buffers = (self.target_cache.slot_rows(slots), self.target_table)
        return self.gen._prefill(seqs, self.capture, buffers)

    def _draft_prefill(self, slots: list[int], seqs: list[Sequence], hidden: torch.Tensor) -> None:
        """The prompts' drafter context into the slots' draft cache rows
        (`Generator._draft_prefill`); the rows join the next step with no new context (count 0),
        so every step's context stays one block wide and the step replays its CUDA graphs."""
        buffers = (self.draft_cache.slot_rows(slots), self.draft_table)
        self.gen._draft_prefill(seqs, hidden, buffers)

    # ----------------------------------------------------------------------------------------
    # steps

    def bucket(self, n: int) -> int:
        """The batch width a step over n running rows computes: n up to 8, then the next
        multiple of 4 up to 32, of 8 up to 64, of 16 beyond (at most max_running). The rows
        past n are padding. A few widths can all be captured as CUDA graphs before serving
        (`warmup`); one per n left captures (~0.1 s each at the Qwen3-8B shape) to land in
        the middle of serving whenever a new n came up (docs/LOG.md run 26). Without CUDA
        graphs padding buys nothing: n itself."""
        if not self.gen.use_graphs:
            return n
        step = 1 if n <= 8 else 4 if n <= 32 else 8 if n <= 64 else 16
        return min(-(-n // step) * step, self.max_running)

    @torch.inference_mode()
    def warmup(self) -> int:
        """Capture the CUDA graphs of every step width `step` can meet (each bucket, each
        drafter context width that batch_blocks can leave) by running steps over free rows
        only: padding rows write only into their own free cache rows, which a prefill
        overwrites. Returns the number of steps run (0 without CUDA graphs)."""
        if not self.gen.use_graphs or any(s is not None for s in self.seqs):
            return 0
        buckets = sorted({self.bucket(n) for n in range(1, self.max_running + 1)})
        widths = sorted({self.blocks[b] for b in buckets})
        runs = 0
        for width in widths if self.speculative else [0]:
            for b in buckets:
                self._use_rows(b)
                rows: list[Sequence | None] = [None] * b
                if self.speculative:
                    if self.gen.drafter is not None:  # the context width the last step left
                        shape = (b, width, self.context_dim)
                        self.block_hidden = torch.zeros(
                            shape, device=self.gen.device, dtype=self.gen.dtype
                        )
                    self._speculate(rows)
                else:
                    self._decode(rows)
                runs += 1
        self.block_hidden = None
        return runs

    @torch.inference_mode()
    def step(self) -> StepResult:
        """One forward (AR) or one draft + verify (speculative) for every running sequence."""
        n = self._num_rows()
        if n == 0:
            return StepResult(0, [], [])
        n = self.bucket(n)  # rows past the running ones are padding
        self._use_rows(n)
        rows = self.seqs[:n]
        taken = self._speculate(rows) if self.speculative else self._decode(rows)
        finished = []
        for slot, seq in enumerate(rows):
            if seq is not None and seq.finished:
                finished.append(seq)
                self._free(slot)
        if finished:
            self._compact()
        return StepResult(n, taken, finished)

    def _decode(self, rows: list[Sequence | None]) -> list[int]:
        gen = self.gen
        starts = [s.num_cached_tokens if s else 0 for s in rows]
        ids = torch.tensor([[s.last_token if s else 0] for s in rows], device=gen.device)
        out = gen._target_forward(ids, gen._positions(starts, 1), max(starts) + 1, ())
        tokens = out.tokens[:, -1].tolist()
        return [take_token(seq, token) for seq, token in zip(rows, tokens) if seq is not None]

    def _draft_context(self, rows: list[Sequence | None]) -> tuple[torch.Tensor, list[int]]:
        """Hidden states [n, block, *] of every row's new context (the accepted part of its last
        verify block; none for a row that just joined) and each row's count: one static width,
        so the step replays its graphs."""
        n, k = len(rows), self.block_size
        counts = [self.ctx_counts[b] if s is not None else 0 for b, s in enumerate(rows)]
        last = self.block_hidden
        if last is not None and last.shape[0] >= n:
            return last[:n], counts
        width = last.shape[1] if last is not None else k  # the last step's block width
        shape = (n, width, self.context_dim)
        hidden = torch.zeros(shape, device=self.gen.device, dtype=self.gen.dtype)
        if last is not None:
            hidden[: last.shape[0]] = last
        return hidden, counts

    def _speculate(self, rows: list[Sequence | None]) -> list[int]:
        gen = self.gen
        k = self.blocks[len(rows)]  # narrower for wide batches
        starts = [s.num_cached_tokens if s else 0 for s in rows]
        hidden, counts = None, [0] * len(rows)
        if gen.drafter is not None:
            hidden, counts = self._draft_context(rows)
        # NOTE: padding context rows land at positions >= start, which the drafter masks and a
        # later step overwrites (as in Generator._speculate).
        ctx_first = [st - c for st, c in zip(starts, counts)]
        meta = [[st, c, s.last_token if s else 0] for st, c, s in zip(starts, ctx_first, rows)]
        replay = None
        if self.replay is not None:
            proposals = [
                p.propose([len(s.output_ids)], k - 1)
                if s is not None
                else torch.zeros(1, k - 1, dtype=torch.long)
                for s, p in zip(rows, self.proposers)
            ]
            replay = torch.cat(proposals).to(gen.device)
        draft_kv = max(ctx_first) + hidden.shape[1] if hidden is not None else 0
        packed_d, block_hidden = gen._spec_step(
            hidden,
            torch.tensor(meta).to(gen.device),
            replay,
            draft_kv,
            max(starts) + k,
            self.capture,
            k,
        )
        # the one host synchronisation of a step (as in Generator._speculate)
        packed = packed_d.tolist()
        taken_all = []
        for b, seq in enumerate(rows):
            if seq is not None:
                self.ctx_counts[b] = take_block(seq, packed[b], k)
                taken_all.append(self.ctx_counts[b])
        if gen.drafter is not None:
            self.block_hidden = block_hidden
        return taken_all
