"""`Sequence`: the one object that carries a request through the engine."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Sequence:
    prompt_ids: list[int]
    max_new_tokens: int
    stop_token_ids: frozenset[int] = frozenset()
    output_ids: list[int] = field(default_factory=list)
    acceptance_lengths: list[int] = field(default_factory=list)  # tokens emitted per decode step
    finish_reason: str | None = None  # "stop" (a stop token was emitted) or "length"
    num_cached_tokens: int = 0  # tokens whose keys/values are in the target's cache
    time_to_first_token_s: float = 0.0
    decode_time_s: float = 0.0  # from the first token to the last
    ar_from_step: int | None = None  # EngineConfig.min_acceptance: the step AR took over at

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    @property
    def last_token(self) -> int:
        return self.output_ids[-1] if self.output_ids else self.prompt_ids[-1]

    def append(self, tokens: list[int]) -> int:
        """Emit tokens up to the first stop token or the token limit; return how many were taken."""
        taken = 0
        for token in tokens:
            if self.finished:
                break
            self.output_ids.append(token)
            taken += 1
            if token in self.stop_token_ids:
                self.finish_reason = "stop"
            elif len(self.output_ids) >= self.max_new_tokens:
                self.finish_reason = "length"
        return taken
