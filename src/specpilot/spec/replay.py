"""Replayed acceptance for benchmarks: drafts from the target's known greedy continuation.

The replay proposer knows each sequence's greedy continuation from an earlier AR run of the same
engine. At every step it draws an acceptance length L from an `AcceptanceProfile` and proposes the
next L - 1 continuation tokens followed by a token that is certainly wrong, so the target accepts
exactly L - 1 drafts and adds its own next token: acceptance length L. Outputs stay the target's own
(verification is unchanged); only the acceptance pattern is chosen. Every result that used it says
`"drafter": "replay"`.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import torch

from specpilot.errors import ConfigError


@dataclass(frozen=True)
class AcceptanceProfile:
    """A distribution of acceptance lengths 1..block_size: weights[L - 1] is P(L)."""

    weights: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.weights or any(w < 0 for w in self.weights) or sum(self.weights) <= 0:
            raise ConfigError("acceptance profile needs non-negative weights with a positive sum")

    @property
    def mean(self) -> float:
        total = sum(self.weights)
        return sum((i + 1) * w for i, w in enumerate(self.weights)) / total

    @classmethod
    def from_mean(cls, tau: float, block_size: int) -> AcceptanceProfile:
        """Two neighbouring lengths, floor(tau) and ceil(tau), mixed to reach mean tau exactly."""
        if not 1.0 <= tau <= block_size:
            raise ConfigError(
                f"replay tau must be in [1, {block_size}] (the block size), got {tau}"
            )
        low = math.floor(tau)
        weights = [0.0] * block_size
        weights[low - 1] = 1.0 - (tau - low)
        if tau > low:
            weights[low] = tau - low
        return cls(tuple(weights))

    @classmethod
    def geometric(cls, tau: float, block_size: int) -> AcceptanceProfile:
        """Every draft accepted with the same probability p (independently), p chosen so that
        the mean is tau: P(L) = p^(L-1) (1 - p) below the block size, the rest at it. A long
        tail, as real drafters have, where `from_mean` puts all weight on two lengths (so that
        a block cut to 8 tokens loses nothing at tau 6.55; here it loses ~1.5 tokens)."""
        if not 1.0 <= tau < block_size:
            raise ConfigError(f"geometric replay tau must be in [1, {block_size}), got {tau}")

        def weights(p: float) -> list[float]:
            return [p ** (n - 1) * (1 - p) for n in range(1, block_size)] + [p ** (block_size - 1)]

        low, high = 0.0, 1.0
        for _ in range(100):  # the mean grows with p: bisection
            mid = (low + high) / 2
            low, high = (mid, high) if cls(tuple(weights(mid))).mean < tau else (low, mid)
        return cls(tuple(weights(low)))

    @classmethod
    def parse(cls, text: str, block_size: int) -> AcceptanceProfile:
        """`6.55` (a mean on two lengths), `geometric:6.55` (a mean with a geometric tail) or a
        histogram `1:0.2,2:0.3,16:0.5` (length:weight)."""
        text = text.strip()
        try:
            if text.startswith("geometric:"):
                return cls.geometric(float(text.removeprefix("geometric:")), block_size)
            if ":" not in text:
                return cls.from_mean(float(text), block_size)
            weights = [0.0] * block_size
            for item in text.split(","):
                length, weight = item.split(":")
                if not 1 <= int(length) <= block_size:
                    raise ConfigError(f"replay length {length} outside 1..{block_size}")
                weights[int(length) - 1] += float(weight)
            return cls(tuple(weights))
        except ValueError:
            raise ConfigError(
                f"bad replay profile {text!r}: give a mean like 6.55, geometric:6.55 "
                "or a histogram like 1:0.5,8:0.5"
            ) from None

    def sample(self, rng: random.Random) -> int:
        return rng.choices(range(1, len(self.weights) + 1), weights=self.weights)[0]


class ReplayProposer:
    """Proposes drafts from known continuations so that acceptance follows a profile."""

    def __init__(
        self,
        continuations: list[list[int]],
        profile: AcceptanceProfile,
        vocab_size: int,
        seed: int = 0,
    ) -> None:
        self.continuations = continuations
        self.profile = profile
        self.vocab_size = vocab_size
        self.rng = random.Random(seed)
        # the continuations as one zero-padded table [B, longest] and their lengths [B]
        longest = max([1] + [len(c) for c in continuations])
        self.table = torch.zeros(len(continuations), longest, dtype=torch.long)
        for b, c in enumerate(continuations):
            self.table[b, : len(c)] = torch.tensor(c, dtype=torch.long)
        self.lengths = torch.tensor([len(c) for c in continuations], dtype=torch.long)

    def sample_lengths(self, rows: int, num_drafts: int) -> list[int]:
        """The next acceptance length of each of `rows` sequences, in row order."""
        return [min(self.profile.sample(self.rng), num_drafts + 1) for _ in range(rows)]

    def propose(self, num_emitted: list[int], num_drafts: int) -> torch.Tensor:
        """Drafts [B, num_drafts] (CPU) for sequences that have emitted num_emitted[b] tokens."""
        lengths = self.sample_lengths(len(num_emitted), num_drafts)
        emitted = torch.tensor(num_emitted, dtype=torch.long)
        return replay_drafts(
            self.table, self.lengths, emitted, lengths, num_drafts, self.vocab_size
        )


def replay_drafts(
    table: torch.Tensor,
    table_lengths: torch.Tensor,
    emitted: torch.Tensor,
    lengths: list[int] | torch.Tensor,
    num_drafts: int,
    vocab: int,
) -> torch.Tensor:
    """Drafts [B, num_drafts] from the continuations (table [B, L], table_lengths [B]) after
    `emitted` [B] tokens, on the tensors' device: the first lengths[b] - 1 are the
    continuation's (0 past its end); the next one is wrong, so that exactly lengths[b] - 1 are
    accepted; later drafts are never looked at, so any token will do. lengths: a list, or
    already a tensor on the device (device_counts)."""
    j = torch.arange(num_drafts, device=table.device)
    index = emitted[:, None] + j
    known = table.gather(1, index.clamp(0, table.shape[1] - 1))
    known = torch.where(index < table_lengths[:, None], known, 0)
    counts = lengths if torch.is_tensor(lengths) else device_counts(lengths, table.device)
    right = j[None, :] < counts[:, None] - 1
    return torch.where(right, known, (known + 1) % vocab)


def device_counts(lengths: list[int], device: torch.device) -> torch.Tensor:
    """Sampled acceptance lengths as an int64 tensor on `device`, queued without waiting."""
    counts = torch.tensor(lengths, dtype=torch.long)
    if device.type == "cuda":
        # NOTE: a copy from pageable memory waits for the stream (every step queued so far):
        # in the pipelined loop, which calls this before launching each step, that made the
        # host wait for the device every step (pipelined replay measured slower than unpipelined
        # at the Qwen3-8B shape, runs 19 and 31); from pinned memory the copy is queued
        return counts.pin_memory().to(device, non_blocking=True)
    return counts.to(device)
