"""`LLM`: the Python entry point. Loads a target (and a drafter), tokenizes, generates, reports.

    llm = LLM("path/to/target", draft="path/to/drafter", device="cuda", dtype="bfloat16")
    out = llm.generate("Why is the sky blue?", max_new_tokens=128, chat=True)[0]
    out.output_ids, out.text, out.acceptance_lengths, out.tokens_per_s

`draft` may also be `replay:TAU` (replayed acceptance, no drafter compute); with a real drafter,
`replay=` substitutes replayed proposals after the drafter's real forward (honest timings,
chosen acceptance).
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from specpilot.config import EngineConfig, resolve_device, resolve_dtype
from specpilot.engine.generator import Generator
from specpilot.engine.sequence import Sequence
from specpilot.errors import ConfigError
from specpilot.formats import w12
from specpilot.models.loader import load_drafter, load_target, load_tokenizer
from specpilot.spec.forcing import ForcingReport, token_forcing
from specpilot.spec.replay import AcceptanceProfile

REPLAY_PREFIX = "replay:"


@dataclass
class GenerationOutput:
    prompt_ids: list[int]
    output_ids: list[int]
    text: str | None
    num_steps: int
    acceptance_lengths: list[int]
    tokens_per_s: float  # output tokens after the first / decode time (prefill excluded)
    time_to_first_token_s: float
    decode_time_s: float
    drafter: str  # "none" (AR), "dflash" or "replay"
    finish_reason: str
    ar_from_step: int | None = None  # EngineConfig.min_acceptance: the step AR took over at

    @property
    def mean_acceptance_length(self) -> float:
        steps = self.acceptance_lengths
        return sum(steps) / len(steps) if steps else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "mean_acceptance_length": self.mean_acceptance_length}


class LLM:
    MAX_REPLAY_PASSES = 8

    def __init__(
        self,
        target: str | Path,
        draft: str | Path | None = None,
        device: str = "auto",
        dtype: str = "auto",
        engine: EngineConfig | None = None,
        replay: str | float | None = None,
        seed: int = 0,
    ) -> None:
        self.device = resolve_device(device)
        if dtype == "auto":
            dtype = "bfloat16" if self.device.type == "cuda" else "float32"
        self.dtype = resolve_dtype(dtype)
        self.engine_config = engine or EngineConfig()
        # a W12 checkpoint loads as W12 layers where the engine may run them (weights auto or
        # w12, resolved below), with no bf16 copy of its weights on the way
        keep_w12 = self.engine_config.weights in ("auto", "w12")
        self.target, self.target_checkpoint = load_target(
            target, self.device, self.dtype, keep_w12=keep_w12
        )
        # (dtype, a copy of the target in it) for token forcing, made on first use
        self._reference: tuple[torch.dtype, torch.nn.Module] | None = None
        self.tokenizer = load_tokenizer(self.target_checkpoint)
        self.drafter = None
        replay_text = None if replay is None else str(replay)
        draft_text = None if draft is None else str(draft)
        if draft_text is not None and draft_text.startswith(REPLAY_PREFIX):
            if replay_text is not None:
                raise ConfigError("give the replay profile once: draft='replay:TAU' or replay=TAU")
            replay_text = draft_text[len(REPLAY_PREFIX) :]
        elif draft_text is not None:
            self.drafter, _ = load_drafter(draft_text, self.target.config, self.device, self.dtype)
        self.engine_config = self._resolve_weights(self.engine_config)
        if self.engine_config.weights == "w12":  # convert on load, before the fused forwards
            from specpilot.formats.w12_engine import convert_model, keep_matrices

            if self.dtype != torch.bfloat16:
                raise ConfigError(f"weights=w12 needs dtype bfloat16, not {dtype}")
            matrices = self.engine_config.w12_matrix_set(self._head_certified())
            # the rest of a W12 checkpoint's model (an untied head, the drafter) in its group size
            stored = self.target_checkpoint.hf_config.get("w12") or {}
            group = stored.get("group_size", w12.DEFAULT_GROUP_SIZE)
            keep_matrices(self.target, matrices)  # its stored W12 layers beyond w12_matrices
            for model in (self.target, self.drafter):
                if model is not None:
                    convert_model(model, group_size=group, matrices=matrices)
        self.generator = Generator(
            self.target, self.drafter, self.engine_config, self.device, self.dtype
        )
        block = self.generator.block_size
        self.replay = None if replay_text is None else AcceptanceProfile.parse(replay_text, block)
        self.seed = seed

    def _head_certified(self) -> bool:
        """Whether the engine will certify verify blocks' LM heads (EngineConfig.target_head)
        once the head is plain bf16 (w12_matrices "auto" then leaves it so)."""
        from specpilot.engine.generator import certifies_verify_heads

        config = self.engine_config
        if config.target_head == "auto" and config.kernels == "torch":  # no fused forwards
            return False
        shape = tuple(self.target.lm_head.weight.shape)
        return certifies_verify_heads(config.target_head, shape, self.device)

    def _resolve_weights(self, config: EngineConfig) -> EngineConfig:
        """EngineConfig.weights "auto" as the weights this model holds: "w12" for a W12
        checkpoint loaded in bfloat16, else "bf16" (where w12_matrices then names matrices,
        a clear error)."""
        if config.weights != "auto":
            return config
        w12_checkpoint = "w12" in self.target_checkpoint.hf_config
        weights = "w12" if w12_checkpoint and self.dtype == torch.bfloat16 else "bf16"
        if weights == "bf16" and config.w12_matrices != "all":
            why = f"loaded in {self.dtype}" if w12_checkpoint else "not a W12 checkpoint"
            raise ConfigError(
                f"w12_matrices={config.w12_matrices!r} needs weights='w12' or a W12 checkpoint "
                f"loaded in bfloat16; weights='auto' resolves to bf16 here (the target is {why})"
            )
        return dataclasses.replace(config, weights=weights)

    @property
    def drafter_kind(self) -> str:
        if self.replay is not None:
            return "replay"
        return "dflash" if self.drafter is not None else "none"

    # ----------------------------------------------------------------------------------------

    def encode(self, prompt: str, chat: bool = False) -> list[int]:
        if self.tokenizer is None:
            raise ConfigError("this checkpoint ships no tokenizer: pass token ids instead of text")
        if chat:
            if not getattr(self.tokenizer, "chat_template", None):
                raise ConfigError("this checkpoint's tokenizer has no chat template")
            text = self.tokenizer.apply_chat_template(
                [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
            )
            return self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return self.tokenizer(prompt)["input_ids"]

    def decode(self, ids: list[int]) -> str | None:
        if self.tokenizer is None:
            return None
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def default_stop_ids(self) -> frozenset[int]:
        ids = set(self.target.config.eos_token_ids)
        if self.tokenizer is not None and self.tokenizer.eos_token_id is not None:
            ids.add(int(self.tokenizer.eos_token_id))
        return frozenset(ids)

    def _check_prompt(self, ids: list[int], max_new_tokens: int) -> None:
        cfg = self.target.config
        if not ids:
            raise ConfigError("the prompt is empty")
        bad = [t for t in ids if not 0 <= t < cfg.vocab_size]
        if bad:
            raise ConfigError(
                f"prompt token ids {bad[:3]} are outside the vocabulary ({cfg.vocab_size})"
            )
        if len(ids) + max_new_tokens > cfg.max_position_embeddings:
            raise ConfigError(
                f"prompt ({len(ids)} tokens) + max_new_tokens ({max_new_tokens}) exceeds the "
                f"context length ({cfg.max_position_embeddings})"
            )

    def generate(
        self,
        prompts: str | list[int] | list[str] | list[list[int]],
        max_new_tokens: int = 128,
        chat: bool = False,
        stop_token_ids: list[int] | None = None,
        ignore_eos: bool = False,
        speculative: bool = True,
    ) -> list[GenerationOutput]:
        """Greedy generation for one prompt or a batch (text or token ids); speculative=False
        decodes without the drafter (the AR baseline of the same engine)."""
        if max_new_tokens <= 0:
            raise ConfigError(f"max_new_tokens must be > 0, got {max_new_tokens}")
        if isinstance(prompts, str) or (prompts and isinstance(prompts[0], int)):
            prompts = [prompts]  # type: ignore[list-item]
        if not prompts:
            raise ConfigError("no prompts given")
        ids_list = [p if isinstance(p, list) else self.encode(p, chat) for p in prompts]
        for ids in ids_list:
            self._check_prompt(ids, max_new_tokens)
        stops = (
            frozenset()
            if ignore_eos
            else (
                frozenset(stop_token_ids) if stop_token_ids is not None else self.default_stop_ids()
            )
        )

        def fresh() -> list[Sequence]:
            return [Sequence(list(ids), max_new_tokens, stops) for ids in ids_list]

        if self.replay is None or not speculative:
            seqs = fresh()
            self.generator.run(seqs, speculative=speculative and self.drafter is not None)
            kind = self.drafter_kind if speculative else "none"
            return [self._output(s, kind) for s in seqs]
        seqs, _ = self.generator.run_replay(fresh, self.replay, self.seed, self.MAX_REPLAY_PASSES)
        return [self._output(s, self.drafter_kind) for s in seqs]

    def _output(self, s: Sequence, drafter: str) -> GenerationOutput:
        after_first = len(s.output_ids) - 1
        return GenerationOutput(
            prompt_ids=s.prompt_ids,
            output_ids=s.output_ids,
            text=self.decode(s.output_ids),
            num_steps=len(s.acceptance_lengths),
            acceptance_lengths=s.acceptance_lengths,
            tokens_per_s=after_first / s.decode_time_s if s.decode_time_s > 0 else 0.0,
            time_to_first_token_s=s.time_to_first_token_s,
            decode_time_s=s.decode_time_s,
            drafter=drafter,
            finish_reason=s.finish_reason or "length",
            ar_from_step=s.ar_from_step,
        )

    def validate(
        self,
        prompt_ids: list[int],
        output_ids: list[int],
        threshold: float | None = None,
        reference_dtype: str | None = "float32",
    ) -> ForcingReport:
        """Token forcing of one output against this LLM's target, teacher-forced through the
        PyTorch modules. reference_dtype "float32" (default): a float32 copy of the target, made
        once, so that an output generated in bf16 is measured against exact-as-possible
        arithmetic rather than against a second bf16 run with its own rounding (on the embedded
        SmolLM2 on the H200, bf16 vs bf16 left one margin above the bf16 threshold: docs/LOG.md
        run 16); None: the target as loaded."""
        reference = self._forcing_reference(reference_dtype)
        return token_forcing(reference, prompt_ids, output_ids, threshold, self.dtype)

    def _forcing_reference(self, dtype_name: str | None) -> torch.nn.Module:
        dtype = None if dtype_name is None else resolve_dtype(dtype_name)
        if dtype is None or dtype == self.dtype:
            return self.target
        held = self._reference
        if held is None or held[0] != dtype:
            import copy

            from specpilot.formats.w12_engine import dequantize_model

            model = dequantize_model(copy.deepcopy(self.target))  # W12 linears -> nn.Linear
            held = (dtype, model.to(dtype))
            self._reference = held
        return held[1]
