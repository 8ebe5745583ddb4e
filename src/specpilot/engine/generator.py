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

import time
from dataclasses import dataclass

import torch

from specpilot.config import EngineConfig
from specpilot.engine.sequence import Sequence
from specpilot.layers.attention import AttentionMeta, KVCache, causal_mask
from specpilot.layers.rotary import RotaryTable
from specpilot.models.dflash import DFlashDrafter
from specpilot.models.target import TargetModel
from specpilot.spec.accept import accept_greedy
from specpilot.spec.replay import ReplayProposer


@dataclass
class RunStats:
    prefill_s: float
    decode_s: float
    num_steps: int


def _sync(device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


class Generator:
    def __init__(
        self,
        target: TargetModel,
        drafter: DFlashDrafter | None,
        config: EngineConfig,
        device: torch.device,
        dtype: torch.dtype,
    ) -> None:
        self.target, self.drafter, self.config = target, drafter, config
        self.device, self.dtype = device, dtype
        self.block_size = config.block_size or (drafter.config.block_size if drafter else 16)
        self._rotary: dict[str, RotaryTable] = {}

    # ----------------------------------------------------------------------------------------
    # shared pieces

    def _table(self, which: str, max_len: int) -> RotaryTable:
        table = self._rotary.get(which)
        if table is None or table.max_positions < max_len:
            cfg = self.target.config if which == "target" else self.drafter.config
            table = RotaryTable(
                cfg.head_dim,
                cfg.rope_theta,
                cfg.rope_scaling,
                max(max_len, 256),
                self.device,
                self.dtype,
            )
            self._rotary[which] = table
        return table

    def _meta(self, positions: torch.Tensor, kv_len: int, table: RotaryTable) -> AttentionMeta:
        cos, sin = table.lookup(positions)
        return AttentionMeta(positions, cos, sin, causal_mask(positions, kv_len), kv_len)

    def _positions(self, starts: list[int], width: int) -> torch.Tensor:
        base = torch.tensor(starts, device=self.device)[:, None]
        return base + torch.arange(width, device=self.device)[None, :]

    def _new_cache(self, cfg, batch: int, max_len: int) -> KVCache:
        return KVCache(
            cfg.num_layers, batch, cfg.num_kv_heads, max_len, cfg.head_dim, self.device, self.dtype
        )

    def _prefill(
        self, seqs: list[Sequence], cache: KVCache, capture: tuple[int, ...]
    ) -> torch.Tensor | None:
        """Run the prompts, emit each sequence's first token; return captured hidden [B, T, *]."""
        lens = [len(s.prompt_ids) for s in seqs]
        width = max(lens)
        ids = torch.zeros(len(seqs), width, dtype=torch.long)
        for b, s in enumerate(seqs):
            ids[b, : lens[b]] = torch.tensor(s.prompt_ids)
        positions = self._positions([0] * len(seqs), width)
        meta = self._meta(positions, width, self._table("target", cache.max_len))
        rows = torch.tensor(lens, device=self.device) - 1
        out = self.target(ids.to(self.device), meta, cache, capture, logit_rows=rows)
        first = out.logits[:, 0].argmax(dim=-1).tolist()
        for s, token, n in zip(seqs, first, lens):
            s.num_cached_tokens = n
            s.append([token])
        return out.hidden

    # ----------------------------------------------------------------------------------------
    # public loops

    @torch.inference_mode()
    def run(
        self, seqs: list[Sequence], speculative: bool, proposer: ReplayProposer | None = None
    ) -> RunStats:
        """Generate for every sequence in place. speculative=False is plain greedy AR decoding."""
        if speculative and self.drafter is None and proposer is None:
            raise ValueError("speculative decoding needs a drafter or a replay proposer")
        extra = self.block_size + 1 if speculative else 1
        max_len = max(len(s.prompt_ids) + s.max_new_tokens for s in seqs) + extra
        cache = self._new_cache(self.target.config, len(seqs), max_len)
        capture = self.drafter.config.target_layer_ids if (speculative and self.drafter) else ()
        t0 = _sync(self.device)
        hidden = self._prefill(seqs, cache, capture)
        t1 = _sync(self.device)
        for s in seqs:
            s.time_to_first_token_s = t1 - t0
        if speculative:
            steps = self._speculate(seqs, cache, hidden, max_len, proposer)
        else:
            steps = self._decode(seqs, cache)
        t2 = _sync(self.device)
        for s in seqs:
            s.decode_time_s = t2 - t1
        return RunStats(prefill_s=t1 - t0, decode_s=t2 - t1, num_steps=steps)

    def _decode(self, seqs: list[Sequence], cache: KVCache) -> int:
        table = self._table("target", cache.max_len)
        steps = 0
        while not all(s.finished for s in seqs):
            starts = [s.num_cached_tokens for s in seqs]
            ids = torch.tensor([[s.last_token] for s in seqs], device=self.device)
            meta = self._meta(self._positions(starts, 1), max(starts) + 1, table)
            logits = self.target(ids, meta, cache).logits[:, -1]
            tokens = logits.argmax(dim=-1).tolist()
            for s, token in zip(seqs, tokens):
                if not s.finished:
                    s.num_cached_tokens += 1
                    s.acceptance_lengths.append(s.append([token]))
            steps += 1
        return steps

    def _speculate(
        self,
        seqs: list[Sequence],
        cache: KVCache,
        hidden: torch.Tensor | None,
        max_len: int,
        proposer: ReplayProposer | None,
    ) -> int:
        k = self.block_size
        batch = len(seqs)
        table = self._table("target", max_len)
        drafter = self.drafter
        if drafter is not None:
            draft_cache = self._new_cache(drafter.config, batch, max_len + k)
            draft_table = self._table("draft", max_len + k)
            mask_id = drafter.config.mask_token_id
            capture = drafter.config.target_layer_ids
            # context of the first draft: the whole prompt, positions [0, prompt_len)
            ctx_counts = [len(s.prompt_ids) for s in seqs]
        steps = 0
        while not all(s.finished for s in seqs):
            starts = [s.num_cached_tokens for s in seqs]
            anchors = torch.tensor([s.last_token for s in seqs], device=self.device)
            block_pos = self._positions(starts, k)
            drafts = None
            if drafter is not None:
                width = hidden.shape[1]
                # NOTE: padding context rows land at positions >= start, which the drafter masks
                # and the next step overwrites.
                ctx_pos = self._positions([st - n for st, n in zip(starts, ctx_counts)], width)
                block = torch.full((batch, k), mask_id, device=self.device)
                block[:, 0] = anchors
                draft_hidden = drafter(
                    hidden,
                    ctx_pos,
                    self.target.embed(block),
                    block_pos,
                    draft_cache,
                    draft_table,
                    kv_len=max(st - n for st, n in zip(starts, ctx_counts)) + width,
                )
                drafts = self.target.lm_head(draft_hidden[:, 1:]).argmax(dim=-1)
            if proposer is not None:
                emitted = [len(s.output_ids) for s in seqs]
                drafts = proposer.propose(emitted, k - 1).to(self.device)
            block_ids = torch.cat([anchors[:, None], drafts], dim=1)
            meta = self._meta(block_pos, max(starts) + k, table)
            out = self.target(block_ids, meta, cache, capture if drafter else ())
            posterior = out.logits.argmax(dim=-1)
            accepted = accept_greedy(drafts, posterior)
            # the one host synchronisation of a step: tokens and counts for bookkeeping
            drafts_h, posterior_h, accepted_h = (
                drafts.tolist(),
                posterior.tolist(),
                accepted.tolist(),
            )
            new_counts = []
            for b, s in enumerate(seqs):
                if s.finished:
                    new_counts.append(0)
                    continue
                n = accepted_h[b]
                taken = s.append(drafts_h[b][:n] + [posterior_h[b][n]])
                s.acceptance_lengths.append(taken)
                s.num_cached_tokens += taken
                new_counts.append(taken)
            if drafter is not None:
                ctx_counts = new_counts
                hidden = out.hidden[:, : max(max(new_counts), 1)]
            steps += 1
        return steps
