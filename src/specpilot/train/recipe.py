"""The DFlash training recipe: a drafter learns the target's next block_size - 1 greedy tokens.

Per step: `batch_size` self-distilled sequences (prompt + the target's greedy answer, cut to
`seq_len`) go through the frozen target once, capturing the hidden states of `target_layer_ids`;
`anchors_per_seq` random anchor positions inside each answer each give a block
[anchor, mask, ..., mask] that the drafter predicts from the context before the anchor
(`train.forward.draft_blocks`, the inference forward's masking, many blocks at once). The loss is
cross-entropy of block rows 1..K-1 against the tokens at anchor+1..anchor+K-1, weighted
exp(-(i-1)/gamma). The drafter has no embeddings or lm_head of its own: the target's (frozen) are
used. AdamW with linear warmup and cosine decay, gradient clipping, bf16 autocast on CUDA (fp32
master weights), fp32 on CPU. DIR/checkpoint/ holds everything a resumed run needs (weights,
optimizer, step, RNG states); DIR itself receives config.json + model.safetensors in the z-lab
DFlash format that `models.loader.load_drafter` reads.
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from tqdm import tqdm

from specpilot.config import DraftConfig, ModelConfig
from specpilot.errors import ConfigError
from specpilot.layers.attention import AttentionMeta, KVCache
from specpilot.layers.rotary import RotaryTable
from specpilot.models.dflash import DFlashDrafter, default_target_layer_ids
from specpilot.models.target import TargetModel
from specpilot.train.data import Example
from specpilot.train.forward import block_loss, decay_weights, draft_blocks

CHECKPOINT = "checkpoint/state.pt"


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 1000
    batch_size: int = 16
    seq_len: int = 2048
    anchors_per_seq: int = 16
    lr: float = 6e-4
    warmup_steps: int = -1  # -1: 4% of steps
    min_lr_ratio: float = 0.1  # cosine decays to lr * min_lr_ratio
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    gamma: float = 7.0  # loss weight decay along the block
    save_every: int = 500
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "anchors_per_seq", "save_every"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.seq_len < 4:
            raise ConfigError(f"seq_len must be >= 4, got {self.seq_len}")
        if self.lr <= 0 or self.gamma <= 0 or self.grad_clip <= 0:
            raise ConfigError("lr, gamma and grad_clip must be > 0")
        if not 0 <= self.min_lr_ratio <= 1:
            raise ConfigError(f"min_lr_ratio must be in [0, 1], got {self.min_lr_ratio}")

    @property
    def warmup(self) -> int:
        return self.warmup_steps if self.warmup_steps >= 0 else max(1, self.steps // 25)

    def lr_at(self, step: int) -> float:
        """Learning rate of step `step` (0-based): linear warmup, then cosine to the floor."""
        if step < self.warmup:
            return self.lr * (step + 1) / self.warmup
        progress = (step - self.warmup) / max(1, self.steps - self.warmup)
        cosine = 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
        return self.lr * (self.min_lr_ratio + (1 - self.min_lr_ratio) * cosine)


def drafter_hf_config(
    target: ModelConfig,
    num_layers: int,
    block_size: int,
    mask_token_id: int,
    intermediate_size: int | None = None,
    hidden_size: int | None = None,
) -> dict[str, Any]:
    """A z-lab DFlash config.json dict for a drafter of `target` (what `load_drafter` reads)."""
    if hidden_size not in (None, target.hidden_size):
        # NOTE: the drafter reads the target's embeddings and feeds the target's lm_head.
        raise ConfigError(
            f"hidden size {hidden_size} differs from the target's {target.hidden_size}: a DFlash "
            "drafter shares the target's embeddings and lm_head, so it must match"
        )
    if num_layers <= 0 or block_size < 2:
        raise ConfigError("the drafter needs >= 1 layer and block_size >= 2")
    if not 0 <= mask_token_id < target.vocab_size:
        raise ConfigError(f"mask_token_id {mask_token_id} is outside the vocabulary")
    hf: dict[str, Any] = dict(
        architectures=["DFlashDraftModel"],
        model_type="qwen3",
        hidden_size=target.hidden_size,
        intermediate_size=intermediate_size or target.intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=target.num_heads,
        num_key_value_heads=target.num_kv_heads,
        head_dim=target.head_dim,
        vocab_size=target.vocab_size,
        rms_norm_eps=target.rms_norm_eps,
        rope_theta=target.rope_theta,
        max_position_embeddings=target.max_position_embeddings,
        block_size=block_size,
        num_target_layers=target.num_layers,
        dflash_config=dict(
            target_layer_ids=default_target_layer_ids(target.num_layers, num_layers),
            mask_token_id=mask_token_id,
        ),
        torch_dtype="bfloat16",
    )
    if target.rope_scaling.rope_type != "default":
        hf["rope_scaling"] = asdict(target.rope_scaling)
    return hf


def init_drafter(cfg: DraftConfig, device: torch.device, seed: int) -> DFlashDrafter:
    """fp32 drafter: normal(0, 0.02) matrices, unit norm scales."""
    drafter = DFlashDrafter(cfg).to(device=device, dtype=torch.float32)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    with torch.no_grad():
        for name, param in drafter.named_parameters():
            if param.dim() == 1 and "norm" in name:
                param.fill_(1.0)
            else:
                param.copy_(0.02 * torch.randn(param.shape, generator=gen))
    return drafter


@dataclass
class Batch:
    input_ids: torch.Tensor  # [B, T] right padded
    anchor_pos: torch.Tensor  # [B, A]
    labels: torch.Tensor  # [B, A, K-1]: tokens at anchor+1.., -100 past the end or for padding
    num_tokens: int  # real tokens (not padding) in input_ids


def usable(examples: list[Example], seq_len: int) -> list[Example]:
    """Examples with at least one anchor inside the answer once cut to seq_len."""
    return [e for e in examples if min(len(e.ids), seq_len) - len(e.prompt_ids) >= 2]


def sample_batch(
    examples: list[Example], cfg: TrainConfig, block_size: int, gen: torch.Generator
) -> Batch:
    """`batch_size` random examples, `anchors_per_seq` distinct anchors each (fewer exist:
    the rest are padding anchors whose labels are all ignored)."""
    picks = torch.randint(len(examples), (cfg.batch_size,), generator=gen).tolist()
    seqs = [examples[i].ids[: cfg.seq_len] for i in picks]
    width = max(len(s) for s in seqs)
    a, k = cfg.anchors_per_seq, block_size
    ids = torch.zeros(len(seqs), width, dtype=torch.long)
    anchor_pos = torch.zeros(len(seqs), a, dtype=torch.long)
    labels = torch.full((len(seqs), a, k - 1), -100, dtype=torch.long)
    for b, (i, seq) in enumerate(zip(picks, seqs)):
        ids[b, : len(seq)] = torch.tensor(seq)
        first = len(examples[i].prompt_ids)  # anchors: answer positions with a next token
        choices = first + torch.randperm(len(seq) - 1 - first, generator=gen)[:a]
        anchor_pos[b, : len(choices)] = choices
        anchor_pos[b, len(choices) :] = first  # padding anchors: masked out by their labels
        for j, p in enumerate(choices.tolist()):
            nxt = seq[p + 1 : p + k]
            labels[b, j, : len(nxt)] = torch.tensor(nxt)
    return Batch(ids, anchor_pos, labels, sum(len(s) for s in seqs))


class Trainer:
    """Owns the drafter, the optimizer and the step; the target is frozen and shared."""

    def __init__(
        self,
        target: TargetModel,
        drafter: DFlashDrafter,
        hf_config: dict[str, Any],
        examples: list[Example],
        cfg: TrainConfig,
        device: torch.device,
    ) -> None:
        self.target, self.drafter, self.hf_config, self.cfg = target, drafter, hf_config, cfg
        self.device = device
        self.examples = usable(examples, cfg.seq_len)
        if not self.examples:
            raise ConfigError("no training example has an answer inside --seq-len")
        self.block_size = drafter.config.block_size
        self.autocast = device.type == "cuda"  # bf16 autocast; fp32 on CPU
        decay = [p for p in drafter.parameters() if p.dim() >= 2]
        other = [p for p in drafter.parameters() if p.dim() < 2]
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": other}],
            lr=cfg.lr,
            betas=(0.9, 0.95),
            weight_decay=0.0,
        )
        self.gen = torch.Generator().manual_seed(cfg.seed)
        self.step = 0
        self.weights = decay_weights(self.block_size, cfg.gamma, device)
        tcfg = target.config
        self.target_dtype = target.model.embed_tokens.weight.dtype
        self.rotary = RotaryTable(
            drafter.config.head_dim,
            drafter.config.rope_theta,
            drafter.config.rope_scaling,
            cfg.seq_len + self.block_size,
            device,
            torch.float32,
        )
        self.target_rotary = RotaryTable(
            tcfg.head_dim,
            tcfg.rope_theta,
            tcfg.rope_scaling,
            cfg.seq_len,
            device,
            self.target_dtype,
        )

    # ----------------------------------------------------------------------------------------

    @torch.no_grad()
    def target_hidden(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Captured hidden states [B, T, layers * hidden] of the whole sequences (causal)."""
        tcfg = self.target.config
        batch, width = input_ids.shape
        cache = KVCache(
            tcfg.num_layers,
            batch,
            tcfg.num_kv_heads,
            width,
            tcfg.head_dim,
            self.device,
            self.target_dtype,
        )
        positions = torch.arange(width, device=self.device)[None, :].expand(batch, -1)
        meta = AttentionMeta.causal(positions, width, self.target_rotary)
        rows = torch.zeros(batch, dtype=torch.long, device=self.device)  # logits: one row only
        out = self.target(input_ids, meta, cache, self.drafter.config.target_layer_ids, rows)
        return out.hidden

    def loss(self, batch: Batch) -> torch.Tensor:
        ids = batch.input_ids.to(self.device)
        anchor_pos = batch.anchor_pos.to(self.device)
        labels = batch.labels.to(self.device)
        hidden = self.target_hidden(ids)
        block = torch.full(
            (*anchor_pos.shape, self.block_size),
            self.drafter.config.mask_token_id,
            device=ids.device,
        )
        block[:, :, 0] = ids.gather(1, anchor_pos)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.autocast):
            embeds = self.target.embed(block)
            out = draft_blocks(self.drafter, hidden, embeds, anchor_pos, self.rotary)
            logits = self.target.lm_head(out[:, :, 1:])
        return block_loss(logits, labels, self.weights)

    def train_step(self) -> tuple[float, int]:
        """One optimizer step; returns (loss, real tokens in the batch)."""
        for group in self.optimizer.param_groups:
            group["lr"] = self.cfg.lr_at(self.step)
        batch = sample_batch(self.examples, self.cfg, self.block_size, self.gen)
        loss = self.loss(batch)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.drafter.parameters(), self.cfg.grad_clip)
        self.optimizer.step()
        self.step += 1
        return loss.item(), batch.num_tokens

    @torch.no_grad()
    def eval_loss(self, num_batches: int = 4, seed: int = 1234) -> float:
        """Mean loss on fixed batches (same ones every call): the before/after measure."""
        gen = torch.Generator().manual_seed(seed)
        losses = [
            self.loss(sample_batch(self.examples, self.cfg, self.block_size, gen)).item()
            for _ in range(num_batches)
        ]
        return sum(losses) / len(losses)

    # ----------------------------------------------------------------------------------------
    # checkpoints

    def save_checkpoint(self, out: Path) -> None:
        path = out / CHECKPOINT
        path.parent.mkdir(parents=True, exist_ok=True)
        state = {
            "step": self.step,
            "drafter": self.drafter.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "hf_config": self.hf_config,
            "train_config": asdict(self.cfg),
            "rng": {
                "batches": self.gen.get_state(),
                "torch": torch.get_rng_state(),
                "python": random.getstate(),
                "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
            },
        }
        tmp = path.with_suffix(".tmp")
        torch.save(state, tmp)
        tmp.replace(path)  # never a half-written checkpoint

    def load_checkpoint(self, out: Path) -> None:
        path = out / CHECKPOINT
        state = torch.load(path, map_location=self.device, weights_only=False)
        if state["hf_config"] != self.hf_config:
            raise ConfigError(f"{path}: saved for another drafter shape; use a new --out")
        self.drafter.load_state_dict(state["drafter"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.step = state["step"]
        rng = state["rng"]
        self.gen.set_state(rng["batches"])
        torch.set_rng_state(rng["torch"])
        random.setstate(rng["python"])
        if rng["cuda"] is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(rng["cuda"])

    def save_drafter(self, out: Path, dtype: torch.dtype, shard_mb: float = 0) -> None:
        """config.json + model.safetensors (z-lab DFlash format); with shard_mb > 0, shards of at
        most that size + model.safetensors.index.json (Hugging Face layout; the loader reads
        both), for transports that limit file sizes."""
        out.mkdir(parents=True, exist_ok=True)
        tensors = {
            n: t.detach().to(dtype).contiguous() for n, t in self.drafter.state_dict().items()
        }
        for old in [*out.glob("model*.safetensors"), out / "model.safetensors.index.json"]:
            old.unlink(missing_ok=True)
        (out / "config.json").write_text(json.dumps(self.hf_config, indent=2) + "\n")
        limit = int(shard_mb * 2**20)
        shards: list[dict[str, torch.Tensor]] = [{}]
        size = 0
        for name, tensor in tensors.items():
            nbytes = tensor.numel() * tensor.element_size()
            if limit and shards[-1] and size + nbytes > limit:
                shards.append({})
                size = 0
            shards[-1][name] = tensor
            size += nbytes
        if len(shards) == 1:
            save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
            return
        weight_map = {}
        for i, shard in enumerate(shards):
            file = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
            save_file(shard, str(out / file), metadata={"format": "pt"})
            weight_map.update(dict.fromkeys(shard, file))
        index = {"metadata": {}, "weight_map": weight_map}
        (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")

    # ----------------------------------------------------------------------------------------

    def run(self, out: Path, progress: bool = True, max_seconds: float = 0.0) -> dict[str, Any]:
        """Train up to cfg.steps (from the current step), checkpointing on the way; with
        max_seconds > 0, stop after the step that crosses that much training time (the schedule
        still follows cfg.steps, so a stopped run ends at a higher learning rate)."""
        start_step = self.step
        tokens, losses = 0, []
        t0 = time.perf_counter()
        bar = tqdm(
            total=self.cfg.steps,
            initial=self.step,
            desc="train-drafter",
            disable=not progress,
            dynamic_ncols=True,
            file=sys.stderr,
        )
        while self.step < self.cfg.steps:
            loss, n = self.train_step()
            tokens += n
            losses.append(loss)
            elapsed = time.perf_counter() - t0
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.4f}", tok_s=f"{tokens / elapsed:.0f}")
            stop = 0 < max_seconds <= elapsed
            if self.step % self.cfg.save_every == 0 or self.step == self.cfg.steps or stop:
                self.save_checkpoint(out)
            if stop:
                break
        bar.close()
        elapsed = time.perf_counter() - t0
        tail = losses[-10:]
        return {
            "steps": self.step,
            "steps_this_run": self.step - start_step,
            "final_loss": sum(tail) / len(tail) if tail else None,
            "tokens_per_s": tokens / elapsed if elapsed > 0 else 0.0,
            "train_time_s": elapsed,
            "stopped_at_time_limit": self.step < self.cfg.steps,
        }
