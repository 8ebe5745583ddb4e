"""Random-weight checkpoints at real shapes, written in the Hugging Face / z-lab format.

Speed does not depend on the weights' values, so synthetic Qwen3-8B / Llama-3.1-8B targets and
DFlash-b16 drafters stand in for real ones on machines that cannot download them. Weights are drawn
from a normal distribution (never zeros: zeros can run faster than real data), norms are ones with a
little noise. A byte-level tokenizer with a ChatML template is written beside each target so that
text prompts and `--chat` work on synthetic models too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from specpilot.config import DraftConfig, ModelConfig
from specpilot.errors import ConfigError
from specpilot.models.dflash import DFlashDrafter, default_target_layer_ids
from specpilot.models.target import TargetModel

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|MASK|>"]
CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] "
    "+ '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
    "{% endif %}"
)

TARGET_PRESETS: dict[str, dict[str, Any]] = {
    "tiny": dict(
        model_type="qwen3",
        vocab_size=301,
        hidden_size=64,
        intermediate_size=160,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=24,
        rope_theta=10000.0,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        rms_norm_eps=1e-6,
    ),
    "qwen3-8b": dict(
        model_type="qwen3",
        vocab_size=151936,
        hidden_size=4096,
        intermediate_size=12288,
        num_hidden_layers=36,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        rope_theta=1000000.0,
        max_position_embeddings=40960,
        tie_word_embeddings=False,
        rms_norm_eps=1e-6,
    ),
    # the embedded target's shape (SmolLM2-135M-Instruct), for speed measurements without the GGUF
    "smollm2-135m": dict(
        model_type="llama",
        vocab_size=49152,
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        head_dim=64,
        rope_theta=100000.0,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        rms_norm_eps=1e-5,
    ),
    "llama3.1-8b": dict(
        model_type="llama",
        vocab_size=128256,
        hidden_size=4096,
        intermediate_size=14336,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        rope_theta=500000.0,
        rope_scaling=dict(
            rope_type="llama3",
            factor=8.0,
            low_freq_factor=1.0,
            high_freq_factor=4.0,
            original_max_position_embeddings=8192,
        ),
        max_position_embeddings=131072,
        tie_word_embeddings=False,
        rms_norm_eps=1e-5,
    ),
}
DRAFT_PRESETS: dict[str, dict[str, Any]] = {
    "tiny": dict(num_hidden_layers=2, block_size=8),
    "dflash-b16": dict(num_hidden_layers=5, block_size=16),
    "dflash-b16-l3": dict(num_hidden_layers=3, block_size=16),  # the embedded drafter's shape
}


def target_hf_config(arch: str, preset: str, **overrides: Any) -> dict[str, Any]:
    """A Hugging Face config.json dict for a synthetic target."""
    if preset not in TARGET_PRESETS:
        raise ConfigError(
            f"unknown target preset {preset!r} (choose from {', '.join(TARGET_PRESETS)})"
        )
    hf = dict(TARGET_PRESETS[preset])
    if arch not in ("qwen3", "llama"):
        raise ConfigError(f"--arch {arch} cannot use target preset {preset!r}")
    if hf["model_type"] != arch:
        if preset != "tiny":
            raise ConfigError(f"preset {preset!r} is a {hf['model_type']} model, not {arch}")
        hf["model_type"] = arch
    hf.update(overrides)
    hf["architectures"] = [
        "Qwen3ForCausalLM" if hf["model_type"] == "qwen3" else "LlamaForCausalLM"
    ]
    hf.setdefault("eos_token_id", 2)  # <|im_end|> of the synthetic tokenizer
    hf.setdefault("bos_token_id", 0)
    hf.setdefault("hidden_act", "silu")
    hf.setdefault("torch_dtype", "bfloat16")
    return hf


def draft_hf_config(preset: str, target: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    """A z-lab DFlash config.json dict for a synthetic drafter sized to `target`."""
    if preset not in DRAFT_PRESETS:
        raise ConfigError(
            f"unknown drafter preset {preset!r} (choose from {', '.join(DRAFT_PRESETS)})"
        )
    spec = {**DRAFT_PRESETS[preset], **overrides}
    layers = spec.pop("num_hidden_layers")
    block_size = spec.pop("block_size")
    heads, kv_heads = target["num_attention_heads"], target["num_key_value_heads"]
    hf = dict(
        architectures=["DFlashDraftModel"],
        model_type="qwen3",
        hidden_size=target["hidden_size"],
        intermediate_size=target["intermediate_size"],
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=target.get("head_dim", target["hidden_size"] // heads),
        vocab_size=target["vocab_size"],
        rms_norm_eps=target.get("rms_norm_eps", 1e-6),
        rope_theta=target.get("rope_theta", 10000.0),
        max_position_embeddings=target.get("max_position_embeddings", 4096),
        block_size=block_size,
        num_target_layers=target["num_hidden_layers"],
        dflash_config=dict(
            target_layer_ids=default_target_layer_ids(target["num_hidden_layers"], layers),
            mask_token_id=3,  # <|MASK|> of the synthetic tokenizer
        ),
        torch_dtype="bfloat16",
    )
    hf.update(spec)
    return hf


def randomize(module: torch.nn.Module, seed: int, std: float = 0.02) -> None:
    """Normal weights (std) for matrices, 1 + small noise for norm scales."""
    gens: dict[torch.device, torch.Generator] = {}
    with torch.no_grad():
        for name, param in module.named_parameters():
            if param.device not in gens:
                gens[param.device] = torch.Generator(device=param.device).manual_seed(seed)
            noise = torch.randn(
                param.shape, generator=gens[param.device], device=param.device, dtype=param.dtype
            )
            if param.dim() == 1 and "norm" in name:
                param.copy_(1.0 + 0.1 * noise)
            else:
                param.copy_(std * noise)


def make_decisive(target: torch.nn.Module, scale: float = 1000.0) -> None:
    """Turn a randomized target into one whose greedy output no rounding can change: the token
    embeddings are scaled up until they dominate the residual stream, and the LM head is set to
    them, so the next token is the current one by a margin of ~|e|^2 against bf16 noise of
    ~|e|^2 / 256. For server benchmarks with replayed acceptance: a plain random target's
    logits are so flat that batch composition flips near-ties, the replayed continuation stops
    matching, and acceptance falls far below the profile (docs/LOG.md run 21). Every forward
    does the same work as before (the cost of a step does not depend on weight values)."""
    with torch.no_grad():
        embed = target.model.embed_tokens.weight
        embed.mul_(scale)
        if target.lm_head.weight is not embed:
            target.lm_head.weight.copy_(embed)


def write_tokenizer(out: Path) -> None:
    """A byte-level BPE tokenizer (256 byte tokens after 4 special tokens, no merges) + ChatML."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    byte_chars = pre_tokenizers.ByteLevel.alphabet()
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}
    for ch in sorted(byte_chars):
        vocab[ch] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(SPECIAL_TOKENS)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        bos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        mask_token="<|MASK|>",
    )
    fast.chat_template = CHATML
    fast.save_pretrained(str(out))


def _save(
    module: torch.nn.Module,
    hf: dict[str, Any],
    out: Path,
    dtype: torch.dtype,
    skip: tuple[str, ...] = (),
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tensors = {
        name: t.detach().to(dtype).contiguous()
        for name, t in module.state_dict().items()
        if name not in skip
    }
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(hf, indent=2) + "\n")


def synth_target(
    out: Path,
    hf: dict[str, Any],
    seed: int = 0,
    dtype: torch.dtype = torch.bfloat16,
    device: str = "cpu",
    std: float = 0.02,
) -> ModelConfig:
    cfg = ModelConfig.from_hf(hf)
    if cfg.vocab_size < len(SPECIAL_TOKENS) + 256:
        raise ConfigError("synthetic targets need vocab_size >= 260 (the byte tokenizer)")
    with torch.device(device):
        model = TargetModel(cfg).to(torch.float32 if device == "cpu" else dtype)
    randomize(model, seed, std)
    skip = ("lm_head.weight",) if cfg.tie_word_embeddings else ()
    _save(model, hf, out, dtype, skip)
    write_tokenizer(out)
    return cfg


def synth_drafter(
    out: Path,
    hf: dict[str, Any],
    seed: int = 0,
    dtype: torch.dtype = torch.bfloat16,
    device: str = "cpu",
    std: float = 0.02,
) -> DraftConfig:
    cfg = DraftConfig.from_hf(hf)
    with torch.device(device):
        model = DFlashDrafter(cfg).to(torch.float32 if device == "cpu" else dtype)
    randomize(model, seed, std)
    _save(model, hf, out, dtype)
    return cfg
