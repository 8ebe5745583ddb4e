"""Read llama.cpp GGUF checkpoints as Hugging Face configs and float32 state dicts.

Contract:

* `read_gguf(path)` returns ``(hf_config, state_dict)``. ``hf_config`` is a plain dict in the form
  of a Hugging Face ``config.json`` (``model_type`` "llama" or "qwen3", ``architectures``, sizes,
  ``head_dim``, ``rms_norm_eps``, ``rope_theta``, ``max_position_embeddings``,
  ``tie_word_embeddings``, BOS/EOS ids and ``rope_scaling`` when the file carries any).
  ``state_dict`` maps Hugging Face parameter names (``model.embed_tokens.weight``,
  ``model.layers.N.self_attn.q_proj.weight``, ..., ``model.norm.weight``, and ``lm_head.weight``
  only when the file has an untied ``output`` tensor) to contiguous, writable float32 CPU tensors,
  dequantized with ``gguf.quants.dequantize``. For the llama architecture the q/k row permutation
  that llama.cpp's converter applies is undone, so the weights are exactly in Hugging Face layout.
* `load_gguf_tokenizer(path)` returns the transformers tokenizer (with the file's chat template)
  built from the GGUF metadata.
* Every problem with the file (missing, not GGUF, corrupt, unsupported architecture, unsupported
  quantization type, tensors that contradict the metadata) raises `CheckpointError` with a
  one-line message that names the file. Nothing happens at import time.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from specpilot.errors import CheckpointError

if TYPE_CHECKING:
    from gguf import GGUFReader, ReaderTensor
    from transformers import PreTrainedTokenizerBase

__all__ = ["read_gguf", "load_gguf_tokenizer"]

_GGUF_MAGIC = b"GGUF"

# GGUF architecture name -> (HF model_type, HF architectures entry).
_ARCHITECTURES: dict[str, tuple[str, str]] = {
    "llama": ("llama", "LlamaForCausalLM"),
    "qwen3": ("qwen3", "Qwen3ForCausalLM"),
}

# Global (non-layer) tensors.
_GLOBAL_NAMES: dict[str, str] = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}

# Per-layer tensors: GGUF suffix after "blk.N." -> HF suffix after "model.layers.N.".
_LAYER_NAMES: dict[str, str] = {
    "attn_norm.weight": "input_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
# Qwen3 adds a per-head RMSNorm on queries and keys.
_QK_NORM_NAMES: dict[str, str] = {
    "attn_q_norm.weight": "self_attn.q_norm.weight",
    "attn_k_norm.weight": "self_attn.k_norm.weight",
}

# llama.cpp stores Llama-3 style rope scaling as a per-frequency divisor tensor, not as metadata.
_ROPE_FREQS = "rope_freqs.weight"

_LAYER_RE = re.compile(r"blk\.(\d+)\.(.+)")

# Any of these from the GGUF parser means the bytes on disk are not a well-formed GGUF file.
_PARSE_ERRORS = (ValueError, IndexError, KeyError, TypeError, OverflowError)


def read_gguf(path: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """Return (hf_config, state_dict): hf_config is a dict in Hugging Face config.json form
    (model_type "llama" or "qwen3", architectures, vocab_size, hidden_size, intermediate_size,
    num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim, rms_norm_eps,
    rope_theta, max_position_embeddings, tie_word_embeddings, bos_token_id, eos_token_id, and
    rope_scaling if the file has any); state_dict uses Hugging Face parameter names
    (model.embed_tokens.weight, model.layers.N.self_attn.q_proj.weight, ..., model.norm.weight,
    lm_head.weight only when the file has an untied output tensor), dequantized to float32.

    Raises:
        CheckpointError: the file is missing, not GGUF, corrupt, of an unsupported architecture or
            quantization type, or its tensors do not fit its own metadata.
    """
    file = _check_gguf_file(path)
    reader = _open_reader(file)
    meta = _Metadata(reader, file)

    arch = meta.string("general.architecture")
    if arch not in _ARCHITECTURES:
        supported = ", ".join(sorted(_ARCHITECTURES))
        raise CheckpointError(
            f"unsupported GGUF architecture {arch!r} in {file} (supported: {supported})"
        )
    model_type, hf_arch = _ARCHITECTURES[arch]

    tensors = {t.name: t for t in reader.tensors}
    for required in ("token_embd.weight", "output_norm.weight", "blk.0.attn_q.weight"):
        if required not in tensors:
            raise CheckpointError(f"GGUF file {file} has no tensor {required!r}")

    hidden = meta.integer(f"{arch}.embedding_length")
    n_layers = meta.integer(f"{arch}.block_count")
    n_heads = meta.integer(f"{arch}.attention.head_count")
    n_kv_heads = meta.integer(f"{arch}.attention.head_count_kv", n_heads)
    # The embedding's row count is the real vocabulary size; the metadata key is optional.
    vocab = _hf_shape(tensors["token_embd.weight"])[0]
    # head_dim is not always hidden/heads (Qwen3: 128 with hidden 1024 and 16 heads). Prefer the
    # explicit key length; otherwise the q projection's row count tells us.
    q_rows = _hf_shape(tensors["blk.0.attn_q.weight"])[0]
    if n_heads <= 0 or n_kv_heads <= 0 or n_heads % n_kv_heads:
        raise CheckpointError(
            f"GGUF file {file} has invalid head counts ({n_heads} heads, {n_kv_heads} kv heads)"
        )
    head_dim = meta.integer(f"{arch}.attention.key_length", q_rows // n_heads)
    rope_dims = meta.integer(f"{arch}.rope.dimension_count", head_dim)
    if rope_dims != head_dim:
        raise CheckpointError(
            f"GGUF file {file} uses partial rotary embeddings ({rope_dims} of {head_dim} dims), "
            "which is not supported"
        )
    if head_dim % 2:
        raise CheckpointError(f"GGUF file {file} has an odd head_dim {head_dim}")
    rope_theta = meta.number(f"{arch}.rope.freq_base", 10000.0)

    config: dict[str, Any] = {
        "model_type": model_type,
        "architectures": [hf_arch],
        "vocab_size": vocab,
        "hidden_size": hidden,
        "intermediate_size": meta.integer(f"{arch}.feed_forward_length"),
        "num_hidden_layers": n_layers,
        "num_attention_heads": n_heads,
        "num_key_value_heads": n_kv_heads,
        "head_dim": head_dim,
        "hidden_act": "silu",
        "attention_bias": False,
        "rms_norm_eps": meta.number(f"{arch}.attention.layer_norm_rms_epsilon"),
        "rope_theta": rope_theta,
        "max_position_embeddings": meta.integer(f"{arch}.context_length"),
        "tie_word_embeddings": "output.weight" not in tensors,
        "bos_token_id": meta.integer("tokenizer.ggml.bos_token_id", required=False),
        "eos_token_id": meta.integer("tokenizer.ggml.eos_token_id", required=False),
    }
    if model_type == "llama":
        config["mlp_bias"] = False

    rope_scaling = _rope_scaling_from_metadata(meta, arch)
    if _ROPE_FREQS in tensors:
        if rope_scaling is not None:
            raise CheckpointError(
                f"GGUF file {file} has both rope scaling metadata and a rope_freqs tensor"
            )
        factors = _dequantize(tensors[_ROPE_FREQS], file).reshape(-1)
        rope_scaling = _llama3_rope_scaling(factors, head_dim, rope_theta, file)
    if rope_scaling is not None:
        config["rope_scaling"] = rope_scaling

    names = _hf_names(tensors, n_layers, with_qk_norm=model_type == "qwen3", file=file)
    _check_shapes(tensors, names, config, file)

    state_dict: dict[str, torch.Tensor] = {}
    for gguf_name, hf_name in names.items():
        weight = _dequantize(tensors[gguf_name], file)
        if model_type == "llama" and hf_name.endswith(("q_proj.weight", "k_proj.weight")):
            groups = n_heads if hf_name.endswith("q_proj.weight") else n_kv_heads
            weight = _unpermute_rotary_rows(weight, groups)
        state_dict[hf_name] = torch.from_numpy(np.ascontiguousarray(weight))
    return config, state_dict


def load_gguf_tokenizer(path: str | os.PathLike[str]) -> PreTrainedTokenizerBase:
    """Return the transformers tokenizer stored in a GGUF file (vocabulary, merges, special tokens
    and chat template), built by ``AutoTokenizer.from_pretrained(parent_dir, gguf_file=name)``.

    Raises:
        CheckpointError: the file is missing, not GGUF, or transformers cannot build a tokenizer
            from its metadata.
    """
    file = _check_gguf_file(path)
    # Imported here: transformers is heavy and only needed when a tokenizer is actually built.
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(file.parent), gguf_file=file.name)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(
            f"cannot build a tokenizer from GGUF file {file}: {_one_line(exc)}"
        ) from exc


# --------------------------------------------------------------------------------------------------
# File and metadata access


def _check_gguf_file(path: str | os.PathLike[str]) -> Path:
    """Resolve ``path`` and check, before any parser sees it, that it is a readable GGUF file."""
    file = Path(path).expanduser()
    if not file.exists():
        raise CheckpointError(f"GGUF file not found: {file}")
    if not file.is_file():
        raise CheckpointError(f"GGUF path is not a file: {file}")
    try:
        with file.open("rb") as fh:
            magic = fh.read(len(_GGUF_MAGIC))
    except OSError as exc:
        raise CheckpointError(f"cannot read GGUF file {file}: {_one_line(exc)}") from exc
    if magic != _GGUF_MAGIC:
        raise CheckpointError(f"not a GGUF file (bad magic bytes): {file}")
    return file


def _open_reader(file: Path) -> GGUFReader:
    # Imported here so that importing specpilot does not pull in gguf (and its numpy-heavy modules).
    from gguf import GGUFReader

    try:
        reader = GGUFReader(file)
    except OSError as exc:
        raise CheckpointError(f"cannot read GGUF file {file}: {_one_line(exc)}") from exc
    except _PARSE_ERRORS as exc:
        # The reader turns the raw tensor type id into an enum; an id it does not know is a
        # quantization type newer than the installed gguf package, not a corrupt file.
        if "GGMLQuantizationType" in str(exc):
            raise CheckpointError(
                f"unsupported quantization type in GGUF file {file}: {_one_line(exc)}"
            ) from exc
        raise CheckpointError(f"corrupt or truncated GGUF file {file}: {_one_line(exc)}") from exc
    # Quantized blocks hold little-endian scales that gguf.quants does not byte-swap.
    if getattr(reader, "byte_order", "I") == "S":
        raise CheckpointError(f"big-endian GGUF files are not supported: {file}")
    return reader


class _Metadata:
    """Typed access to GGUF key/value metadata with errors that name the file."""

    def __init__(self, reader: GGUFReader, file: Path) -> None:
        self._reader = reader
        self.file = file

    def _get(self, key: str, required: bool) -> Any:
        field = self._reader.get_field(key)
        if field is None:
            if required:
                raise CheckpointError(f"GGUF file {self.file} lacks metadata key {key!r}")
            return None
        try:
            return field.contents()
        except _PARSE_ERRORS as exc:
            raise CheckpointError(
                f"corrupt metadata {key!r} in GGUF file {self.file}: {_one_line(exc)}"
            ) from exc

    def _bad(self, key: str, value: Any, expected: str) -> CheckpointError:
        return CheckpointError(
            f"GGUF metadata {key!r} in {self.file} is {value!r:.60}, expected {expected}"
        )

    def integer(self, key: str, default: int | None = None, *, required: bool = True) -> Any:
        """An integer value; ``default`` (which makes the key optional) when absent."""
        value = self._get(key, required and default is None)
        if value is None:
            return default
        # bool is an int subclass; a per-layer array (list) is a layout we do not support.
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise self._bad(key, value, "one integer")
        return int(value)

    def number(self, key: str, default: float | None = None, *, required: bool = True) -> Any:
        """A float value; ``default`` (which makes the key optional) when absent."""
        value = self._get(key, required and default is None)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
            raise self._bad(key, value, "a number")
        return float(value)

    def string(self, key: str, *, required: bool = True) -> Any:
        """A string value, or None when absent and not required."""
        value = self._get(key, required)
        if value is not None and not isinstance(value, str):
            raise self._bad(key, value, "a string")
        return value


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# --------------------------------------------------------------------------------------------------
# Rope scaling


def _rope_scaling_from_metadata(meta: _Metadata, arch: str) -> dict[str, Any] | None:
    """Translate ``{arch}.rope.scaling.*`` keys (linear / YaRN) into HF ``rope_scaling``."""
    prefix = f"{arch}.rope.scaling."
    kind = meta.string(prefix + "type", required=False)
    factor = meta.number(prefix + "factor", required=False)
    if kind is None:
        # Older converters wrote only the linear factor.
        kind = "linear" if factor not in (None, 1.0) else "none"
    if kind == "none":
        return None
    if kind not in ("linear", "yarn"):
        raise CheckpointError(f"unsupported rope scaling type {kind!r} in GGUF file {meta.file}")
    if factor is None:
        raise CheckpointError(f"GGUF file {meta.file} lacks metadata key {prefix + 'factor'!r}")
    scaling: dict[str, Any] = {"rope_type": kind, "factor": factor}
    if kind == "yarn":
        original = meta.integer(prefix + "original_context_length", required=False)
        if original is not None:
            scaling["original_max_position_embeddings"] = original
        # Optional YaRN knobs, only when the file sets them (HF has its own defaults).
        for gguf_key, hf_key in (
            ("attn_factor", "attention_factor"),
            ("yarn_beta_fast", "beta_fast"),
            ("yarn_beta_slow", "beta_slow"),
        ):
            value = meta.number(prefix + gguf_key, required=False)
            if value is not None:
                scaling[hf_key] = value
    return scaling


def _llama3_factors(
    inv_freq: np.ndarray, factor: float, low: float, high: float, original: float
) -> np.ndarray:
    """Per-frequency divisors of Llama-3 rope scaling (the quantity llama.cpp stores)."""
    wavelen = 2 * math.pi / inv_freq
    smooth = np.clip((original / wavelen - low) / (high - low), 0.0, 1.0)
    return 1.0 / ((1.0 - smooth) / factor + smooth)


def _llama3_rope_scaling(
    factors: np.ndarray, head_dim: int, theta: float, file: Path
) -> dict[str, Any] | None:
    """Recover HF ``rope_type: llama3`` parameters from llama.cpp's ``rope_freqs`` tensor.

    For each rotary frequency the tensor holds ``1 / ((1 - s) / factor + s)`` with ``s`` clipped to
    [0, 1] and linear in ``u = 1 / wavelength``; with ``low_freq_factor = 1`` (Llama 3.x's value,
    and no loss of generality) ``s = (original * u - 1) / (high - 1)``. The model depends only on
    ``factor`` and the values of ``s`` at its own frequencies, so any ``(high, original)`` that
    reproduces the tensor is exact. With two or more blended (unclipped) frequencies the line is
    fitted; with fewer it is underdetermined and we pick round values that keep the clipped
    frequencies clipped. Every candidate is verified against the tensor; a tensor of another form
    is refused rather than guessed.
    """
    factors = factors.astype(np.float64)
    inv_freq = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    if factors.shape != inv_freq.shape or not np.all(np.isfinite(factors)):
        raise CheckpointError(
            f"GGUF file {file} has a rope_freqs tensor of {factors.size} values, "
            f"expected {inv_freq.size}"
        )
    if np.allclose(factors, 1.0, rtol=0, atol=1e-6):
        return None
    fail = CheckpointError(
        f"unsupported rope_freqs tensor in GGUF file {file} (not Llama-3 style rope scaling)"
    )
    factor = float(factors.max())
    if factor <= 1.0:
        raise fail
    u = inv_freq / (2 * math.pi)  # 1 / wavelength, decreasing with the frequency index
    smooth = (1.0 / factors - 1.0 / factor) / (1.0 - 1.0 / factor)
    tol = 1e-5
    ones, full = smooth >= 1 - tol, smooth <= tol
    mid = ~ones & ~full
    # s must be >= 1 at u_hi and <= 0 at u_lo; blended frequencies lie strictly in between.
    u_hi = float(u[ones].min()) if ones.any() else 2 * float(u.max())
    u_lo = float(u[full].max()) if full.any() else 0.5 * float(u.min())
    if u_lo >= u_hi or np.any(u[mid] <= u_lo) or np.any(u[mid] >= u_hi):
        raise fail

    candidates: list[tuple[float, float]] = []  # (high_freq_factor, original_max_position)
    if mid.sum() >= 2:
        slope, intercept = (float(c) for c in np.polyfit(u[mid], smooth[mid], 1))
        if slope <= 0 or intercept >= 0:
            raise fail
        original, high = -slope / intercept, 1.0 - 1.0 / intercept
        candidates += [(round(high, 4), round(original)), (high, original)]
    elif mid.sum() == 1:
        u1, s1 = float(u[mid][0]), float(smooth[mid][0])
        # Llama 3's own high_freq_factor first; the line through (u1, s1) then fixes original.
        candidates.append((4.0, round((3.0 * s1 + 1.0) / u1)))
        # Otherwise the largest original that keeps s(u_lo) <= 0 and s(u_hi) >= 1, with high
        # from the line through (u1, s1).
        limit = 1.0 / u_lo
        if u1 / s1 > u_hi:
            limit = min(limit, (1.0 / s1 - 1.0) / (u1 / s1 - u_hi))
        for original in (math.floor(limit), limit):
            candidates.append((1.0 + (original * u1 - 1.0) / s1, original))
    else:
        original = math.floor(1.0 / u_lo)  # largest integer with s(u_lo) <= 0
        candidates += [(4.0, original), (original * u_hi, original)]

    for cand_factor in (round(factor, 4), factor):
        for high, original in candidates:
            if high <= 1.0 or original <= 0:
                continue
            expected = _llama3_factors(inv_freq, cand_factor, 1.0, high, original)
            if np.allclose(expected, factors, rtol=1e-5, atol=0):
                return {
                    "rope_type": "llama3",
                    "factor": float(cand_factor),
                    "low_freq_factor": 1.0,
                    "high_freq_factor": float(high),
                    "original_max_position_embeddings": (
                        int(original) if float(original).is_integer() else float(original)
                    ),
                }
    raise fail


# --------------------------------------------------------------------------------------------------
# Tensors


def _hf_names(
    tensors: dict[str, ReaderTensor], n_layers: int, *, with_qk_norm: bool, file: Path
) -> dict[str, str]:
    """Map every GGUF tensor name to its HF name; refuse unknown and missing tensors.

    An unknown tensor would be silently dropped otherwise, which usually means a model variant we
    would run wrongly (biases, extra norms), so it is an error.
    """
    layer_names = dict(_LAYER_NAMES)
    if with_qk_norm:
        layer_names.update(_QK_NORM_NAMES)
    names: dict[str, str] = {}
    for name in tensors:
        if name == _ROPE_FREQS:
            continue  # folded into config["rope_scaling"]
        if name in _GLOBAL_NAMES:
            names[name] = _GLOBAL_NAMES[name]
            continue
        match = _LAYER_RE.fullmatch(name)
        if match is None or match.group(2) not in layer_names or int(match.group(1)) >= n_layers:
            raise CheckpointError(f"unexpected tensor {name!r} in GGUF file {file}")
        names[name] = f"model.layers.{int(match.group(1))}.{layer_names[match.group(2)]}"
    expected = [n for n in _GLOBAL_NAMES if n != "output.weight"] + [
        f"blk.{i}.{suffix}" for i in range(n_layers) for suffix in layer_names
    ]
    missing = [n for n in expected if n not in tensors]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise CheckpointError(f"GGUF file {file} lacks tensor {missing[0]!r}{more}")
    return names


def _hf_shape(tensor: ReaderTensor) -> tuple[int, ...]:
    # GGUF lists dimensions innermost first (ggml's ne[0] is the row length); numpy and torch list
    # them outermost first, so the HF (out_features, in_features) shape is the reverse.
    return tuple(int(d) for d in reversed(tensor.shape.tolist()))


def _check_shapes(
    tensors: dict[str, ReaderTensor], names: dict[str, str], config: dict[str, Any], file: Path
) -> None:
    """Compare every tensor's shape with what the config implies, before any dequantization."""
    hidden = config["hidden_size"]
    vocab = config["vocab_size"]
    head_dim = config["head_dim"]
    q_out = config["num_attention_heads"] * head_dim
    kv_out = config["num_key_value_heads"] * head_dim
    inter = config["intermediate_size"]
    expected: dict[str, tuple[int, ...]] = {
        "model.embed_tokens.weight": (vocab, hidden),
        "lm_head.weight": (vocab, hidden),
        "model.norm.weight": (hidden,),
        "input_layernorm.weight": (hidden,),
        "post_attention_layernorm.weight": (hidden,),
        "self_attn.q_proj.weight": (q_out, hidden),
        "self_attn.k_proj.weight": (kv_out, hidden),
        "self_attn.v_proj.weight": (kv_out, hidden),
        "self_attn.o_proj.weight": (hidden, q_out),
        "self_attn.q_norm.weight": (head_dim,),
        "self_attn.k_norm.weight": (head_dim,),
        "mlp.gate_proj.weight": (inter, hidden),
        "mlp.up_proj.weight": (inter, hidden),
        "mlp.down_proj.weight": (hidden, inter),
    }
    for gguf_name, hf_name in names.items():
        # Layer parameters are keyed by what follows "model.layers.N."; globals by their full name.
        key = hf_name.split(".", 3)[3] if hf_name.startswith("model.layers.") else hf_name
        shape = _hf_shape(tensors[gguf_name])
        if shape != expected[key]:
            raise CheckpointError(
                f"tensor {gguf_name!r} in GGUF file {file} has shape {list(shape)}, "
                f"expected {list(expected[key])} from the file's metadata"
            )


def _dequantize(tensor: ReaderTensor, file: Path) -> np.ndarray:
    """Dequantize one tensor to a float32 array in HF (numpy) shape, not backed by the file."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    _INTEGER_TYPES = (
        GGMLQuantizationType.I8,
        GGMLQuantizationType.I16,
        GGMLQuantizationType.I32,
        GGMLQuantizationType.I64,
    )
    kind = tensor.tensor_type
    try:
        if kind == GGMLQuantizationType.F64:
            # gguf.quants has no F64 path; the reader already typed it as float64.
            array = np.asarray(tensor.data, dtype=np.float32)
        elif kind in _INTEGER_TYPES:
            raise NotImplementedError  # integer tensors are never weights of these models
        else:
            array = dequantize(tensor.data, kind)
    except NotImplementedError as exc:
        raise CheckpointError(
            f"unsupported quantization type {kind.name} for tensor {tensor.name!r} "
            f"in GGUF file {file}"
        ) from exc
    except _PARSE_ERRORS as exc:
        raise CheckpointError(
            f"corrupt tensor {tensor.name!r} in GGUF file {file}: {_one_line(exc)}"
        ) from exc
    array = array.astype(np.float32, copy=False).reshape(_hf_shape(tensor))
    # F32 "dequantization" is a view of the read-only memory map; copy so the tensor is writable
    # and the file can be closed (or replaced) while the weights live on.
    if np.may_share_memory(array, tensor.data):
        array = array.copy()
    return array


def _unpermute_rotary_rows(weight: np.ndarray, n_heads: int) -> np.ndarray:
    """Undo llama.cpp's q/k row permutation for the llama architecture.

    Hugging Face Llama applies rotary embeddings to the two halves of each head (rotate_half):
    dimension j pairs with j + head_dim/2. ggml's llama rope pairs adjacent dimensions (2j, 2j+1),
    so llama.cpp's converter reorders the rows of each head from [first half; second half] to
    interleaved [h0, s0, h1, s1, ...], i.e. GGUF row 2j + c holds HF row c * head_dim/2 + j.
    Viewing each head's rows as (head_dim/2, 2) and swapping those two axes restores HF order.
    ``n_heads`` is the number of heads in this projection (kv heads for k).
    """
    rows = weight.shape[0]
    half = rows // n_heads // 2
    per_head = weight.reshape(n_heads, half, 2, *weight.shape[1:])
    return per_head.swapaxes(1, 2).reshape(weight.shape)
