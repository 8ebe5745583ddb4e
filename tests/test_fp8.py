"""The FP8 draft head (formats/fp8.py, EngineConfig.draft_head "fp8"): the format's rounding
bound, the skinny kernel with FP8 weights against its PyTorch arithmetic, and generation that
stays the target's own while the drafter proposes through the FP8 head (PyTorch path and the
fused kernels; the interpreter without CUDA)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from specpilot.config import EngineConfig
from specpilot.engine.generator import Generator
from specpilot.engine.llm import LLM
from specpilot.formats import fp8
from specpilot.formats.fp8 import Fp8Weight
from specpilot.formats.w12_engine import linear
from specpilot.kernels.linear import skinny_linear, tile_config
from tests.test_kernels import (  # conftest sets TRITON_INTERPRET=1 without CUDA
    BF16,
    CUDA,
    DEVICE,
    SPEC_TOKENS,
    _sequences,
    _tiny_pair,
    assert_forced,
    close,
    record_drafts,
)

# the engine's generations and forwards: attention merged in blocks in the interpreter
pytestmark = pytest.mark.block_merge


def _rounding_bound(w: torch.Tensor, q: Fp8Weight) -> torch.Tensor:
    """Half an e4m3 step at each weight: 2^-4 of its magnitude (3 mantissa bits) where it is
    normal in its row's scale, else half the subnormal step 2^-9 times the scale."""
    return torch.maximum(w.abs() * 2.0**-4, q.scale[:, None] * 2.0**-10)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 9),
    cols=st.integers(1, 40),
    spread=st.floats(-30, 30),
    seed=st.integers(0, 2**16),
)
def test_quantize_rounds_each_weight_to_nearest(rows, cols, spread, seed) -> None:
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(rows, cols, generator=gen) * 2.0**spread
    w[0, 0] = 0.0
    if rows > 1:
        w[1] = 0.0  # a row of zeros: scale 1, all zeros back
    q = fp8.quantize(w.to(BF16))
    back = q.dequantize()
    wf = w.to(BF16).float()
    assert ((back - wf).abs() <= _rounding_bound(wf, q) * (1 + 1e-6)).all()
    # each row's largest magnitude is exactly e4m3's largest, so it comes back to ~1 ulp
    peak = wf.abs().amax(1)
    assert torch.allclose(back.abs().amax(1), peak, rtol=2**-20)
    if rows > 1:
        assert q.scale[1] == 1 and not back[1].any()


def test_fp8_weight_checks_its_parts() -> None:
    q = fp8.quantize(torch.randn(4, 8))
    assert q.shape == (4, 8) and q.nbytes() == 4 * 8 + 4 * 4
    with pytest.raises(ValueError, match="float8_e4m3fn"):
        Fp8Weight(torch.zeros(4, 8), q.scale)
    with pytest.raises(ValueError, match="scale must be float32"):
        Fp8Weight(q.weight, q.scale[:3])
    with pytest.raises(ValueError, match="finite"):
        fp8.quantize(torch.tensor([[1.0, float("inf")]]))
    with pytest.raises(ValueError, match="2-D float"):
        fp8.quantize(torch.ones(3, dtype=torch.int32))


@pytest.mark.parametrize("m", [1, 2, 15, 16, 33])
@pytest.mark.parametrize("norm", [False, True])
def test_skinny_linear_with_fp8_weights(m: int, norm: bool) -> None:
    """The kernel's sums against fp8_linear_reference's (same inputs in fp16, same weights, same
    scales): only the summation order differs."""
    gen = torch.Generator().manual_seed(m + 100 * norm)
    n, k = 70, 96
    x = torch.randn(m, k, generator=gen).to(DEVICE, BF16)
    w = fp8.quantize((torch.randn(n, k, generator=gen) * k**-0.5 * 3).to(DEVICE))
    kw = {}
    if norm:
        kw = dict(norm_weight=(torch.rand(k, generator=gen) + 0.5).to(DEVICE, BF16), eps=1e-6)
    got = skinny_linear(x, w, **kw)
    assert got.shape == (m, n) and got.dtype == BF16
    want = fp8.fp8_linear_reference(x, w, **kw)
    close(got, want, 4 if norm else 2)
    cfg = tile_config(m, n, k)
    if cfg["USE_DOT"]:  # the weights as the left operand: the same sums, transposed
        left = skinny_linear(x, w, config=cfg | {"W_LEFT": True}, **kw)
        close(left, want, 4 if norm else 2)
    # and the same as the bf16 multiply by the dequantized weights, to the fp16 rounding of x
    plain = fp8.fp8_linear_reference(x.to(torch.float16).to(BF16), w, **kw) if not norm else None
    if plain is not None:
        close(got, plain, 2)


def test_wide_fp8_multiplies(monkeypatch) -> None:
    """Past the skinny kernel's 64 rows: 64-row slices of the skinny multiply (the reference's
    sums), and past FP8_WIDE_SLICES of them the weights widened to bf16 (weight and scale
    rounded, then their product) for a plain multiply: within those roundings."""
    from specpilot.formats import w12_engine

    gen = torch.Generator().manual_seed(3)
    x = torch.randn(80, 64, generator=gen).to(DEVICE, BF16)
    res = torch.randn(80, 40, generator=gen).to(DEVICE, BF16)
    w = fp8.quantize(torch.randn(40, 64, generator=gen).to(DEVICE) * 0.1)
    want = fp8.fp8_linear_reference(x, w)
    close(linear(x, w), want)
    slices = [skinny_linear(x[i : i + 64], w, residual=res[i : i + 64]) for i in (0, 64)]
    assert torch.equal(linear(x, w, residual=res), torch.cat(slices))
    monkeypatch.setattr(w12_engine, "FP8_WIDE_SLICES", 1)
    close(linear(x, w), want, 6)
    exact = w.dequantize()
    assert ((w.dequantize(BF16).float() - exact).abs() <= exact.abs() * 2**-7).all()
    with pytest.raises(ValueError, match="bf16/fp16 x"):
        skinny_linear(x[:4].float(), w)


def test_pytorch_path_with_an_fp8_draft_head_is_lossless(qwen_dir, qwen_drafter_dir) -> None:
    """The PyTorch drafter's proposals through the FP8 head: outputs equal AR's."""
    prompts = [[3, 17, 52, 9], [101, 7, 7, 200, 5, 64]]
    kw = dict(draft=str(qwen_drafter_dir), device="cpu", dtype="float32")
    plain = LLM(qwen_dir, engine=EngineConfig(draft_head="target"), **kw)
    ar = [o.output_ids for o in plain.generate(prompts, max_new_tokens=24, speculative=False)]
    llm = LLM(qwen_dir, engine=EngineConfig(draft_head="fp8"), **kw)
    assert isinstance(llm.generator.draft_head, Fp8Weight)
    outs = llm.generate(prompts, max_new_tokens=24)
    assert [o.output_ids for o in outs] == ar
    assert sum(sum(o.acceptance_lengths) for o in outs) > 0


@pytest.mark.parametrize("vocab_subset", [False, True])
def test_fused_drafter_with_an_fp8_head(tmp_path, vocab_subset: bool) -> None:
    """The fused drafter multiplies by the FP8 head (a draft vocabulary's rows when given) and
    the outputs are AR's and pass token forcing."""
    from specpilot.spec import draft_vocab

    target, drafter, reference = _tiny_pair(tmp_path)
    vocab = target.config.vocab_size
    gen = Generator(target, drafter, EngineConfig(kernels="triton"), DEVICE, BF16)
    ar = _sequences(vocab, SPEC_TOKENS)
    gen.run(ar, speculative=False)
    extra = {}
    ids = torch.arange(0, vocab, 2)
    if vocab_subset:
        path = tmp_path / "vocab.safetensors"
        draft_vocab.save_ids(path, ids, vocab, "test")
        extra = dict(draft_vocab=str(path))
    config = EngineConfig(kernels="triton", draft_head="fp8", **extra)
    gen = Generator(target, drafter, config, DEVICE, BF16)
    head = gen.fused_drafter.head
    assert isinstance(head, Fp8Weight)
    assert head.shape[0] == (ids.numel() if vocab_subset else vocab)
    seen = record_drafts(gen)
    seqs = _sequences(vocab, SPEC_TOKENS)
    gen.run(seqs, speculative=True)
    assert [s.output_ids for s in seqs] == [s.output_ids for s in ar]
    assert_forced(reference, seqs)
    assert seen and (not vocab_subset or set(seen) <= set(ids.tolist()))


@pytest.mark.skipif(not CUDA, reason="the e4m3 conversion instruction is the GPU's")
def test_fp8_head_matches_bf16_proposals_mostly_on_gpu(tmp_path) -> None:
    """At a head of real width the FP8 head's argmax is the bf16 head's on nearly every row
    (random weights: a check that the scales are applied, not an acceptance measurement)."""
    gen = torch.Generator().manual_seed(0)
    w = (torch.randn(8192, 4096, generator=gen) * 0.02).to(DEVICE, BF16)
    x = torch.randn(16, 4096, generator=gen).to(DEVICE, BF16)
    q = fp8.quantize(w)
    same = skinny_linear(x, q).argmax(-1) == skinny_linear(x, w).argmax(-1)
    assert same.float().mean() >= 0.9


def test_fp8_drafter_is_a_converted_copy(qwen_dir, qwen_drafter_dir) -> None:
    """EngineConfig.draft_weights "fp8": the generator drafts with a copy whose linears hold
    FP8 weights (the loaded drafter keeps its own), its outputs equal AR's."""
    from specpilot.formats.fp8 import Fp8Linear

    prompts = [[3, 17, 52, 9], [101, 7, 7, 200, 5, 64]]
    kw = dict(draft=str(qwen_drafter_dir), device="cpu", dtype="float32")
    plain = LLM(qwen_dir, engine=EngineConfig(draft_head="target"), **kw)
    ar = [o.output_ids for o in plain.generate(prompts, max_new_tokens=24, speculative=False)]
    llm = LLM(qwen_dir, engine=EngineConfig(draft_weights="fp8", draft_head="fp8"), **kw)
    drafter = llm.generator.drafter
    fp8_linears = [m for m in drafter.modules() if isinstance(m, Fp8Linear)]
    assert len(fp8_linears) == 7 * len(drafter.layers) + 1  # q k v o gate up down, and fc
    assert drafter is not llm.drafter and not any(
        isinstance(m, Fp8Linear) for m in llm.drafter.modules()
    )
    outs = llm.generate(prompts, max_new_tokens=24)
    assert [o.output_ids for o in outs] == ar


def test_fused_fp8_drafter(tmp_path) -> None:
    """The fused drafter over an FP8 drafter: its blocks multiply by FP8 weights (q|k|v and
    gate|up concatenated, k|v a row slice), the outputs are AR's and pass token forcing."""
    target, drafter, reference = _tiny_pair(tmp_path)
    vocab = target.config.vocab_size
    gen = Generator(target, drafter, EngineConfig(kernels="triton"), DEVICE, BF16)
    ar = _sequences(vocab, SPEC_TOKENS)
    gen.run(ar, speculative=False)
    config = EngineConfig(kernels="triton", draft_weights="fp8", draft_head="fp8")
    gen = Generator(target, drafter, config, DEVICE, BF16)
    block = gen.fused_drafter.blocks[0]
    for weight in (block.qkv, block.kv, block.o, block.gate_up, block.down):
        assert isinstance(weight, Fp8Weight)
    assert block.kv.weight.data_ptr() == block.qkv.weight[block.heads * block.head_dim :].data_ptr()
    seqs = _sequences(vocab, SPEC_TOKENS)
    gen.run(seqs, speculative=True)
    assert [s.output_ids for s in seqs] == [s.output_ids for s in ar]
    assert_forced(reference, seqs)
    with pytest.raises(Exception, match="draft_weights"):
        EngineConfig(draft_weights="int8")


def test_cli_generates_with_an_fp8_drafter(capsys, qwen_dir, qwen_drafter_dir) -> None:
    """`generate --draft-weights fp8 --draft-head fp8` speculates and emits AR's tokens."""
    from tests.test_cli_errors import cli_json

    args = ["--prompt-ids", "5,17,42", "--max-new-tokens", "12", "--device", "cpu",
            "--ignore-eos", "--json", "--target", str(qwen_dir), "--dtype", "float32"]  # fmt: skip
    ar = cli_json(capsys, "generate", *args)
    spec = cli_json(capsys, "generate", *args, "--draft", str(qwen_drafter_dir),
                    "--draft-weights", "fp8", "--draft-head", "fp8")  # fmt: skip
    assert spec["output_ids"] == ar["output_ids"] and len(ar["output_ids"]) == 12
    assert spec.get("acceptance_lengths")


def test_auto_resolves_to_fp8_where_the_fused_kernels_run(monkeypatch) -> None:
    from specpilot.engine import generator

    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    decide = Generator._fp8_drafter
    assert not decide(EngineConfig(), cpu, BF16)  # no fused kernels here: as loaded
    assert decide(EngineConfig(draft_weights="fp8"), cpu, torch.float32)
    monkeypatch.setattr(generator, "kernels_usable", lambda device: device.type == "cuda")
    assert decide(EngineConfig(), cuda, BF16)
    assert not decide(EngineConfig(kernels="torch"), cuda, BF16)
    assert not decide(EngineConfig(), cuda, torch.float16)
    assert not decide(EngineConfig(draft_weights="model"), cuda, BF16)


def test_fp8_drafter_from_w12_weights(qwen_dir, qwen_drafter_dir) -> None:
    """A drafter whose linears are W12 (decoded exactly) becomes the same FP8 drafter as its
    bf16 original."""
    from specpilot.formats.fp8 import Fp8Linear
    from specpilot.formats.w12_engine import convert_model
    from specpilot.models.loader import load_drafter

    llm = LLM(qwen_dir, draft=str(qwen_drafter_dir), device="cpu", dtype="bfloat16")
    drafter, _ = load_drafter(qwen_drafter_dir, llm.target.config, torch.device("cpu"), BF16)
    plain = fp8.quantized_drafter(drafter, use_kernel=False)
    convert_model(drafter, use_kernel=False)
    packed = fp8.quantized_drafter(drafter, use_kernel=False)
    pairs = [
        (a, b)
        for a, b in zip(plain.modules(), packed.modules(), strict=True)
        if isinstance(a, Fp8Linear)
    ]
    assert len(pairs) == 7 * len(plain.layers) + 1
    for a, b in pairs:
        assert isinstance(b, Fp8Linear)
        assert torch.equal(a.weight.weight.view(torch.uint8), b.weight.weight.view(torch.uint8))
        assert torch.equal(a.weight.scale, b.weight.scale)


def test_fp8_linear_takes_float32_through_its_reference() -> None:
    """The kernel takes bf16/fp16 inputs; a float32 one goes through fp8_linear_reference."""
    from specpilot.formats.fp8 import Fp8Linear

    gen = torch.Generator().manual_seed(4)
    q = fp8.quantize(torch.randn(24, 32, generator=gen).to(DEVICE))
    layer = Fp8Linear(q, use_kernel=True)
    x = torch.randn(2, 3, 32, generator=gen).to(DEVICE)
    want = fp8.fp8_linear_reference(x.reshape(-1, 32), q).view(2, 3, 24)
    assert torch.equal(layer(x), want)
    xb = x.to(BF16)
    close(layer(xb).reshape(-1, 24), fp8.fp8_linear_reference(xb.reshape(-1, 32), q))
    assert "format=FP8" in repr(layer)


def test_auto_drafts_wide_blocks_on_the_loaded_drafter(tmp_path, monkeypatch) -> None:
    """Where "auto" chose the FP8 drafter, drafts of more than FP8_DRAFT_MAX_ROWS block rows
    (and the prompts' context writes) run on the loaded drafter through its own fused forward
    (generator.wide_draft); narrower ones on the FP8 copy. Both give AR's outputs and pass
    token forcing."""
    from specpilot.engine import generator
    from specpilot.models import fused

    monkeypatch.setattr(generator, "kernels_usable", lambda device: True)  # "auto" -> FP8
    target, drafter, reference = _tiny_pair(tmp_path)
    vocab = target.config.vocab_size
    plain = Generator(target, drafter, EngineConfig(kernels="triton"), DEVICE, BF16)
    ar = _sequences(vocab, SPEC_TOKENS)
    plain.run(ar, speculative=False)
    gen = Generator(target, drafter, EngineConfig(kernels="triton"), DEVICE, BF16)
    assert gen.drafter is not drafter and isinstance(gen.fused_drafter.blocks[0].qkv, Fp8Weight)
    wide_drafter, wide_fused, head = gen.wide_draft
    assert wide_drafter is drafter and head is None
    assert isinstance(wide_fused.blocks[0].qkv, torch.Tensor)
    assert wide_fused.head is target.lm_head.weight
    limit = generator.FP8_DRAFT_MAX_ROWS
    assert gen._draft_path(limit)[0] is gen.drafter and gen._draft_path(limit + 1)[0] is drafter
    # the tiny drafter's blocks are 8 wide: one sequence drafts in FP8, two on the loaded one
    monkeypatch.setattr(generator, "FP8_DRAFT_MAX_ROWS", gen.block_size)
    ran = []
    inner = fused.FusedDrafter.__call__

    def spy(self, *args):
        ran.append(self)
        return inner(self, *args)

    monkeypatch.setattr(fused.FusedDrafter, "__call__", spy)
    seqs = _sequences(vocab, SPEC_TOKENS)
    gen.run(seqs, speculative=True)
    assert [s.output_ids for s in seqs] == [s.output_ids for s in ar]
    assert_forced(reference, seqs)
    assert ran and all(d is wide_fused for d in ran)
    ran.clear()
    # against AR at the same batch: a batch of one runs other tiles (one-row multiplies) than
    # a batch of two, whose sums may round a near-tie the other way (seen with transformers
    # 5.25's random tiny target: AR's first sequence differs between the two batches)
    ar_one = _sequences(vocab, SPEC_TOKENS)[:1]
    plain.run(ar_one, speculative=False)
    one = _sequences(vocab, SPEC_TOKENS)[:1]
    gen.run(one, speculative=True)
    assert one[0].output_ids == ar_one[0].output_ids
    assert_forced(reference, one)
    assert ran and all(d is gen.fused_drafter for d in ran)
    # explicit "fp8" drafts every block in FP8 (the head too: on CUDA "auto" would be FP8 up
    # to the limit and the target's head past it)
    config = EngineConfig(kernels="triton", draft_weights="fp8", draft_head="fp8")
    assert Generator(target, drafter, config, DEVICE, BF16).wide_draft is None
