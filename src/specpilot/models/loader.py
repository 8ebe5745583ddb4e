"""Loading checkpoints: local directories, Hugging Face hub ids and GGUF files.

A checkpoint spec is one of
- a local directory with config.json and model.safetensors (or shards named by
  model.safetensors.index.json, or any *.safetensors files),
- a local *.gguf file (dequantized through the `gguf` package),
- a hub id `org/name`, optionally pinned as `org/name@revision`, fetched by huggingface_hub
  (or found in its cache when offline).
Every failure a user can cause is a one-line `CheckpointError` that names the file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from torch import nn

from specpilot.config import DraftConfig, ModelConfig
from specpilot.errors import CheckpointError
from specpilot.models.dflash import DFlashDrafter
from specpilot.models.target import TargetModel

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+(@[\w./-]+)?$")
HUB_PATTERNS = ["*.json", "*.safetensors", "tokenizer*", "*.model", "*.txt", "*.jinja"]


@dataclass
class Checkpoint:
    """A resolved checkpoint: where it lives, its config dict and how to read its tensors."""

    path: Path  # directory, or the .gguf file
    hf_config: dict[str, Any]
    gguf_tensors: dict[str, torch.Tensor] | None = None  # already dequantized (GGUF only)

    @property
    def is_gguf(self) -> bool:
        return self.gguf_tensors is not None

    @property
    def directory(self) -> Path:
        return self.path.parent if self.is_gguf else self.path


def _download(repo_id: str, revision: str | None) -> Path:
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id, revision=revision, allow_patterns=HUB_PATTERNS))
    except Exception as exc:  # huggingface_hub raises many types; all mean "not available"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CheckpointError(
            f"cannot get {repo_id!r}{'@' + revision if revision else ''} from the Hugging Face hub "
            f"and it is not in the local cache ({type(exc).__name__}: {first[:200]})"
        ) from None


def resolve(spec: str | Path) -> Checkpoint:
    """Find a checkpoint and read its config (and, for GGUF, its tensors)."""
    text = str(spec)
    path = Path(text).expanduser()
    if not path.exists():
        if HUB_ID.match(text) and not text.startswith((".", "/", "~")):
            repo_id, _, revision = text.partition("@")
            path = _download(repo_id, revision or None)
        else:
            raise CheckpointError(f"checkpoint not found: {text}")
    if path.is_file():
        if path.suffix != ".gguf":
            raise CheckpointError(f"{path}: expected a checkpoint directory or a .gguf file")
        from specpilot.models.gguf import read_gguf

        config, tensors = read_gguf(path)
        return Checkpoint(path=path, hf_config=config, gguf_tensors=tensors)
    config_file = path / "config.json"
    if not config_file.is_file():
        raise CheckpointError(f"{config_file}: file not found")
    try:
        config = json.loads(config_file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{config_file}: not valid JSON ({exc})") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{config_file}: expected a JSON object")
    return Checkpoint(path=path, hf_config=config)


def _weight_files(directory: Path) -> list[Path]:
    index = directory / "model.safetensors.index.json"
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text())["weight_map"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise CheckpointError(f"{index}: broken index file ({exc})") from None
        files = [directory / name for name in sorted(set(weight_map.values()))]
        for file in files:
            if not file.is_file():
                raise CheckpointError(f"{file}: file not found (named by {index.name})")
        return files
    files = sorted(directory.glob("*.safetensors"))
    if not files:
        raise CheckpointError(f"{directory}/model.safetensors: file not found")
    return files


def read_tensors(
    ckpt: Checkpoint, device: torch.device | None = None, decode_w12: bool = True
) -> dict[str, torch.Tensor]:
    """All tensors of a checkpoint, on the CPU, in their stored dtype; a W12 checkpoint's
    weights decoded to bf16 on `device` (default: the CPU), or left as their W12 arrays."""
    if ckpt.gguf_tensors is not None:
        return ckpt.gguf_tensors
    tensors: dict[str, torch.Tensor] = {}
    for file in _weight_files(ckpt.path):
        try:
            with safe_open(str(file), framework="pt") as handle:
                for name in handle.keys():
                    tensors[name] = handle.get_tensor(name)
        except (SafetensorError, OSError, ValueError) as exc:
            raise CheckpointError(f"{file}: cannot read safetensors ({exc})") from None
    if decode_w12 and "w12" in ckpt.hf_config:  # a W12 checkpoint: its weights decode exactly
        from specpilot.formats.w12_checkpoint import decode_tensors

        decode_tensors(tensors, ckpt.hf_config["w12"], device)
    return tensors


def _populate(
    module: nn.Module,
    tensors: dict[str, torch.Tensor],
    where: Path,
    device: torch.device,
    dtype: torch.dtype,
    optional: tuple[str, ...] = (),
) -> None:
    """Copy tensors into a module built on the meta device, checking names and shapes."""
    expected = dict(module.named_parameters())
    missing = [n for n in expected if n not in tensors and n not in optional]
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise CheckpointError(f"{where}: missing tensors {missing[:3]}{more}")
    loaded: dict[str, torch.Tensor] = {}
    for name, param in expected.items():
        if name not in tensors:
            continue
        tensor = tensors[name]
        if tuple(tensor.shape) != tuple(param.shape):
            raise CheckpointError(
                f"{where}: tensor {name} has shape {tuple(tensor.shape)}, "
                f"the config implies {tuple(param.shape)}"
            )
        loaded[name] = tensor.to(device=device, dtype=dtype)
    module.load_state_dict(loaded, strict=False, assign=True)


def _parse_config(parse: Any, hf: dict[str, Any], where: str) -> Any:
    """`ModelConfig.from_hf` / `DraftConfig.from_hf`, with a bad value (a string where a number
    belongs, a list where a dict belongs) reported as one line instead of a traceback."""
    try:
        return parse(hf, where=where)
    except (TypeError, ValueError, AttributeError) as exc:
        raise CheckpointError(f"{where}: bad value in config ({exc})") from None


def load_target(
    spec: str | Path, device: torch.device, dtype: torch.dtype, keep_w12: bool = False
) -> tuple[TargetModel, Checkpoint]:
    """The target model on `device` in `dtype`. keep_w12 (bf16 only): a W12 checkpoint's
    weights load as they are stored, W12Linear layers (formats/w12_engine.py) holding its
    arrays, instead of decoded: no bf16 copy of them is ever made."""
    ckpt = resolve(spec)
    cfg = _parse_config(ModelConfig.from_hf, ckpt.hf_config, str(ckpt.path))
    with torch.device("meta"):
        model = TargetModel(cfg)
    section = ckpt.hf_config.get("w12") if keep_w12 and dtype == torch.bfloat16 else None
    tensors = read_tensors(ckpt, device, decode_w12=section is None)
    packed = {}
    if section is not None:
        from specpilot.formats.w12_checkpoint import packed_weights

        packed = packed_weights(tensors, section, device)
    optional = ("lm_head.weight",) if cfg.tie_word_embeddings else ()
    _populate(model, tensors, ckpt.path, device, dtype, (*optional, *packed))
    if packed:
        from specpilot.formats.w12_engine import W12Linear, kernels_usable

        kernel = kernels_usable(device)
        for name, weight in packed.items():
            parent_name, _, attr = name.removesuffix(".weight").rpartition(".")
            try:
                parent = model.get_submodule(parent_name)
            except AttributeError:
                parent = None
            if not isinstance(getattr(parent, attr, None), nn.Linear):
                raise CheckpointError(f"{ckpt.path}: W12 tensor {name} is not a linear layer's")
            setattr(parent, attr, W12Linear(weight, kernel))
    if cfg.tie_word_embeddings:
        model.lm_head.weight = model.model.embed_tokens.weight
    return model.eval().requires_grad_(False), ckpt


def load_drafter(
    spec: str | Path, target: ModelConfig, device: torch.device, dtype: torch.dtype
) -> tuple[DFlashDrafter, Checkpoint]:
    ckpt = resolve(spec)
    if ckpt.is_gguf:
        raise CheckpointError(f"{ckpt.path}: a DFlash drafter must be a safetensors directory")
    cfg = _parse_config(DraftConfig.from_hf, ckpt.hf_config, str(ckpt.path / "config.json"))
    cfg.check_fits(target, where=f"drafter {ckpt.path}")
    with torch.device("meta"):
        drafter = DFlashDrafter(cfg)
    _populate(drafter, read_tensors(ckpt), ckpt.path, device, dtype)
    return drafter.eval().requires_grad_(False), ckpt


def load_tokenizer(ckpt: Checkpoint) -> Any | None:
    """The checkpoint's tokenizer (transformers), or None when it ships none."""
    from transformers import AutoTokenizer

    if ckpt.is_gguf:
        from specpilot.models.gguf import load_gguf_tokenizer

        return load_gguf_tokenizer(ckpt.path)
    directory = ckpt.directory
    if not any((directory / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json")):
        return None
    try:
        return AutoTokenizer.from_pretrained(str(directory))
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{directory}: cannot load the tokenizer ({exc})") from None
