"""Triton kernels against their PyTorch references, on fresh random inputs.

On a CUDA machine the kernels are compiled and run on the GPU; elsewhere they run in Triton's CPU
interpreter (TRITON_INTERPRET=1, set below before any kernel module is imported). Triton 3.6's
interpreter rounds fp32 -> bf16 by truncation, unlike the GPU (round to nearest even), so below it
is given torch's rounding; with it the element-wise kernel (rope) matches bit for bit everywhere.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import math
import os
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

CUDA = torch.cuda.is_available()
if not CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")
pytest.importorskip("triton")


def _round_bf16_like_the_gpu() -> None:
    import numpy as np
    from triton.runtime import interpreter

    if getattr(interpreter, "_specpilot_rtne", False):
        return
    convert = interpreter._convert_float

    def rtne(data, src, dst, rounding_mode):
        if src.primitive_bitwidth == 32 and dst.is_bf16():
            f32 = torch.from_numpy(np.ascontiguousarray(data).view(np.float32).copy())
            return f32.to(BF16).view(torch.int16).numpy().view(np.uint16)
        return convert(data, src, dst, rounding_mode)

    interpreter._convert_float = rtne
    interpreter._specpilot_rtne = True


BF16 = torch.bfloat16
if not CUDA:
    _round_bf16_like_the_gpu()

from specpilot.config import EngineConfig, RopeScaling  # noqa: E402
from specpilot.engine.generator import Generator  # noqa: E402
from specpilot.engine.sequence import Sequence  # noqa: E402
from specpilot.errors import ConfigError  # noqa: E402
from specpilot.kernels.attention import decode_attention, decode_attention_reference  # noqa: E402
from specpilot.kernels.elementwise import (  # noqa: E402
    rmsnorm,
    rmsnorm_reference,
    silu_mul,
    silu_mul_reference,
)
from specpilot.kernels.linear import skinny_linear, skinny_linear_reference  # noqa: E402
from specpilot.kernels.rope import (  # noqa: E402
    kv_rope_write_layers,
    kv_rope_write_layers_reference,
    qk_rope_write,
    qk_rope_write_reference,
)
from specpilot.layers.rotary import RotaryTable  # noqa: E402
from tests.conftest import gluon_on  # noqa: E402

DEVICE = torch.device("cuda" if CUDA else "cpu")


def close(actual: torch.Tensor, expected: torch.Tensor, ulps: float = 2.0,
          floor: torch.Tensor | None = None) -> None:  # fmt: skip
    """Within `ulps` half-ulps (2^-8 relative) of each expected bf16 entry, where entries smaller
    than a tenth of the largest count at that tenth (dot products that cancel carry the rounding
    of their terms); plus `floor` where given (order_floor: what the summation order can move
    each entry, for comparisons where an entry has no larger neighbours)."""
    a, e = actual.float(), expected.float()
    scale = e.abs().max().item()
    tol = ulps * 2**-8 * e.abs().clamp(min=scale / 10)
    if floor is not None:
        tol = tol + floor.to(tol.device, tol.dtype)
    bad = ~((a - e).abs() <= tol)  # NaN counts as off
    assert not bad.any(), f"{int(bad.sum())} of {e.numel()} off; max diff {(a - e).abs().max()}"


def order_floor(x: torch.Tensor, w: torch.Tensor, swiglu: bool = False) -> torch.Tensor:
    """What fp32 summation in another order can move each output of x @ w.T: 2^-16 of
    sum_k |x_k| |w_nk|, the rounding of ~2^8 sequential fp32 additions (a kernel's per-thread
    run before its tree) over the terms' magnitudes. A wrong weight moves an output by a whole
    term, ~2^8 times more for the tests' random weights. With SwiGLU (silu(g) * u of the two
    halves) each half's floor carried through: |silu'(g)| <= 1.1."""
    x64, w64 = x.double().cpu(), w.double().cpu()
    spread = x64.abs() @ w64.abs().T
    if swiglu:
        exact = x64 @ w64.T
        half = w.shape[0] // 2
        g, u = exact[:, :half], exact[:, half:]
        spread = (
            1.1 * u.abs() * spread[:, :half] + torch.nn.functional.silu(g).abs() * spread[:, half:]
        )
    return (2**-16 * spread).float()


def attention_close(out: torch.Tensor, q, k, v, positions, causal: bool = True) -> None:
    """Decode attention against float32 attention over the same bf16 inputs, within its rounding
    bound: the output's own rounding (half an ulp of |out|) plus the weights' rounding to bf16
    before the tensor-core product with V (half an ulp of each term, so of sum_j p_j |v_j|, which
    is attention over |V|), the two doubled. Measures error against the exact answer instead of
    against another bf16 kernel (torch's attention), whose rounding differs."""
    f32 = [x.float() for x in (q, k, v)]
    exact = decode_attention_reference(*f32, positions, causal=causal)
    spread = decode_attention_reference(f32[0], f32[1], f32[2].abs(), positions, causal=causal)
    err = (out.float() - exact).abs()
    bad = ~(err <= 2**-8 * (exact.abs() + spread))  # NaN counts as off
    assert not bad.any(), f"{int(bad.sum())} of {err.numel()} off; max error {err.max()}"


def prologue_kwargs(mode: str, m: int, n: int, k: int, gen: torch.Generator) -> dict:
    """The skinny multiplies' keyword arguments for a test mode: plain, norm, residual, glu."""
    kw: dict = {}
    if mode == "norm":
        kw["norm_weight"] = (torch.rand(k, generator=gen) + 0.5).to(DEVICE, BF16)
    if mode == "residual":
        kw["residual"] = torch.randn(m, n, generator=gen).to(DEVICE, BF16)
    if mode == "glu":
        kw["glu"] = True
    return kw


@pytest.mark.parametrize("swiglu", [False, True])
def test_order_floor_covers_reordered_sums_and_not_a_wrong_weight(swiglu: bool) -> None:
    """order_floor's bound holds for fp32 sums of K 4096 in other orders (forward, reversed, in
    64 partial sums), on rows made to cancel to near zero, and is far below a lost term: zeroing
    one row's largest term makes `close` fail."""
    gen = torch.Generator().manual_seed(5)
    k = 4096
    x = torch.randn(1, k, generator=gen).to(BF16)
    w = (torch.randn(64, k, generator=gen) * k**-0.5).to(BF16)
    w[1::2, -1] = 0.0  # odd rows cancel: their last weight set so the sum is ~0
    part = x.double()[0, :-1] @ w.double()[1::2, :-1].T
    w[1::2, -1] = (-part / x.double()[0, -1]).to(BF16)
    floor = order_floor(x, w, swiglu)
    x32, w32 = x.float()[0], w.float()
    orders = [torch.stack([(x32 * row).cumsum(0)[-1] for row in w32]),
              torch.stack([(x32 * row).flip(0).cumsum(0)[-1] for row in w32]),
              (x32 * w32).view(64, 64, 64).sum(-1).sum(-1)]  # fmt: skip
    exact = x.double() @ w.double().T

    def out(y: torch.Tensor) -> torch.Tensor:
        y = y.view(1, -1).double()
        return (F.silu(y[:, :32]) * y[:, 32:] if swiglu else y).to(BF16)

    assert exact[:, 1::2].abs().max() < 1e-2 < exact[:, ::2].abs().max()
    for y in orders:
        for j in range(floor.shape[1]):
            close(out(y)[:, j], out(exact)[:, j], 4, floor[:, j])
    wrong = w.clone()
    row = 1  # a cancelling row (its gate, with SwiGLU), where only the floor stands
    wrong[row, (x.float()[0] * w.float()[row]).abs().argmax()] = 0.0
    with pytest.raises(AssertionError):
        close(out(x.double() @ wrong.double().T)[:, row], out(exact)[:, row], 4, floor[:, row])


@pytest.mark.parametrize("m", [1, 2, 3, 5, 16, 33])
@pytest.mark.parametrize("mode", ["plain", "norm", "residual", "glu"])
def test_skinny_linear(m: int, mode: str) -> None:
    gen = torch.Generator().manual_seed(m)
    n, k = 70, 96
    x = torch.randn(m, 2 * k if mode == "glu" else k, generator=gen).to(DEVICE, BF16)
    w = (torch.randn(n, k, generator=gen) * k**-0.5).to(DEVICE, BF16)
    kw = prologue_kwargs(mode, m, n, k, gen)
    # NOTE: a norm or SwiGLU prologue rounds to bf16 before the dot; one flipped rounding of an
    # input moves a dot product by up to an ulp of that input, hence 4 ulps there.
    close(skinny_linear(x, w, **kw), skinny_linear_reference(x, w, **kw), 4 if m > 1 else 2)


@pytest.mark.parametrize("m", [1, 16])
@pytest.mark.parametrize("swiglu", [False, True])
def test_norm_handoff_is_the_norm_then_the_multiply(m: int, swiglu: bool) -> None:
    """The norm hand-off (kernels/linear.Handoff): the multiply ending in the residual add stores
    the same output as without it, u = output * norm weight rounded, and per tile the rows' sums
    of squares; the next multiply from u gives RMSNorm-then-multiply's values (the rounding
    points differ: x * w before the scaling by 1 / RMS). A K-split producer leaves it unfilled,
    and a consumer takes only a filled hand-off's own u."""
    from specpilot.kernels.common import interpreted_tile
    from specpilot.kernels.linear import Handoff, tile_config

    gen = torch.Generator().manual_seed(m + 7 * swiglu)
    k_in, k, n = 64, 96, 70
    a = torch.randn(m, k_in, generator=gen).to(DEVICE, BF16)
    w_o = (torch.randn(k, k_in, generator=gen) * k_in**-0.5).to(DEVICE, BF16)
    res = (torch.randn(m, k, generator=gen) * 3).to(DEVICE, BF16)
    norm_w = (torch.rand(k, generator=gen) + 0.5).to(DEVICE, BF16)
    w_next = (torch.randn(n, k, generator=gen) * k**-0.5).to(DEVICE, BF16)
    hand = Handoff(norm_w, 1e-6)
    y = skinny_linear(a, w_o, residual=res, handoff=hand)
    assert torch.equal(y, skinny_linear(a, w_o, residual=res))
    assert torch.equal(hand.u, (y.float() * norm_w.float()).to(BF16))
    tiles = -(-k // interpreted_tile(tile_config(m, k, k_in), k)["BLOCK_N"])  # (as launched)
    assert hand.squares.shape == (m, tiles)
    torch.testing.assert_close(hand.squares.sum(1), y.float().pow(2).sum(1), rtol=1e-5, atol=0)
    # against the exact norm and product of the same output: the reference's two roundings of
    # the input (after 1 / RMS, after w) and this one's (after w) each move the dot products by
    # up to an ulp of their terms, which cancel: both land within 8 half-ulps here (12 with
    # silu(gate) * up's three more roundings)
    yf = y.float()
    exact = (yf * torch.rsqrt(yf.pow(2).mean(-1, keepdim=True) + 1e-6) * norm_w.float()).to(DEVICE)
    exact = exact @ w_next.float().T
    if swiglu:
        gate, up = exact.chunk(2, dim=-1)
        exact = torch.nn.functional.silu(gate) * up
    got = skinny_linear(hand.u, w_next, handed=hand, swiglu=swiglu)
    ulps = 12 if swiglu else 8
    close(got, exact, ulps)
    want = skinny_linear_reference(y, w_next, norm_weight=norm_w, eps=1e-6, swiglu=swiglu)
    close(want, exact, ulps)
    split = Handoff(norm_w, 1e-6)
    cfg = dict(tile_config(m, k, k_in), USE_DOT=True, BLOCK_M=16, BLOCK_K=32, SPLIT_K=2)
    skinny_linear(a, w_o, residual=res, handoff=split, config=cfg)
    assert not split.ready
    with pytest.raises(ValueError, match="filled u"):
        skinny_linear(hand.u.clone(), w_next, handed=hand)
    with pytest.raises(ValueError, match="residual epilogue"):
        skinny_linear(a, w_o, handoff=Handoff(norm_w, 1e-6))


@pytest.mark.parametrize("m,k,split", [(16, 600, 2), (5, 96, 3), (33, 520, 4)])
@pytest.mark.parametrize("mode", ["plain", "norm", "residual", "glu"])
def test_skinny_linear_split_k(m: int, k: int, split: int, mode: str) -> None:
    """Tensor-core tiles with K split over programs, the slices added by the tile's last program
    (no second launch): the reference's values, with K not a whole number of slices (the last
    slice short or empty), twice in a row, the tile counters back to zero after each."""
    from specpilot.kernels.common import zeroed_counters
    from specpilot.kernels.linear import tile_config

    gen = torch.Generator().manual_seed(m + k)
    n = 70
    cfg = dict(tile_config(m, n, k), BLOCK_K=64, SPLIT_K=split)
    for _ in range(2):
        x = torch.randn(m, 2 * k if mode == "glu" else k, generator=gen).to(DEVICE, BF16)
        w = (torch.randn(n, k, generator=gen) * k**-0.5).to(DEVICE, BF16)
        kw = prologue_kwargs(mode, m, n, k, gen)
        y = skinny_linear(x, w, config=cfg, **kw)
        close(y, skinny_linear_reference(x, w, **kw), 4)
        assert int(zeroed_counters(x.device, 64).abs().sum()) == 0
    one_row = torch.randn(1, k, generator=gen).to(DEVICE, BF16)
    with pytest.raises(ValueError, match="tensor-core"):
        skinny_linear(one_row, w, config=dict(tile_config(1, n, k), SPLIT_K=2))


@pytest.mark.parametrize("m", [1, 16])
@pytest.mark.parametrize("mode", ["plain", "norm", "residual", "glu"])
def test_skinny_linear_weights_left(m: int, mode: str) -> None:
    """W_LEFT with bf16 weights (the weights as the MMA's left operand: wgmma on the H200, where
    the 16-row tiles otherwise run mma.sync; one row on a 16-row tile, masked): the reference's
    values, whole or with K split over programs, and the norm hand-off out of it and into it
    (silu(gate) * up) as the plain tile's."""
    from specpilot.kernels.linear import Handoff

    gen = torch.Generator().manual_seed(11 + m)
    n, k = 70, 600
    x = torch.randn(m, 2 * k if mode == "glu" else k, generator=gen).to(DEVICE, BF16)
    w = (torch.randn(n, k, generator=gen) * k**-0.5).to(DEVICE, BF16)
    kw = prologue_kwargs(mode, m, n, k, gen)
    tile = dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, USE_DOT=True, num_warps=4, num_stages=3)
    want = skinny_linear_reference(x, w, **kw)
    for split in (1, 3):
        cfg = dict(tile, W_LEFT=True, SPLIT_K=split)
        close(skinny_linear(x, w, config=cfg, **kw), want, 4 if mode in ("norm", "glu") else 2)
    if mode != "residual":
        return
    norm_w = (torch.rand(n, generator=gen) + 0.5).to(DEVICE, BF16)
    w_next = (torch.randn(2 * n, n, generator=gen) * n**-0.5).to(DEVICE, BF16)
    outs = []
    for left in (False, True):
        cfg = dict(tile, W_LEFT=left)
        hand = Handoff(norm_w, 1e-6)
        y = skinny_linear(x, w, config=cfg, handoff=hand, **kw)
        assert hand.ready and torch.equal(hand.u, (y.float() * norm_w.float()).to(BF16))
        outs.append((y, skinny_linear(hand.u, w_next, handed=hand, swiglu=True, config=cfg)))
    for a, b in zip(*outs):
        close(a, b, 4)


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("mode", ["plain", "norm", "residual", "glu"])
def test_skinny_linear_loop_stages(stages: int, mode: str) -> None:
    """One-row element-wise tiles whose loop pipelines its loads (LOOP_STAGES): the same
    products in the same order as the tile without it, so the same bits, with K several
    BLOCK_K steps and a tail."""
    gen = torch.Generator().manual_seed(stages)
    n, k = 70, 600
    x = torch.randn(1, 2 * k if mode == "glu" else k, generator=gen).to(DEVICE, BF16)
    w = (torch.randn(n, k, generator=gen) * k**-0.5).to(DEVICE, BF16)
    kw = prologue_kwargs(mode, 1, n, k, gen)
    tile = dict(BLOCK_M=1, BLOCK_N=8, BLOCK_K=128, USE_DOT=False, num_warps=4, num_stages=3)
    y = skinny_linear(x, w, config=dict(tile, LOOP_STAGES=stages), **kw)
    assert torch.equal(y, skinny_linear(x, w, config=tile, **kw))
    close(y, skinny_linear_reference(x, w, **kw), 4 if mode in ("norm", "glu") else 2)


@pytest.mark.parametrize("mode", ["plain", "norm", "residual", "glu"])
def test_skinny_linear_tma_gives_the_same_bits(mode: str) -> None:
    """One-row element-wise tiles whose weight tiles come by bulk copies (TMA): the same
    products in the same order as the tile loading them itself, so the same bits, with N and
    K not whole tiles (the copy fills zeros past them) and the loop pipelined or not; a tile
    the copies cannot take is refused, a weight whose rows are not 16-byte aligned takes the
    plain loads."""
    gen = torch.Generator().manual_seed(7)
    n, k = 70, 600
    x = torch.randn(1, 2 * k if mode == "glu" else k, generator=gen).to(DEVICE, BF16)
    w = (torch.randn(n, k, generator=gen) * k**-0.5).to(DEVICE, BF16)
    kw = prologue_kwargs(mode, 1, n, k, gen)
    for stages in (1, 3):
        tile = dict(BLOCK_M=1, BLOCK_N=16, BLOCK_K=128, USE_DOT=False, num_warps=4,
                    num_stages=3, LOOP_STAGES=stages)  # fmt: skip
        y = skinny_linear(x, w, config=dict(tile, TMA=True), **kw)
        assert torch.equal(y, skinny_linear(x, w, config=tile, **kw)), stages
    close(y, skinny_linear_reference(x, w, **kw), 4 if mode in ("norm", "glu") else 2)
    with pytest.raises(ValueError, match="TMA tiles"):
        skinny_linear(x, w, config=dict(tile, BLOCK_K=512, TMA=True), **kw)
    odd = torch.zeros(n, k + 3, dtype=BF16, device=DEVICE)[:, :k]  # 1,206-byte rows
    odd.copy_(w)
    assert torch.equal(skinny_linear(x, odd, config=dict(tile, TMA=True), **kw), y)


@pytest.fixture
def launch_settings():
    """kernels/launch.py's process-wide switches, restored after the test."""
    from specpilot.kernels import launch

    before = launch.settings()
    yield launch
    launch.configure(**before)


@pytest.mark.parametrize("m,k", [(1, 96), (1, 2500), (16, 600), (5, 40)])
def test_weight_prefetch_gives_the_same_bits(launch_settings, m: int, k: int) -> None:
    """The skinny multiply with its weight tiles loaded one step ahead (EngineConfig.
    weight_prefetch) computes the same products in the same order: identical bits, for K
    below, at and across several BLOCK_K steps, with each prologue and the residual."""
    gen = torch.Generator().manual_seed(k)
    n = 70
    for mode in ("plain", "norm", "glu", "residual"):
        x = torch.randn(m, 2 * k if mode == "glu" else k, generator=gen).to(DEVICE, BF16)
        w = (torch.randn(n, k, generator=gen) * k**-0.5).to(DEVICE, BF16)
        kw = prologue_kwargs(mode, m, n, k, gen)
        launch_settings.configure(pdl="off", prefetch="off")
        plain = skinny_linear(x, w, **kw)
        for ahead in ("tile", "l2"):  # l2 falls back to none off a Hopper GPU
            launch_settings.configure(pdl="off", prefetch=ahead)
            assert torch.equal(skinny_linear(x, w, **kw), plain), (mode, ahead)


def test_launch_switches_are_off_where_they_cannot_run(launch_settings) -> None:
    launch_settings.configure(pdl="all", prefetch="l2")
    assert launch_settings.pdl(torch.zeros(1)) == {"PDL": False, "launch_pdl": False}
    assert launch_settings.prefetch_mode(torch.zeros(4, 8, dtype=BF16)) == 0  # no GPU: none
    launch_settings.configure(pdl="off", prefetch="tile")
    assert launch_settings.prefetch_mode(torch.zeros(4, 8, dtype=BF16)) == 1
    if CUDA:
        assert launch_settings.pdl(torch.zeros(1, device="cuda"))["PDL"] is False
        launch_settings.configure(pdl="all", prefetch="l2")
        odd = torch.zeros(4, 7, dtype=BF16, device="cuda")  # 14-byte rows: no bulk prefetch
        assert launch_settings.prefetch_mode(odd) == 0
    with pytest.raises(ValueError, match="prefetch must be one of"):
        launch_settings.configure(pdl="off", prefetch="yes")
    with pytest.raises(ValueError, match="pdl must be one of"):
        launch_settings.configure(pdl=True, prefetch="off")


def test_l2_ahead_asks_only_where_it_can(launch_settings, monkeypatch) -> None:
    """EngineConfig.l2_ahead: launch.l2_ahead gives the tensors' bytes only in its own mode, on
    a Hopper GPU, for contiguous 16-byte multiples; a bad mode fails in the config and in
    configure; decode_attention rejects what the bulk prefetch cannot take."""
    from specpilot.kernels.attention import decode_attention

    w = torch.zeros(64, 32, dtype=BF16, device=DEVICE)
    launch_settings.configure(pdl="off", prefetch="off", ahead="off")
    assert launch_settings.l2_ahead("o", w) == ()
    launch_settings.configure(pdl="off", prefetch="off", ahead="o")
    regions = launch_settings.l2_ahead("o", w, w[:, :8].contiguous())
    assert launch_settings.l2_ahead("head", w) == ()  # "all" only
    hopper = CUDA and torch.cuda.get_device_capability()[0] >= 9
    if hopper:
        assert [(r.dtype, r.numel()) for r in regions] == [(torch.uint8, 4096), (torch.uint8, 1024)]
        assert launch_settings.l2_ahead("o", w[:, :7]) == ()  # not contiguous
    else:
        assert regions == ()  # no bulk prefetch here
    launch_settings.configure(pdl="off", prefetch="off", ahead="all")
    # the head: the same first rows of each plane, HEAD_BYTES over all of them
    monkeypatch.setattr(launch_settings, "HEAD_BYTES", 1536)
    heads = launch_settings.l2_ahead("head", w, w[:, :16].contiguous())
    assert [r.numel() for r in heads] == ([1024, 512] if hopper else [])
    # the output projection: all of it, or its first rows within O_AHEAD_BYTES
    assert [r.numel() for r in launch_settings.l2_ahead("o", w)] == ([4096] if hopper else [])
    monkeypatch.setattr(launch_settings, "O_AHEAD_BYTES", 1536)
    firsts = launch_settings.l2_ahead("o", w, w[:, :16].contiguous())
    assert [r.numel() for r in firsts] == ([1024, 512] if hopper else [])
    # the side stream's requests: SIDE_AHEAD_BYTES of the first rows, whatever the mode, in
    # forwards of more than one row unless SIDE_AHEAD_ONE_ROW (a Hopper's checks taken as met)
    launch_settings.configure(pdl="off", prefetch="off", ahead="off")
    monkeypatch.setattr(launch_settings, "_on_hopper", lambda t: True)
    assert launch_settings.side_ahead(w) == ()  # SIDE_AHEAD_BYTES 0: off
    monkeypatch.setattr(launch_settings, "SIDE_AHEAD_BYTES", 1536)
    for rows, one_row, sizes in ((16, 0, [1024, 512]), (1, 0, []), (1, 1, [1024, 512])):
        monkeypatch.setattr(launch_settings, "SIDE_AHEAD_ONE_ROW", one_row)
        with launch_settings.forward_rows(rows):
            sides = launch_settings.side_ahead(w, w[:, :16].contiguous())
        assert [r.numel() for r in sides] == sizes
    with pytest.raises(ValueError, match="ahead must be one of"):
        launch_settings.configure(pdl="off", prefetch="off", ahead="qkv")
    with pytest.raises(ConfigError, match="l2_ahead must be one of"):
        EngineConfig(l2_ahead="qkv")
    q = torch.zeros(1, 4, 16, dtype=BF16, device=DEVICE)
    cache = torch.zeros(1, 2, 8, 16, dtype=BF16, device=DEVICE)
    pos = torch.zeros(1, 1, dtype=torch.long, device=DEVICE)
    odd = torch.zeros(24, dtype=torch.uint8, device=DEVICE)  # not a multiple of 16 bytes
    for bad in [(w,), (odd,), (w.view(torch.uint8)[0],) * 3]:
        with pytest.raises(ValueError, match="ahead takes"):
            decode_attention(q, cache, cache, pos, 1, ahead=bad)


def test_pdl_decode_mode_is_on_only_inside_one_row_forwards(launch_settings, monkeypatch) -> None:
    """pdl="decode" asks for PDL in a target forward of one token row (nested scopes: the
    innermost counts), never outside one; "all" everywhere; "off" nowhere. (The multiplies of
    wider forwards under launch.WIDE_PDL: its own test.)"""
    monkeypatch.setattr(launch_settings, "WIDE_PDL", 0)
    launch_settings.configure(pdl="decode", prefetch="off")
    assert not launch_settings.pdl_wanted()
    with launch_settings.forward_rows(1):
        assert launch_settings.pdl_wanted()
        with launch_settings.forward_rows(16):
            assert not launch_settings.pdl_wanted()
        assert launch_settings.pdl_wanted()
    with launch_settings.forward_rows(2):
        assert not launch_settings.pdl_wanted()
    assert not launch_settings.pdl_wanted()
    launch_settings.configure(pdl="all", prefetch="off")
    assert launch_settings.pdl_wanted()
    launch_settings.configure(pdl="off", prefetch="off")
    with launch_settings.forward_rows(1):
        assert not launch_settings.pdl_wanted()
    launch_settings.configure(pdl="small", prefetch="off")  # decode's, plus the small kernels
    with launch_settings.forward_rows(1):
        assert launch_settings.pdl_wanted()
    with launch_settings.forward_rows(16):
        assert not launch_settings.pdl_wanted()
        cpu = torch.zeros(1)
        assert launch_settings.pdl(cpu) == launch_settings.pdl(cpu, multiply=True)
        assert launch_settings.pdl(cpu) == {"PDL": False, "launch_pdl": False}  # not here
        if CUDA and torch.cuda.get_device_capability()[0] >= 9:
            gpu = torch.zeros(1, device="cuda")
            assert launch_settings.pdl(gpu) == {"PDL": True, "launch_pdl": True}
            assert launch_settings.pdl(gpu, multiply=True) == {"PDL": True, "launch_pdl": False}
    launch_settings.configure(pdl="kernels", prefetch="off")  # small's rule in every forward
    if CUDA and torch.cuda.get_device_capability()[0] >= 9:
        gpu = torch.zeros(1, device="cuda")
        for rows in (1, 16):
            with launch_settings.forward_rows(rows):
                assert launch_settings.pdl(gpu) == {"PDL": True, "launch_pdl": True}
                plain = {"PDL": True, "launch_pdl": False}
                assert launch_settings.pdl(gpu, multiply=True) == plain
    with launch_settings.forward_rows(1):
        assert launch_settings.pdl(torch.zeros(1)) == {"PDL": False, "launch_pdl": False}


def test_pdl_chain_launches_a_multiply_after_a_multiply_plainly(launch_settings, monkeypatch):
    """pdl="chain" (as if on a Hopper GPU): in a one-row forward every kernel is launched with
    PDL but a multiply that directly follows a multiply on element-wise tiles; outside one,
    small's rule (multiplies plainly). "small" in the same one-row sequence launches every
    multiply with PDL."""
    monkeypatch.setattr(launch_settings, "_on_hopper", lambda t: True)
    monkeypatch.setattr(launch_settings, "WIDE_PDL", 0)  # its own test: wide_pdl's
    monkeypatch.setattr(launch_settings, "EVEN_SHARED", 0)  # its own test too
    t = torch.zeros(1)
    # norm, q|k|v, rope, attention, o, norm, gate|up (SwiGLU epilogue), down, norm, lm_head
    order = [False, True, False, False, True, False, True, True, False, True]

    def launched(mode: str, rows: int) -> list[bool]:
        launch_settings.configure(pdl=mode, prefetch="off")
        with launch_settings.forward_rows(rows):
            return [launch_settings.pdl(t, multiply=m, elementwise=m)["launch_pdl"] for m in order]

    plain_down = [True] * 7 + [False] + [True] * 2
    assert launched("chain", 1) == plain_down
    assert launched("chain", 1) == plain_down  # the same again: each launch counts, not calls
    assert launched("small", 1) == [True] * 10
    assert launched("chain", 16) == [not m for m in order] == launched("kernels", 1)
    assert all(launch_settings.pdl(t, multiply=m)["PDL"] for m in order)
    # only a multiply on element-wise tiles makes the next one launch plainly: after a
    # tensor-core gate|up the down keeps its PDL
    launch_settings.configure(pdl="chain", prefetch="off")
    with launch_settings.forward_rows(1):
        gate_up = launch_settings.pdl(t, multiply=True, elementwise=False)
        down = launch_settings.pdl(t, multiply=True, elementwise=True)
        lm_head = launch_settings.pdl(t, multiply=True, elementwise=True)
    assert (gate_up["launch_pdl"], down["launch_pdl"], lm_head["launch_pdl"]) == (True, True, False)


def test_pdl_waves_launches_small_grids_and_chained_multiplies_plainly(
    launch_settings, monkeypatch
) -> None:
    """pdl="waves" (as if on a Hopper GPU of 100 SMs): every kernel with PDL but a multiply that
    directly follows a multiply or whose grid is under PDL_MIN_WAVES programs an SM, in
    forwards of any width; the multiply launchers pass their grids (a q|k|v-shaped launch in
    the interpreter)."""
    monkeypatch.setattr(launch_settings, "_on_hopper", lambda t: True)
    monkeypatch.setattr(launch_settings, "_sm_count", lambda index: 100)
    t = torch.zeros(1)
    launch_settings.configure(pdl="waves", prefetch="off")
    big = launch_settings.PDL_MIN_WAVES * 100
    # (multiply, programs): norm, a big multiply, a small one, norm, small, big after big
    order = [(False, 0), (True, big), (True, big), (False, 0), (True, big - 1), (False, 0),
             (True, big), (True, big)]  # fmt: skip
    for rows in (1, 16):
        with launch_settings.forward_rows(rows):
            got = [launch_settings.pdl(t, multiply=m, programs=p)["launch_pdl"] for m, p in order]
        assert got == [True, True, False, True, False, True, True, False]
    seen = []  # what the launcher asks (answered "plainly": the interpreter has no PDL)
    plainly = {"PDL": False, "launch_pdl": False}
    monkeypatch.setattr(launch_settings, "pdl", lambda x, **kw: seen.append(kw) or plainly)
    x = torch.randn(16, 64, dtype=BF16, device=DEVICE)
    w = torch.randn(96, 64, dtype=BF16, device=DEVICE)
    cfg = dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=64, USE_DOT=True, num_warps=4, num_stages=2)
    skinny_linear(x, w, config=cfg)
    # 96 / 32 weight rows, 16 / 16 token rows; a tensor-core tile
    want = {"multiply": True, "programs": 3, "elementwise": False, "handed": False}
    assert seen == [want | {"late": False}]
    with pytest.raises(ConfigError, match="pdl must be one of"):
        EngineConfig(pdl="yes")


def test_wide_pdl_launches_one_wave_multiplies_early_and_pads_them(
    launch_settings, monkeypatch
) -> None:
    """launch.WIDE_PDL under pdl="chain" (as if on a Hopper GPU of 100 SMs): in a forward of
    more than one row, 1 launches a multiply with PDL where its grid fits one wave, 2 also a
    larger grid unless it directly follows a multiply; one-row forwards keep chain's rule.
    ONE_WAVE_SHARED (at most the device's) is asked for by the one-wave multiplies so launched
    and by no other."""
    monkeypatch.setattr(launch_settings, "_on_hopper", lambda t: True)
    monkeypatch.setattr(launch_settings, "_sm_count", lambda index: 100)
    monkeypatch.setattr(launch_settings, "_shared_optin", lambda index: 200 << 10)
    pad = 120 << 10
    monkeypatch.setattr(launch_settings, "ONE_WAVE_SHARED", pad)
    t = torch.zeros(1)
    launch_settings.configure(pdl="chain", prefetch="off")

    def launched(wide: int, rows: int, norm_before: bool) -> list[tuple[bool, int]]:
        """Multiplies of 96, 100, 101 and 384 programs, each after a norm or after the last."""
        monkeypatch.setattr(launch_settings, "WIDE_PDL", wide)
        out = []
        with launch_settings.forward_rows(rows):
            for programs in (96, 100, 101, 384):
                if norm_before:
                    assert launch_settings.pdl(t)["launch_pdl"]
                a = launch_settings.multiply(t, programs, elementwise=False)
                out.append((a["launch_pdl"], a["SHARED"]))
        return out

    one_wave = [(True, pad), (True, pad)]
    for norm_before in (False, True):
        assert launched(0, 16, norm_before) == [(False, 0)] * 4
        assert launched(1, 16, norm_before) == one_wave + [(False, 0)] * 2
        assert launched(2, 1, norm_before) == [(True, 0)] * 4  # chain's one-row rule
    assert launched(2, 16, False) == one_wave + [(False, 0)] * 2  # each after a multiply
    assert launched(2, 16, True) == one_wave + [(True, 0)] * 2
    monkeypatch.setattr(launch_settings, "_shared_optin", lambda index: 99 << 10)
    assert launched(1, 16, True)[0] == (True, 99 << 10)  # what the device allows
    monkeypatch.setattr(launch_settings, "ONE_WAVE_SHARED", 0)
    assert launched(1, 16, True) == [(True, 0), (True, 0), (False, 0), (False, 0)]
    launch_settings.configure(pdl="all", prefetch="off")  # not WIDE_PDL's: never padded
    assert launched(1, 16, True) == [(True, 0)] * 4


def test_o_early_lets_o_in_before_the_merge_waits_and_prefetches_its_rows(
    launch_settings, monkeypatch
) -> None:
    """launch.O_EARLY (as if on a Hopper GPU): in one-row forwards under pdl="chain" the merge
    triggers early (early_trigger), and the multiply launched right after it asks for its rows
    in L2 (PREFETCH 2) while the next one takes the weight prefetch setting's; at 2 only where
    o is W12; off, in wider forwards or under another pdl mode, neither."""
    monkeypatch.setattr(launch_settings, "_on_hopper", lambda t: True)
    monkeypatch.setattr(launch_settings, "_sm_count", lambda index: 100)
    monkeypatch.setattr(launch_settings, "_shared_optin", lambda index: 200 << 10)
    monkeypatch.setattr(launch_settings, "WIDE_EARLY", 0)  # (its own test: wider forwards')
    t = torch.zeros(1)
    weight = torch.zeros(8, 64, dtype=BF16)

    def merge_then_two_multiplies(w12_o: bool) -> tuple[bool, int, int]:
        early = launch_settings.early_trigger(t, w12_o)
        launch_settings.pdl(t, early=early)  # the merge
        modes = []
        for _ in range(2):  # o, then gate|up
            launch_settings.multiply(t, 512, elementwise=False)
            modes.append(launch_settings.prefetch_mode(weight))
        return early, *modes

    for pdl in ("chain", "kernels"):
        launch_settings.configure(pdl=pdl, prefetch="off")
        for on, w12_o in itertools.product((0, 1, 2), (False, True)):
            monkeypatch.setattr(launch_settings, "O_EARLY", on)
            for rows in (1, 16):
                with launch_settings.forward_rows(rows):
                    lets = (on == 1 or (on == 2 and w12_o)) and rows == 1 and pdl == "chain"
                    wanted = (True, 2, 0) if lets else (False, 0, 0)
                    assert merge_then_two_multiplies(w12_o) == wanted, (pdl, on, w12_o, rows)


def test_wide_early_lets_the_next_kernel_in_before_the_short_kernels_wait(
    launch_settings, monkeypatch
) -> None:
    """launch.WIDE_EARLY (as if on a Hopper GPU): in target forwards of more than one row under
    "kernels", "chain" or "small", the merge (bit 1), the norm (2) and the split sum (4) each
    let the next kernel launch before their wait where their bit is on; never in one-row
    forwards, outside a target forward, under "all" or "off", or off a Hopper GPU."""
    monkeypatch.setattr(launch_settings, "_on_hopper", lambda t: True)
    t = torch.zeros(1)

    def early(bits: int, rows: int | None, pdl: str = "chain") -> tuple[bool, bool, bool]:
        monkeypatch.setattr(launch_settings, "WIDE_EARLY", bits)
        launch_settings.configure(pdl=pdl, prefetch="off")
        # rows None: outside a target forward (a drafter's)
        with launch_settings.forward_rows(rows) if rows else contextlib.nullcontext():
            return launch_settings.early_trigger(t), *(
                launch_settings.wide_early(t, b) for b in (2, 4)
            )

    for pdl in ("kernels", "chain", "small"):
        assert early(7, 16, pdl) == (True, True, True)
    assert early(1, 16) == (True, False, False)
    assert early(6, 2) == (False, True, True)
    assert early(0, 16) == early(7, 1) == early(7, None) == (False, False, False)
    assert early(7, 16, "all") == early(7, 16, "off") == (False, False, False)
    monkeypatch.setattr(launch_settings, "_on_hopper", lambda t: False)
    assert early(7, 16) == (False, False, False)


def test_even_shared_launches_multiplies_after_multiplies_early_and_spread(
    launch_settings, monkeypatch
) -> None:
    """launch.EVEN_SHARED under pdl="chain" (a Hopper of 100 SMs, 228 KB of shared memory an
    SM): a multiply of more than one wave right after a multiply (one row: after one on
    element-wise tiles) is launched with PDL, asking for the shared memory with which
    ceil(programs / SMs) of its programs fit an SM, in one-row forwards from level 1 and in
    wider ones from level 2; below its level it is launched plainly."""
    monkeypatch.setattr(launch_settings, "_on_hopper", lambda t: True)
    monkeypatch.setattr(launch_settings, "_sm_count", lambda index: 100)
    monkeypatch.setattr(launch_settings, "_shared_optin", lambda index: 227 << 10)
    monkeypatch.setattr(launch_settings, "_shared_per_sm", lambda index: 228 << 10)
    monkeypatch.setattr(launch_settings, "WIDE_PDL", 2)
    t = torch.zeros(1)
    launch_settings.configure(pdl="chain", prefetch="off")

    def down(level: int, rows: int, gate_up_elementwise: bool) -> tuple[bool, int]:
        """A norm, gate|up (3,000 programs), then down (400): down's PDL and shared memory."""
        monkeypatch.setattr(launch_settings, "EVEN_SHARED", level)
        with launch_settings.forward_rows(rows):
            launch_settings.pdl(t)
            launch_settings.multiply(t, 3000, elementwise=gate_up_elementwise)
            a = launch_settings.multiply(t, 400, elementwise=True)
        return a["launch_pdl"], a["SHARED"]

    spread = (228 << 10) // 4 - 1024  # 4 programs an SM
    assert down(0, 1, True) == (False, 0)
    assert down(1, 1, True) == down(2, 1, True) == (True, spread)
    assert down(1, 1, False) == (True, 0)  # PDL by chain's own rule, nothing to spread
    assert down(0, 16, False) == down(1, 16, False) == (False, 0)
    assert down(2, 16, False) == (True, spread)
    assert launch_settings.even_shared(0, 100) == (228 << 10) - 1024
    assert launch_settings.even_shared(0, 801) == (228 << 10) // 9 - 1024


def test_handed_multiplies_launch_plainly_or_behind_a_late_trigger(
    launch_settings, monkeypatch
) -> None:
    """The norm hand-off's launches under pdl="chain" (a Hopper of 100 SMs): in a one-row forward
    the handed multiply behind an element-wise one (q|k|v after down) is launched plainly, not
    early and spread (EVEN_SHARED), or with HANDED_PDL early and unpadded; under LATE_TRIGGER,
    behind a multiply that triggers late, it is launched with PDL and unpadded, one row or
    16."""
    monkeypatch.setattr(launch_settings, "_on_hopper", lambda t: True)
    monkeypatch.setattr(launch_settings, "_sm_count", lambda index: 100)
    monkeypatch.setattr(launch_settings, "_shared_optin", lambda index: 227 << 10)
    monkeypatch.setattr(launch_settings, "_shared_per_sm", lambda index: 228 << 10)
    t = torch.zeros(1)
    launch_settings.configure(pdl="chain", prefetch="off")

    def qkv(rows: int, handed: bool, late: bool) -> tuple[bool, int]:
        """down (512 element-wise programs, triggering late or not), then q|k|v (384)."""
        with launch_settings.forward_rows(rows):
            launch_settings.multiply(t, 512, elementwise=True, late=late)
            a = launch_settings.multiply(t, 384, elementwise=True, handed=handed)
        return a["launch_pdl"], a["SHARED"]

    assert qkv(1, False, False) == (True, (228 << 10) // 4 - 1024)  # EVEN_SHARED's spread
    assert qkv(1, True, False) == (False, 0)
    assert qkv(1, True, True) == (True, 0)
    assert qkv(16, True, True) == (True, 0)
    assert qkv(16, True, False) == (False, 0)  # WIDE_PDL 2 keeps a multiply after one plain
    monkeypatch.setattr(launch_settings, "HANDED_PDL", 1)  # early, at its own occupancy
    assert qkv(1, True, False) == (True, 0)
    assert qkv(1, False, False) == (True, (228 << 10) // 4 - 1024)


def test_ask_shared_checks_the_size_and_tritons_layout(launch_settings) -> None:
    """launch.ask_shared: a size past what a program may ask for is an error; a compiled kernel
    whose launch metadata is not (warps, CTAs, shared bytes) is left as it is, with a warning;
    one that already asks for enough is left too. (The reload itself: the GPU test below.)"""
    pad = 120 << 10
    with pytest.raises(ValueError, match="shared memory a program"):
        launch_settings.ask_shared(SimpleNamespace(packed_metadata=(4, 1, 0)), 1 << 20)
    unknown = SimpleNamespace(packed_metadata=(4, 1, 0, (1, 1, 1)))  # another Triton's layout
    with pytest.warns(RuntimeWarning, match="stay unpadded"):
        launch_settings.ask_shared(unknown, pad)
    assert unknown.packed_metadata == (4, 1, 0, (1, 1, 1))
    enough = SimpleNamespace(packed_metadata=(4, 1, pad))  # already asks for that much
    launch_settings.ask_shared(enough, pad)
    assert enough.packed_metadata == (4, 1, pad)


@pytest.mark.skipif(not CUDA, reason="shared memory asked for at launch needs a GPU")
def test_one_wave_shared_gives_the_same_bits(launch_settings, monkeypatch) -> None:
    """A 16-row multiply launched with PDL and padded shared memory (WIDE_PDL 1,
    ONE_WAVE_SHARED) computes the same bits as its plain launch, and its compiled kernel asks
    for the padded bytes from the launch after the one that compiled it."""
    from specpilot.kernels import linear

    launch_settings.configure(pdl="chain", prefetch="off")
    gen = torch.Generator(device=DEVICE).manual_seed(7)
    x = torch.randn(16, 4096, dtype=BF16, device=DEVICE, generator=gen)
    w = torch.randn(4096, 4096, dtype=BF16, device=DEVICE, generator=gen) / 64
    res = torch.randn(16, 4096, dtype=BF16, device=DEVICE, generator=gen)
    monkeypatch.setattr(launch_settings, "WIDE_PDL", 0)
    plain = skinny_linear(x, w, residual=res)
    pad = 112 << 10  # not the default's: a kernel compiled for this test
    monkeypatch.setattr(launch_settings, "WIDE_PDL", 1)
    monkeypatch.setattr(launch_settings, "ONE_WAVE_SHARED", pad)
    for _ in range(2):  # compiled and padded, then launched padded
        assert torch.equal(skinny_linear(x, w, residual=res), plain)
    kernels = linear._skinny_kernel.device_caches[torch.cuda.current_device()][0].values()
    assert any(k.packed_metadata[2] == pad for k in kernels)


def test_pdl_auto_resolves_by_target_size(tmp_path, launch_settings) -> None:
    """EngineConfig.pdl="auto" (the default): "all" below launch.PDL_ALL_BELOW_BYTES of target
    weights, "chain" from it on; explicit modes stay; the Generator keeps what it resolved
    ("off" where no Triton kernel runs)."""
    limit = launch_settings.PDL_ALL_BELOW_BYTES
    assert EngineConfig().pdl == "auto"
    assert launch_settings.resolve_pdl("auto", limit - 1) == "all"
    assert launch_settings.resolve_pdl("auto", limit) == "chain"
    for mode in ("off", "decode", "all", "small", "kernels", "chain", "waves"):
        assert launch_settings.resolve_pdl(mode, 1) == mode
    with pytest.raises(ValueError, match="pdl must be one of"):
        launch_settings.configure(pdl="auto", prefetch="off")  # resolved before it gets here
    target, drafter, _ = _tiny_pair(tmp_path, tied=True)
    gen = Generator(target, drafter, EngineConfig(), DEVICE, BF16 if CUDA else torch.float32)
    assert gen.pdl == ("all" if gen.fused_target is not None else "off")


@pytest.mark.skipif(not CUDA, reason="programmatic dependent launch needs a GPU (Hopper)")
@pytest.mark.parametrize("weights", ["bf16", "w12"])
def test_pdl_engine_gives_the_same_tokens(
    tmp_path, launch_settings, monkeypatch, weights: str
) -> None:
    """EngineConfig(pdl="decode" / "all") with each weight prefetch on the GPU, and
    l2_ahead="o" with and without PDL: the kernels launched with programmatic dependent launch,
    in CUDA graphs and eagerly; the same tokens as without, AR and speculative, and token
    forcing passes. W12 (untied: its lm_head too) with and without PDL (the prefetch is the
    bf16 multiply's; l2_ahead asks for both W12 planes)."""
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("programmatic dependent launch needs sm_90 or later")
    target, drafter, reference = _tiny_pair(tmp_path, tied=weights == "bf16")
    variants = [("off", "off"), ("decode", "off"), ("all", "off"), ("all", "tile"), ("all", "l2"),
                ("kernels", "off"), ("chain", "off"), ("waves", "off")]  # fmt: skip
    if weights == "w12":
        from specpilot.formats.w12_engine import convert_model

        convert_model(target)
        convert_model(drafter)
        variants = variants[:3]
    variants += [("small", "off")]  # PDL for all but the multi-row multiplies' launches
    variants += [("off", "o"), ("decode", "o"), ("decode", "all")]  # l2_ahead
    variants += [("chain", "o late")]  # ... asked for at the split programs' end (LATE_AHEAD)
    variants += [("chain", "side")]  # ... from a side stream (SIDE_AHEAD_BYTES), graphs too
    variants += [("chain", "o early")]  # o launched before the merge's wait (O_EARLY)
    variants += [("chain", "wide early")]  # verify: multiplies let in early (WIDE_EARLY 7)
    from specpilot.kernels import attention

    outputs = {}
    for pdl, ahead in variants:
        monkeypatch.setattr(attention, "LATE_AHEAD", int(ahead == "o late"))
        monkeypatch.setattr(launch_settings, "SIDE_AHEAD_BYTES", (1 << 20) * (ahead == "side"))
        monkeypatch.setattr(launch_settings, "O_EARLY", int(ahead == "o early"))
        monkeypatch.setattr(launch_settings, "WIDE_EARLY", 7 * (ahead == "wide early"))
        mode = "off" if ahead in ("side", "o early", "wide early") else ahead.split()[0]
        knobs = dict(l2_ahead=mode) if mode in ("o", "all") else dict(weight_prefetch=mode)
        config = EngineConfig(kernels="triton", cuda_graphs=True, pdl=pdl, **knobs)
        gen = Generator(target, drafter, config, DEVICE, BF16)
        on = pdl in ("all", "small", "kernels", "chain", "waves")  # outside a one-row forward
        assert launch_settings.pdl(torch.zeros(1, device="cuda"))["PDL"] is on
        outputs[pdl, ahead] = _runs_pass_forcing(gen, reference)
    for pdl, ahead in variants[1:]:
        assert outputs[pdl, ahead] == outputs["off", "off"]


@pytest.mark.skipif(not CUDA, reason="the in-kernel merge's memory ordering needs a GPU")
def test_fused_merge_engine_gives_the_same_tokens(tmp_path, monkeypatch) -> None:
    """Decoding with the attention's in-kernel merge (CUDA graphs on): the same tokens as with
    the merge kernel, AR and speculative, and token forcing passes."""
    from specpilot.kernels import attention

    target, drafter, reference = _tiny_pair(tmp_path)
    outputs = {}
    for rows in (0, 8):
        monkeypatch.setattr(attention, "FUSED_MERGE_MAX_ROWS", rows)
        gen = Generator(target, drafter, EngineConfig(kernels="triton", cuda_graphs=True), DEVICE,
                        BF16)  # fmt: skip
        outputs[rows] = _runs_pass_forcing(gen, reference)
    assert outputs[8] == outputs[0]


@pytest.mark.parametrize(
    "m,n,tile",
    [
        (1, 44, None),
        (3, 44, None),
        (16, 140, None),
        (16, 140, "split"),
        (1, 44, "odd"),
        (16, 70, "norm"),
    ],
)
def test_swiglu_epilogue_gives_the_bits_of_the_swiglu_kernel(m: int, n: int, tile) -> None:
    """skinny_linear(swiglu=True) of a [gate | up] weight: silu(gate) * up of the rounded
    products, bit for bit what silu_mul makes of the plain multiply's output, in the tile's
    epilogue (element-wise and tensor-core tiles; N / 2 not a whole number of tiles; with the
    norm prologue) or, for a tile that cannot end so (a K split, an odd BLOCK_N), by silu_mul
    after it; and close to the PyTorch reference."""
    from specpilot.kernels.linear import tile_config

    gen = torch.Generator().manual_seed(m * n)
    k = 96
    x = torch.randn(m, k, generator=gen).to(DEVICE, BF16)
    w = (torch.randn(n, k, generator=gen) * k**-0.5).to(DEVICE, BF16)
    kw = prologue_kwargs("norm", m, n, k, gen) if tile == "norm" else {}
    cfg = None
    if tile == "split":
        cfg = dict(tile_config(m, n, k), BLOCK_K=32, SPLIT_K=2)
    elif tile == "odd":
        cfg = dict(tile_config(m, n, k), BLOCK_N=1)
    y = skinny_linear(x, w, config=cfg, swiglu=True, **kw)
    assert y.shape == (m, n // 2)
    assert torch.equal(y, silu_mul(skinny_linear(x, w, config=cfg, **kw)))
    close(y, skinny_linear_reference(x, w, swiglu=True, **kw), 4)
    with pytest.raises(ValueError, match="swiglu epilogue"):
        skinny_linear(x, w[:-1], swiglu=True)
    with pytest.raises(ValueError, match="swiglu epilogue"):
        skinny_linear(x, w, swiglu=True, residual=torch.zeros(m, n, dtype=BF16, device=DEVICE))


def test_swiglu_above_the_skinny_rows_runs_after_cublas() -> None:
    """formats/w12_engine.linear past 64 rows (cuBLAS): swiglu is silu_mul of the product, and
    the same contract checks."""
    from specpilot.formats.w12_engine import linear

    gen = torch.Generator().manual_seed(70)
    x = torch.randn(70, 32, generator=gen).to(DEVICE, BF16)
    w = (torch.randn(24, 32, generator=gen) * 0.2).to(DEVICE, BF16)
    y = linear(x, w, swiglu=True)
    assert y.shape == (70, 12) and torch.equal(y, silu_mul(linear(x, w)))
    with pytest.raises(ValueError, match="swiglu epilogue"):
        linear(x, w, swiglu=True, residual=torch.zeros(70, 24, dtype=BF16, device=DEVICE))


def test_skinny_linear_rejects_bad_input() -> None:
    x = torch.randn(2, 8, dtype=BF16, device=DEVICE)
    with pytest.raises(ValueError, match="columns"):
        skinny_linear(x, torch.randn(4, 6, dtype=BF16, device=DEVICE))
    with pytest.raises(ValueError, match="at most 64 rows"):
        skinny_linear(torch.randn(65, 8, dtype=BF16, device=DEVICE), x)
    with pytest.raises(ValueError, match="bf16/fp16"):
        skinny_linear(x.float(), torch.randn(4, 8, device=DEVICE))
    with pytest.raises(ValueError, match="residual"):
        skinny_linear(x, x, residual=torch.zeros(3, 2, dtype=BF16, device=DEVICE))


def test_rmsnorm_and_silu_mul() -> None:
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(17, 300, generator=gen).to(DEVICE, BF16) * 3
    w = (torch.rand(300, generator=gen) + 0.5).to(DEVICE, BF16)
    close(rmsnorm(x, w, 1e-6), rmsnorm_reference(x, w, 1e-6), 2)
    gate_up = torch.randn(5, 2 * 1500, generator=gen).to(DEVICE, BF16) * 4
    close(silu_mul(gate_up), silu_mul_reference(gate_up), 2)
    with pytest.raises(ValueError, match="even"):
        silu_mul(gate_up[:, :7])
    with pytest.raises(ValueError, match="does not match"):
        rmsnorm(x, w[:10], 1e-6)


@pytest.mark.parametrize("order", ["", "join", "pair"])
@pytest.mark.parametrize("splits, rows", [(2, 1), (3, 5), (4, 16)])
def test_split_sum_norm_gives_the_bits_of_the_two_launches(order: str, splits: int,
                                                           rows: int) -> None:  # fmt: skip
    """elementwise.split_sum_norm: a K split's partial sums added, rounded, plus the residual,
    and the RMSNorm of that in the next multiply's order, in one launch: the bits of sum_splits
    and rmsnorm (on the GPU too: tests/test_gpu.py runs this file there)."""
    from specpilot.kernels.elementwise import NormAfter
    from specpilot.kernels.w12_linear import sum_splits

    gen = torch.Generator().manual_seed(10 * splits + rows)
    n = 768  # (not a power of two: the row's tail masked)
    part = (torch.randn(splits, rows, n, generator=gen) * 3).to(DEVICE)
    residual = (torch.randn(rows, n, generator=gen) * 2).to(DEVICE, BF16)
    w = (torch.rand(n, generator=gen) + 0.5).to(DEVICE, BF16)
    kinds = dict(join=order == "join", pair=order == "pair")
    y = torch.empty(rows, n, device=DEVICE, dtype=BF16)
    sum_splits(part, y, residual)
    u = rmsnorm(y, w, 1e-6, **kinds)
    norm = NormAfter(w, 1e-6, order=order)
    fused_y = torch.empty_like(y)
    sum_splits(part, fused_y, residual, norm)
    assert norm.ready and norm.keywords() == (dict(x_order=order) if order else {})
    assert torch.equal(fused_y, y)
    assert torch.equal(norm.u, u)
    unfilled = NormAfter(w, 1e-6)  # no residual: the plain split sum, the norm left to the caller
    sum_splits(part, fused_y, None, unfilled)
    assert not unfilled.ready
    with pytest.raises(ValueError, match="split_sum_norm"):
        sum_splits(part, y[:, :256], residual[:, :256], NormAfter(w, 1e-6))
    if order:  # the orders' column multiples
        odd = NormAfter(w[:704], 1e-6, order=order)
        with pytest.raises(ValueError, match="multiple"):
            sum_splits(part[..., :704].contiguous(), y[:, :704], residual[:, :704], odd)


def _rope_case(seed: int, qk_norm: bool) -> tuple:
    """A q|k|v projection of 2 sequences x 3 tokens (4 query and 2 KV heads of 32), their
    positions, the rotary table, the q/k norm weights (or None) and a random cache, for
    qk_rope_write and its reference: (qkv, positions, table, norms, cache, heads)."""
    gen = torch.Generator().manual_seed(seed)
    batch, t, heads, kv_heads, d, length = 2, 3, 4, 2, 32, 40
    qkv = torch.randn(batch * t, (heads + 2 * kv_heads) * d, generator=gen).to(DEVICE, BF16)
    positions = torch.tensor([[5, 6, 7], [30, 31, 32]], device=DEVICE)
    table = RotaryTable(d, 10000.0, RopeScaling(), 64, DEVICE, BF16)
    norms = [(torch.rand(d, generator=gen) + 0.5).to(DEVICE, BF16) for _ in range(2)]
    norms = norms if qk_norm else [None, None]
    cache = torch.randn(batch, kv_heads, length, d, generator=gen).to(DEVICE, BF16)
    return qkv, positions, table, norms, cache, heads


@pytest.mark.parametrize("qk_norm", [True, False])
def test_qk_rope_write(qk_norm: bool) -> None:
    qkv, positions, table, norms, cache, heads = _rope_case(1, qk_norm)
    kernel = [cache.clone(), cache.clone()]
    ref = [cache.clone(), cache.clone()]
    q = qk_rope_write(qkv, positions, table.cos, table.sin, *kernel, heads, *norms, 1e-6)
    q_ref = qk_rope_write_reference(qkv, positions, table.cos, table.sin, *ref, heads, *norms, 1e-6)
    # NOTE: bit-identical in the interpreter (with GPU rounding); compiled for the H200 a few
    # elements differ by a rounding or two even without the norm: the compiler keeps some bf16
    # intermediates in fp32 (runs 8-10, docs/LOG.md)
    close(q, q_ref, 4)
    close(kernel[0], ref[0], 4)
    assert torch.equal(kernel[1], ref[1])  # values are copied as they are


@pytest.mark.parametrize(
    "rows, tile, qk_norm",
    [
        (6, dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=32, USE_DOT=True), True),  # 2 programs a head
        (6, dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=64, USE_DOT=True), False),  # 1
        (6, dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=64, USE_DOT=True), True),  # 2 heads a program
        (1, dict(BLOCK_M=1, BLOCK_N=8, BLOCK_K=64, USE_DOT=False), True),  # 4, one row
        (3, dict(BLOCK_M=2, BLOCK_N=8, BLOCK_K=64, USE_DOT=False), True),  # 2 blocks of rows
    ],
)
def test_rope_epilogue_writes_what_the_rope_kernel_writes(rows, tile, qk_norm) -> None:
    """kernels/rope.RopeEpilogue: a q|k|v multiply whose last program of each head (and block of
    rows; or each program, for its whole heads) does the rope kernel's work returns the same
    projection, and its rotated queries and both caches are the multiply-then-rope kernel's bit
    for bit (it reads the stored, rounded head back); a K-split tile cannot and leaves `q` None
    and the caches untouched. The counters are left zero for the next launch."""
    from specpilot.kernels.common import zeroed_counters
    from specpilot.kernels.rope import RopeEpilogue

    qkv_all, positions, table, norms, cache, heads = _rope_case(9, qk_norm)
    batch = 2 if rows == 6 else 1
    positions = positions[:batch, : rows // batch]
    gen = torch.Generator().manual_seed(rows)
    k = 64
    x = torch.randn(rows, k, generator=gen).to(DEVICE, BF16)
    w = (torch.randn(qkv_all.shape[1], k, generator=gen) * k**-0.5).to(DEVICE, BF16)
    cfg = dict(tile, num_warps=4, num_stages=2)
    base = [cache[:batch].clone(), cache[:batch].clone()]
    qkv = skinny_linear(x, w, config=cfg)
    q_base = qk_rope_write(qkv, positions, table.cos, table.sin, *base, heads, *norms, 1e-6)
    fused_kv = [cache[:batch].clone(), cache[:batch].clone()]
    rope = RopeEpilogue(positions, table.cos, table.sin, *fused_kv, heads, *norms, 1e-6)
    assert torch.equal(skinny_linear(x, w, config=cfg, rope=rope), qkv)
    assert rope.q is not None
    # NOTE: bit for bit in the interpreter; compiled, the two kernels may keep other bf16
    # intermediates in fp32 (test_qk_rope_write's note): within its 4 half-ulps there
    same = (lambda a, b: close(a, b, 4) or True) if CUDA else torch.equal
    assert same(rope.q, q_base) and same(fused_kv[0], base[0])
    assert torch.equal(fused_kv[1], base[1])  # values are copied as they are
    assert not torch.equal(fused_kv[0], cache[:batch])
    assert not zeroed_counters(DEVICE, 1).any()
    untouched = [cache[:batch].clone(), cache[:batch].clone()]
    rope = RopeEpilogue(positions, table.cos, table.sin, *untouched, heads, *norms, 1e-6)
    split = dict(cfg, SPLIT_K=2, USE_DOT=True, BLOCK_M=16, BLOCK_N=16)
    close(skinny_linear(x, w, config=split, rope=rope), qkv, 2)
    assert rope.q is None and torch.equal(untouched[0], cache[:batch])


@pytest.mark.parametrize("qk_norm", [True, False])
def test_kv_rope_write_layers(qk_norm: bool) -> None:
    """Three layers' context keys and values (a drafter's, fused.DRAFT_CONTEXT_ONCE 2) in one
    launch: each layer's cache as the reference writes it (one qk_rope_write_reference a
    layer, with its own k norm), the other batch rows and positions untouched."""
    gen = torch.Generator().manual_seed(4)
    layers, batch, t, kv_heads, d, length = 3, 2, 3, 2, 32, 40
    kv = torch.randn(batch * t, layers * 2 * kv_heads * d, generator=gen).to(DEVICE, BF16)
    positions = torch.tensor([[5, 6, 7], [30, 31, 32]], device=DEVICE)
    table = RotaryTable(d, 10000.0, RopeScaling(), 64, DEVICE, BF16)
    norms = (torch.rand(layers, d, generator=gen) + 0.5).to(DEVICE, BF16) if qk_norm else None
    cache = torch.randn(layers, batch, kv_heads, length, d, generator=gen).to(DEVICE, BF16)
    kernel = [cache.clone(), cache.clone()]
    ref = [cache.clone(), cache.clone()]
    kv_rope_write_layers(kv, positions, table.cos, table.sin, *kernel, norms, 1e-6)
    kv_rope_write_layers_reference(kv, positions, table.cos, table.sin, *ref, norms, 1e-6)
    close(kernel[0], ref[0], 4)  # as test_qk_rope_write's
    assert torch.equal(kernel[1], ref[1])
    assert not torch.equal(kernel[1], cache)
    with pytest.raises(ValueError, match="split"):
        kv_rope_write_layers(kv[:, :-d], positions, table.cos, table.sin, *kernel, norms, 1e-6)
    if norms is not None:
        with pytest.raises(ValueError, match="k_norms"):
            kv_rope_write_layers(kv, positions, table.cos, table.sin, *kernel, norms[:2], 1e-6)


@pytest.mark.parametrize("qk_norm", [False, True])
def test_qk_rope_write_early_tables(monkeypatch, launch_settings, qk_norm: bool) -> None:
    """rope.EARLY_TABLES (the position and its table rows read before the PDL wait; PDL on
    every kernel where the device has it) writes the same bits as the tables read after it."""
    from specpilot.kernels import rope

    launch_settings.configure(pdl="all", prefetch="off")
    qkv, positions, table, norms, cache, heads = _rope_case(2, qk_norm)
    outs = []
    for early in (False, True):
        monkeypatch.setattr(rope, "EARLY_TABLES", early)
        kv = [cache.clone(), cache.clone()]
        q = qk_rope_write(qkv, positions, table.cos, table.sin, *kv, heads, *norms, 1e-6)
        outs.append((q, *kv))
    assert all(torch.equal(a, b) for a, b in zip(*outs))


@pytest.mark.skipif(not CUDA, reason="warps a program mean nothing to the interpreter")
@pytest.mark.parametrize("warps", [1, 2])
def test_rmsnorm_on_fewer_warps(monkeypatch, warps: int) -> None:
    """elementwise.NORM_WARPS: the RMSNorm of 1 and 16 rows of 4096 on 1 or 2 warps matches the
    reference within a rounding."""
    from specpilot.kernels import elementwise

    monkeypatch.setattr(elementwise, "NORM_WARPS", warps)
    gen = torch.Generator().manual_seed(warps)
    for rows in (1, 16):
        x = torch.randn(rows, 4096, generator=gen).to(DEVICE, BF16)
        w = torch.randn(4096, generator=gen).to(DEVICE, BF16)
        out = elementwise.rmsnorm(x, w, 1e-6)
        close(out, elementwise.rmsnorm_reference(x, w, 1e-6), 2)


def test_counter_buffers_grow_and_are_kept(monkeypatch) -> None:
    """A larger counter buffer serves new launches; the smaller one stays alive (captured graphs
    replay its address)."""
    from specpilot.kernels import common

    monkeypatch.setattr(common, "_COUNTERS", {})
    small = common.zeroed_counters(torch.device("cpu"), 10)
    large = common.zeroed_counters(torch.device("cpu"), 5000)
    assert small.numel() == 4096 and large.numel() == 5000 and int(large.abs().sum()) == 0
    assert common.zeroed_counters(torch.device("cpu"), 10) is large
    assert common._COUNTERS[torch.device("cpu")][0] is small


def test_fused_merge_matches_the_merge_kernel_and_leaves_counters_zero(monkeypatch) -> None:
    """Decode attention whose last split program merges (few rows) against the same through the
    merge kernel: the same values (the same sums in the same order; the compiler may fuse
    differently), over three launches in a row, with every counter back to zero after each."""
    from specpilot.kernels import attention
    from specpilot.kernels.common import zeroed_counters

    gen = torch.Generator().manual_seed(3)
    batch, kv_heads, heads, d, length = 3, 2, 8, 32, 400
    k = torch.randn(batch, kv_heads, length, d, generator=gen).to(DEVICE, BF16)
    v = torch.randn(batch, kv_heads, length, d, generator=gen).to(DEVICE, BF16)
    for step, start in enumerate((17, 130, 399)):
        q = torch.randn(batch, heads, d, generator=gen).to(DEVICE, BF16)
        positions = torch.tensor([[start], [start // 2], [5]], device=DEVICE)
        monkeypatch.setattr(attention, "FUSED_MERGE_MAX_ROWS", 8)
        fused = decode_attention(q, k, v, positions, 5)
        assert int(zeroed_counters(q.device, batch * kv_heads).abs().sum()) == 0, step
        monkeypatch.setattr(attention, "FUSED_MERGE_MAX_ROWS", 0)
        separate = decode_attention(q, k, v, positions, 5)
        close(fused, separate, 1)
        attention_close(fused, q, k, v, positions)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize(
    ("heads", "kv_heads", "t", "splits"), [(8, 2, 1, 3), (4, 4, 5, 1), (8, 1, 16, 7)]
)
def test_decode_attention(causal: bool, heads: int, kv_heads: int, t: int, splits: int) -> None:
    gen = torch.Generator().manual_seed(heads + t)
    batch, d, length = 2, 32, 300
    k = torch.randn(batch, kv_heads, length, d, generator=gen).to(DEVICE, BF16)
    v = torch.randn(batch, kv_heads, length, d, generator=gen).to(DEVICE, BF16)
    q = torch.randn(batch * t, heads, d, generator=gen).to(DEVICE, BF16)
    starts = torch.tensor([[40], [250]], device=DEVICE)
    positions = starts + torch.arange(t, device=DEVICE)
    out = decode_attention(q, k, v, positions, splits, causal=causal)
    attention_close(out, q, k, v, positions, causal)


@pytest.mark.parametrize(("fused_rows", "block", "t"), [(64, 0, 5), (0, 0, 1), (0, 4, 5)])
def test_decode_attention_writes_pair_order(monkeypatch, fused_rows: int, block: int,
                                            t: int) -> None:  # fmt: skip
    """pair=True: the same output, its columns in w12_ws.pair_order (the o projection's input on
    w12_tc), from each of the three stores (the merge inside the split kernel, the merge
    kernel's one row and its MERGE_PROGRAM_ROWS rows a program); heads x D off 256 refused."""
    from specpilot.kernels import attention, w12_ws

    monkeypatch.setattr(attention, "FUSED_MERGE_MAX_ROWS", fused_rows)
    monkeypatch.setattr(attention, "MERGE_PROGRAM_ROWS", block)
    q, k, v, positions = _attention_inputs(t, 8, 200, 150, seed=t)
    natural = decode_attention(q, k, v, positions, 3)
    paired = decode_attention(q, k, v, positions, 3, pair=True)
    assert torch.equal(paired, w12_ws.pair_order(natural))
    with pytest.raises(ValueError, match="pair order"):
        decode_attention(q[:, :4].contiguous(), k, v, positions, 3, pair=True)


def check_attention_nan_scratch(monkeypatch, t: int, seed: int) -> None:
    """decode_attention of 2 sequences (40 and 650 keys before the block of t tokens) with its
    scratch (partials, stats) NaN-filled, so a slice read but not written fails, within exact
    attention's rounding bound."""
    empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *size, **kw: empty(*size, **kw).fill_(math.nan))
    q, k, v, positions = _attention_inputs(t, 4, 700, 650, seed)
    out = decode_attention(q, k, v, positions, 6)
    attention_close(out, q, k, v, positions)


def _attention_inputs(t: int, heads: int, length: int, start: int, seed: int) -> tuple:
    """q, the caches (2 KV heads, D 32) and positions of 2 sequences, blocks of t tokens at
    positions 40 and `start`: the random bf16 inputs of decode_attention."""
    gen = torch.Generator().manual_seed(seed)
    batch, kv_heads, d = 2, 2, 32
    k = torch.randn(batch, kv_heads, length, d, generator=gen).to(DEVICE, BF16)
    v = torch.randn(batch, kv_heads, length, d, generator=gen).to(DEVICE, BF16)
    q = torch.randn(batch * t, heads, d, generator=gen).to(DEVICE, BF16)
    positions = torch.tensor([[40], [start]], device=DEVICE) + torch.arange(t, device=DEVICE)
    return q, k, v, positions


@pytest.mark.skipif(not CUDA, reason="warps a program mean nothing to the interpreter")
@pytest.mark.parametrize("t", [1, 16])
def test_decode_attention_eight_warps(monkeypatch, t: int) -> None:
    """The split and merge launches with 8 warps a program (attention.SPLIT_WARPS /
    MERGE_WARPS): within exact attention's rounding bound, no unwritten slice read."""
    from specpilot.kernels import attention

    monkeypatch.setattr(attention, "SPLIT_WARPS", {"narrow": 8, "wide": 8})
    monkeypatch.setattr(attention, "MERGE_WARPS", 8)
    check_attention_nan_scratch(monkeypatch, t, 3 + t)


def attention_under_pdl(launch_settings, t: int):
    """With PDL on every kernel: a call of decode_attention on 2 sequences (40 and 650 keys
    before a block of t tokens; 2 KV heads of 2 query heads, head_dim 32, 6 slices), its
    output now (for a switch's same-bits check) and its key and value caches."""
    launch_settings.configure(pdl="all", prefetch="off")
    gen = torch.Generator().manual_seed(t)
    k, v = (torch.randn(2, 2, 700, 32, generator=gen).to(DEVICE, BF16) for _ in range(2))
    q = torch.randn(2 * t, 4, 32, generator=gen).to(DEVICE, BF16)
    positions = torch.tensor([[40], [650]], device=DEVICE) + torch.arange(t, device=DEVICE)

    def attend() -> torch.Tensor:
        return decode_attention(q, k, v, positions, 6)

    return attend, attend(), (k, v)


@pytest.mark.parametrize("t", [1, 16])
def test_decode_attention_early_positions(monkeypatch, launch_settings, t: int) -> None:
    """The split and merge programs reading the positions before their PDL wait
    (attention.EARLY_POSITIONS): the same loads in another order, so the same bits, and within
    exact attention's rounding bound with no unwritten slice read. Under PDL on CUDA (a GPU
    check: a position read before the wait that the kernel before had to write would differ)."""
    from specpilot.kernels import attention

    attend, plain, _ = attention_under_pdl(launch_settings, t)
    monkeypatch.setattr(attention, "EARLY_POSITIONS", True)
    assert torch.equal(attend(), plain)
    check_attention_nan_scratch(monkeypatch, t, 5 + t)
    monkeypatch.setattr(attention, "EARLY_POSITIONS", 2)
    with pytest.raises(ValueError, match="EARLY_POSITIONS must be 0 or 1"):
        attend()


@pytest.mark.skipif(not CUDA, reason="the interpreter does not pipeline loops")
@pytest.mark.parametrize("t", [1, 16])
@pytest.mark.parametrize("stages", [1, 2])
def test_decode_attention_split_stages(monkeypatch, t: int, stages: int) -> None:
    """The split launches' loop pipelined `stages` key blocks deep (attention.SPLIT_STAGES):
    within exact attention's rounding bound, no unwritten slice read."""
    from specpilot.kernels import attention

    monkeypatch.setattr(attention, "SPLIT_STAGES", {"narrow": stages, "wide": stages})
    check_attention_nan_scratch(monkeypatch, t, 3 + t)


@pytest.mark.skipif(not CUDA, reason="the L2 prefetch is inline PTX: CUDA only")
@pytest.mark.parametrize(("t", "keys"), [(1, 64), (16, 128), (16, 1024)])
def test_decode_attention_kv_prefetch(monkeypatch, launch_settings, t: int, keys: int) -> None:
    """The split programs asking L2 for their slices' keys and values before the PDL wait
    (attention.KV_PREFETCH_KEYS): a hint, so the same bits as without it, and within exact
    attention's rounding bound with no unwritten slice read."""
    from specpilot.kernels import attention

    attend, plain, cache = attention_under_pdl(launch_settings, t)  # PDL: the prefetch's wait
    monkeypatch.setattr(attention, "KV_PREFETCH_KEYS", keys)
    assert attention.kv_prefetch_arguments(*cache)["KV_AHEAD"] == keys
    assert torch.equal(attend(), plain)
    check_attention_nan_scratch(monkeypatch, t, 3 + t)


@pytest.mark.parametrize("q_rows", [16, 32])
@pytest.mark.parametrize(("t", "causal"), [(16, True), (16, False), (5, True), (2, True)])
def test_decode_attention_query_row_blocks(monkeypatch, q_rows: int, t: int, causal: bool):
    """Verify and draft blocks with WIDE_Q_ROWS query rows a split program (the launch's rows
    in blocks: 64 in 4 or 2, 20 (padded to 32) in 2 or 1): every row written, none twice,
    within exact attention's rounding bound with NaN scratch; the same bits as one program a
    slice under the interpreter (the rows' arithmetic does not change). 8 rows (t=2) stay
    in one program (WIDE_ROWS). A program that took another block's rows fails the t=16 and
    t=5 cases."""
    from specpilot.kernels import attention

    gen = torch.Generator().manual_seed(t + q_rows)
    k, v = (torch.randn(2, 2, 700, 32, generator=gen).to(DEVICE, BF16) for _ in range(2))
    q = torch.randn(2 * t, 8, 32, generator=gen).to(DEVICE, BF16)  # 4 query heads a KV head
    positions = torch.tensor([[40], [650]], device=DEVICE) + torch.arange(t, device=DEVICE)
    whole = decode_attention(q, k, v, positions, 6, causal=causal)
    monkeypatch.setattr(attention, "WIDE_Q_ROWS", q_rows)
    empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *size, **kw: empty(*size, **kw).fill_(math.nan))
    out = decode_attention(q, k, v, positions, 6, causal=causal)
    attention_close(out, q, k, v, positions, causal=causal)
    if not CUDA:
        assert torch.equal(out, whole)


@pytest.mark.parametrize(("step", "t", "q_rows"), [(32, 1, 0), (16, 5, 0), (32, 16, 16)])
def test_decode_attention_kv_step(monkeypatch, step: int, t: int, q_rows: int) -> None:
    """Split programs that walk their slices SPLIT_KV_STEP keys a step (slices stay multiples
    of BLOCK_KV): within exact attention's rounding bound with NaN scratch, alone and with
    query-row blocks."""
    from specpilot.kernels import attention

    monkeypatch.setattr(attention, "SPLIT_KV_STEP", step)
    monkeypatch.setattr(attention, "WIDE_Q_ROWS", q_rows)
    check_attention_nan_scratch(monkeypatch, t, 7 + t)


@pytest.mark.parametrize(("block", "t"), [(4, 1), (16, 16), (4, 5), (64, 2)])
def test_decode_attention_merge_program_rows(monkeypatch, block: int, t: int) -> None:
    """The merge with several query rows a program (MERGE_PROGRAM_ROWS, the slices walked in
    order): within exact attention's rounding bound with NaN scratch (an unfilled slice read,
    or a row left unmerged, fails), from one block of rows to many, a last block part full."""
    from specpilot.kernels import attention

    monkeypatch.setattr(attention, "MERGE_PROGRAM_ROWS", block)
    rows = 2 * t  # check_attention_nan_scratch: 2 query heads a KV head
    assert attention.merge_program_rows(rows) == min(block, 1 << (rows - 1).bit_length())
    check_attention_nan_scratch(monkeypatch, t, 11 + t)


def test_merge_program_rows_rules(monkeypatch) -> None:
    """MERGE_PROGRAM_ROWS: 0 (one row a program) or a power of two, else an error."""
    from specpilot.kernels import attention

    assert attention.merge_program_rows(64) == 0
    for bad in (-4, 12):
        monkeypatch.setattr(attention, "MERGE_PROGRAM_ROWS", bad)
        with pytest.raises(ValueError, match="MERGE_PROGRAM_ROWS"):
            attention.merge_program_rows(64)


def test_kv_step_rules(monkeypatch) -> None:
    """SPLIT_KV_STEP: a power of two from 16 to BLOCK_KV, else an error at launch."""
    from specpilot.kernels import attention

    assert attention.kv_step() == attention.BLOCK_KV
    for bad in (8, 48, 2 * attention.BLOCK_KV):
        monkeypatch.setattr(attention, "SPLIT_KV_STEP", bad)
        with pytest.raises(ValueError, match="SPLIT_KV_STEP"):
            attention.kv_step()


def test_split_query_rows_rules(monkeypatch) -> None:
    """WIDE_Q_ROWS: 0 keeps every row in one program; a power of two >= 16 splits launches of
    more than WIDE_ROWS rows (never past the launch's padded rows, never with the in-kernel
    merge); anything else is an error."""
    from specpilot.kernels import attention

    assert attention.split_query_rows(64, 64, False) == 64
    monkeypatch.setattr(attention, "WIDE_Q_ROWS", 16)
    assert attention.split_query_rows(64, 64, False) == 16
    assert attention.split_query_rows(64, 64, True) == 64
    assert attention.split_query_rows(4, 16, False) == 16
    monkeypatch.setattr(attention, "WIDE_Q_ROWS", 128)
    assert attention.split_query_rows(20, 32, False) == 32
    for bad in (8, 24, -16):
        monkeypatch.setattr(attention, "WIDE_Q_ROWS", bad)
        with pytest.raises(ValueError, match="WIDE_Q_ROWS"):
            attention.split_query_rows(64, 64, False)


def test_num_splits_for_rules(monkeypatch) -> None:
    """Two programs an SM, no more slices than key blocks, and at most MAX_SPLITS where set (a
    negative cap is an error)."""
    from specpilot.kernels import attention

    monkeypatch.setattr(attention, "MAX_SPLITS", 0)
    assert attention.num_splits_for(1, 8, 40_000) == 33
    assert attention.num_splits_for(1, 8, 40_000, num_sms=8) == 2
    assert attention.num_splits_for(1, 8, 5 * attention.BLOCK_KV) == 5
    assert attention.num_splits_for(64, 8, 40_000) == 1
    monkeypatch.setattr(attention, "MAX_SPLITS", 32)
    assert attention.num_splits_for(1, 8, 40_000) == 32
    assert attention.num_splits_for(1, 8, 5 * attention.BLOCK_KV) == 5
    monkeypatch.setattr(attention, "MAX_SPLITS", -1)
    with pytest.raises(ValueError, match="MAX_SPLITS"):
        attention.num_splits_for(1, 8, 40_000)


@pytest.mark.parametrize("chunk", [2, 4])
@pytest.mark.parametrize("t", [1, 16])
def test_decode_attention_merge_split_chunk(monkeypatch, chunk: int, t: int) -> None:
    """The one-row merge taking MERGE_SPLIT_CHUNK slices at a time (of 6: the last chunk part
    filled or past the filled slices): within exact attention's rounding bound, no unwritten
    slice read; a chunk not below the slices' power of two loads them at once, and a chunk
    that is not a power of two is an error."""
    from specpilot.kernels import attention

    monkeypatch.setattr(attention, "MERGE_SPLIT_CHUNK", chunk)
    assert attention.merge_chunk(6) == chunk
    assert attention.merge_chunk(chunk) == 0
    check_attention_nan_scratch(monkeypatch, t, 7 + t)
    monkeypatch.setattr(attention, "MERGE_SPLIT_CHUNK", 3)
    with pytest.raises(ValueError, match="MERGE_SPLIT_CHUNK"):
        attention.merge_chunk(6)


@pytest.mark.parametrize(("pad", "wide_max"), [(1, 0), (0, 2), (3, 4)])
@pytest.mark.parametrize("t", [1, 16])
def test_decode_attention_slot_pad_and_wide_max_splits(monkeypatch, t: int, pad: int,
                                                       wide_max: int) -> None:  # fmt: skip
    """SLOT_PAD (partials a few slots further apart) and WIDE_MAX_SPLITS (fewer slices for
    launches of more than WIDE_ROWS query rows; one-token launches keep theirs): within exact
    attention's rounding bound, no unwritten slice read, through the merge kernel and the
    one-row merge's chunks; the switches' rules are checked."""
    from specpilot.kernels import attention

    monkeypatch.setattr(attention, "SLOT_PAD", pad)
    monkeypatch.setattr(attention, "WIDE_MAX_SPLITS", wide_max)
    monkeypatch.setattr(attention, "MERGE_SPLIT_CHUNK", 2)
    check_attention_nan_scratch(monkeypatch, t, 11 + t)
    for name in ("SLOT_PAD", "WIDE_MAX_SPLITS"):
        monkeypatch.setattr(attention, name, -1)
        with pytest.raises(ValueError, match=name):
            check_attention_nan_scratch(monkeypatch, t, 11 + t)
        monkeypatch.setattr(attention, name, 0)


def test_kv_prefetch_arguments() -> None:
    """The split launch asks for keys only where it can (a CUDA bf16 cache of contiguous key
    rows); a count that is not a multiple of BLOCK_KV is an error."""
    from specpilot.kernels import attention

    cache = torch.zeros(1, 2, 256, 64, dtype=torch.bfloat16)
    old = attention.KV_PREFETCH_KEYS
    try:
        attention.KV_PREFETCH_KEYS = 128
        assert attention.kv_prefetch_arguments(cache, cache) == {"KV_AHEAD": 0, "cache_len": 256}
        attention.KV_PREFETCH_KEYS = 100
        with pytest.raises(ValueError, match="multiple of 64"):
            attention.kv_prefetch_arguments(cache, cache)
    finally:
        attention.KV_PREFETCH_KEYS = old


@pytest.mark.parametrize("merge_rows", [0, 8])
@pytest.mark.parametrize(("min_keys", "t"), [(128, 1), (256, 4), (1024, 16)])
def test_decode_attention_min_split_keys(monkeypatch, min_keys: int, t: int, merge_rows: int):
    """Slices of at least MIN_SPLIT_KEYS keys: a short sequence fills only its first slices (one,
    for 40 keys and 1,024 a slice), a long one more; within the rounding bound of exact
    attention, through the merge kernel and (few rows) the last split program's merge. The
    slices that hold no keys store nothing: their parts are NaN here and must not be read."""
    from specpilot.kernels import attention

    monkeypatch.setattr(attention, "MIN_SPLIT_KEYS", min_keys)
    monkeypatch.setattr(attention, "FUSED_MERGE_MAX_ROWS", merge_rows)
    check_attention_nan_scratch(monkeypatch, t, min_keys + t)


@pytest.mark.parametrize("t", [4, 16])
def test_decode_attention_wide_min_split_keys(monkeypatch, t: int) -> None:
    """Verify and draft blocks (more than WIDE_ROWS query rows) take WIDE_MIN_SPLIT_KEYS as
    their slices' minimum, fewer rows MIN_SPLIT_KEYS: the split and merge launches agree
    (check_attention_nan_scratch)."""
    from specpilot.kernels import attention

    monkeypatch.setattr(attention, "WIDE_MIN_SPLIT_KEYS", 256)
    assert attention.min_split_keys(8) == attention.MIN_SPLIT_KEYS
    assert attention.min_split_keys(9) == 256
    check_attention_nan_scratch(monkeypatch, t, t)


# new tokens of the interpreter's speculative runs: the prefill's token, then at most two
# speculative steps (two when the first accepts no draft, as the tiny random drafter's mostly
# do); each 16-row verify of the tiny pair takes seconds under the interpreter
SPEC_TOKENS = 3


def _sequences(vocab: int, new_tokens: int) -> list[Sequence]:
    gen = torch.Generator().manual_seed(5)
    return [
        Sequence(torch.randint(0, vocab, (n,), generator=gen).tolist(), new_tokens, frozenset())
        for n in (7, 12)
    ]


def assert_forced(reference, seqs: list[Sequence]) -> None:
    """Every sequence's outputs pass token forcing against the fp32 reference (margin 0.5)."""
    from specpilot.spec.forcing import token_forcing

    for s in seqs:
        report = token_forcing(reference, s.prompt_ids, s.output_ids, threshold=0.5)
        assert report.passed, report.failures


def record_drafts(gen: Generator) -> list[int]:
    """Wrap the generator's draft function; the list fills with every proposed token."""
    seen: list[int] = []
    inner = gen._draft_fn

    def recording(*args):
        drafts = inner(*args)
        seen.extend(drafts.flatten().tolist())
        return drafts

    gen._draft_fn = recording
    return seen


def _runs_pass_forcing(gen: Generator, reference) -> dict[bool, list[list[int]]]:
    """AR and speculative runs of _sequences through `gen`, every output passing token forcing
    against `reference`: {speculative: the outputs}."""
    outputs = {}
    for speculative in (False, True):
        seqs = _sequences(gen.target.config.vocab_size, 24)
        gen.run(seqs, speculative=speculative)
        outputs[speculative] = [s.output_ids for s in seqs]
        assert_forced(reference, seqs)
    return outputs


def _tiny_pair(tmp_path, tied: bool = True, **shape) -> tuple:
    """A two-layer target (head_dim 16: the kernels take powers of two; the interpreter is
    slow) and a drafter in bf16, and the target in fp32 as the token-forcing reference; `shape`:
    more of the config's sizes."""
    from specpilot.models.loader import load_drafter, load_target
    from specpilot.models.synth import synth_target, target_hf_config
    from tests.conftest import INIT_STD, make_drafter

    hf = target_hf_config(
        "qwen3", "tiny", eos_token_id=None, head_dim=16, num_hidden_layers=2, vocab_size=263,
        **shape,
    )  # fmt: skip
    hf["tie_word_embeddings"] = tied
    target_dir = tmp_path / "t"
    synth_target(target_dir, hf, seed=0, dtype=torch.float32, std=INIT_STD)
    draft_dir = make_drafter(tmp_path / "d", target_dir)
    target, _ = load_target(target_dir, DEVICE, BF16)
    drafter, _ = load_drafter(draft_dir, target.config, DEVICE, BF16)
    reference, _ = load_target(target_dir, DEVICE, torch.float32)
    return target, drafter, reference


@pytest.mark.block_merge
def test_query_row_blocks_verify_gives_the_same_bits(tmp_path, monkeypatch) -> None:
    """A fused verify forward of 16 tokens (32 query rows a KV head) with the attention in
    programs of 16 query rows (attention.WIDE_Q_ROWS): the same tokens and captured hidden
    states, bit for bit, as one program a slice (interpreter; on a GPU within the forwards'
    rounding, the tokens equal)."""
    from specpilot.kernels import attention

    target, drafter, _ = _tiny_pair(tmp_path)
    gen = Generator(target, drafter, EngineConfig(kernels="triton", block_size=16), DEVICE, BF16)
    gen._buffers_for("target", 1, 64)
    ids = torch.randint(0, 263, (1, 16), generator=torch.Generator().manual_seed(6)).to(DEVICE)
    pos = torch.arange(16, device=DEVICE)[None]
    outs = {}
    for q_rows in (16, 0):  # blocks first: no partials left by a whole-launch run to reuse
        monkeypatch.setattr(attention, "WIDE_Q_ROWS", q_rows)
        outs[q_rows] = gen._verify_fn(ids, pos, 16, (0, 1))
    assert torch.equal(outs[16].tokens, outs[0].tokens)
    if not CUDA:
        assert torch.equal(outs[16].hidden, outs[0].hidden)


@pytest.mark.skipif(not CUDA, reason="whole speculative runs through the interpreter take minutes")
def test_query_row_blocks_engine_gives_the_same_tokens(tmp_path, monkeypatch) -> None:
    """Speculative decoding through the kernels (CUDA graphs on) with the verify and draft
    blocks' attention in programs of 16 query rows (attention.WIDE_Q_ROWS): the same tokens as
    with one program a slice, and token forcing passes."""
    from specpilot.kernels import attention

    target, drafter, reference = _tiny_pair(tmp_path)
    outputs = {}
    for q_rows in (0, 16):
        monkeypatch.setattr(attention, "WIDE_Q_ROWS", q_rows)
        config = EngineConfig(kernels="triton", cuda_graphs=True, block_size=16)
        gen = Generator(target, drafter, config, DEVICE, BF16)
        seqs = _sequences(target.config.vocab_size, 24)
        gen.run(seqs, speculative=True)
        outputs[q_rows] = [s.output_ids for s in seqs]
        assert_forced(reference, seqs)
    assert outputs[16] == outputs[0]


def _verify_inputs(target, drafter, seed: int) -> tuple:
    """A kernels engine over the tiny pair, and a 5-token verify block at positions 0-4."""
    gen = Generator(target, drafter, EngineConfig(kernels="triton"), DEVICE, BF16)
    gen._buffers_for("target", 1, 64)
    ids = torch.randint(0, 263, (1, 5), generator=torch.Generator().manual_seed(seed)).to(DEVICE)
    return gen, ids, torch.arange(5, device=DEVICE)[None]


def _recorded_linear_calls(monkeypatch, what) -> list:
    """What `what(keywords)` gives for each fused.linear call from now on, in order."""
    from specpilot.models import fused

    calls: list = []
    plain = fused.linear

    def recording(*args, **kw):
        calls.append(what(kw))
        return plain(*args, **kw)

    monkeypatch.setattr(fused, "linear", recording)
    return calls


def _counted_norms(monkeypatch) -> list:
    """One entry for each norm kernel the fused forwards launch from now on."""
    from specpilot.models import fused

    norms: list = []
    plain = fused.rmsnorm
    monkeypatch.setattr(fused, "rmsnorm", lambda *a, **kw: norms.append(1) or plain(*a, **kw))
    return norms


@pytest.mark.block_merge
@pytest.mark.parametrize("weights", ["bf16", "w12"])
def test_rope_epilogue_forward_gives_the_same_bits(tmp_path, monkeypatch, weights: str) -> None:
    """rope.EPILOGUE: verify and one-token forwards whose q|k|v multiplies do the rope
    kernel's work launch no rope kernel (bf16) and give the same tokens and captured hidden
    states as with it, bit for bit in the interpreter; W12 multiplies leave it to the rope
    kernel (a one-token forward's), and EPILOGUE 1 to the 5-token forward."""
    from specpilot.kernels import rope
    from specpilot.models import fused

    target, drafter, _ = _tiny_pair(tmp_path, tied=weights == "bf16")
    if weights == "w12":
        from specpilot.formats.w12_engine import convert_model

        convert_model(target)
    gen, ids, pos = _verify_inputs(target, drafter, 8)
    launches: list = []
    plain = fused.qk_rope_write
    monkeypatch.setattr(fused, "qk_rope_write", lambda *a: launches.append(1) or plain(*a))
    layers = len(target.model.layers)
    outs = {}
    # W12: the launches of a one-token forward only (the interpreter's W12 tiles are slow)
    widths = (5, 1) if weights == "bf16" else (1,)
    for rows in (0, 64, 1) if weights == "bf16" else (64,):
        monkeypatch.setattr(rope, "EPILOGUE", rows)
        launches.clear()
        outs[rows] = [gen._verify_fn(ids[:, :t], pos[:, :t], t, (0, 1)) for t in widths]
        fused_forwards = sum(t <= rows for t in widths) if weights == "bf16" else 0
        assert len(launches) == layers * (len(widths) - fused_forwards)
    for a, b, c in zip(outs.get(0, ()), outs.get(64, ()), outs.get(1, ())):
        assert torch.equal(a.tokens, c.tokens)
        assert torch.equal(a.tokens, b.tokens)
        if CUDA:  # other kernels' roundings, carried on in the residual stream
            close(b.hidden, a.hidden, 16)
        else:
            assert torch.equal(b.hidden, a.hidden)


@pytest.mark.skipif(not CUDA, reason="the counters' fences and CUDA graphs need a GPU")
def test_rope_epilogue_engine_gives_the_same_tokens(tmp_path, monkeypatch) -> None:
    """rope.EPILOGUE in the engine on the GPU (CUDA graphs, PDL "chain"): the same tokens as
    the rope kernel's, AR and speculative, and token forcing passes."""
    from specpilot.kernels import rope

    target, drafter, reference = _tiny_pair(tmp_path)
    outputs = {}
    for rows in (0, 64):
        monkeypatch.setattr(rope, "EPILOGUE", rows)
        config = EngineConfig(kernels="triton", cuda_graphs=True, pdl="chain")
        outputs[rows] = _runs_pass_forcing(
            Generator(target, drafter, config, DEVICE, BF16), reference
        )
    assert outputs[64] == outputs[0]


@pytest.mark.block_merge
@pytest.mark.parametrize("weights", ["bf16", "w12"])
def test_swiglu_epilogue_forward_gives_the_same_bits(tmp_path, monkeypatch, weights: str) -> None:
    """A fused verify forward with the gate|up multiply ending in silu(gate) * up
    (fused.SWIGLU_EPILOGUE_MIN_ROWS): the same tokens and captured hidden states, bit for bit,
    as with the SwiGLU kernel, bf16 and W12; the epilogue is asked for only from that many
    rows on."""
    from specpilot.models import fused

    target, drafter, _ = _tiny_pair(tmp_path, tied=weights == "bf16")
    if weights == "w12":
        from specpilot.formats.w12_engine import convert_model

        convert_model(target)
        convert_model(drafter)
    gen, ids, pos = _verify_inputs(target, drafter, 5)
    asked = _recorded_linear_calls(monkeypatch, lambda kw: kw.get("swiglu", False))
    outs = {}
    for rows in (0, 6, 5):  # never, from 6 rows on (not this 5-row forward), from 5 on
        monkeypatch.setattr(fused, "SWIGLU_EPILOGUE_MIN_ROWS", rows)
        asked.clear()
        outs[rows] = gen._verify_fn(ids, pos, 5, (0, 1))
        assert any(asked) is (rows == 5)
    assert torch.equal(outs[5].tokens, outs[0].tokens)
    assert torch.equal(outs[5].hidden, outs[0].hidden)


def _norm_switch_forwards(monkeypatch, switch: str, gen, ids, pos, norms_on: int) -> tuple:
    """The 5-token verify forward with models/fused's `switch` on and off: on, it launches
    norms_on norm kernels, off one a norm (two a layer and the final one), and both give the
    same tokens; -> (on, off)."""
    from specpilot.models import fused

    norms = _counted_norms(monkeypatch)
    outs = []
    for on in (True, False):
        monkeypatch.setattr(fused, switch, on)
        norms.clear()
        outs.append(gen._verify_fn(ids, pos, 5, (0, 1)))
        assert len(norms) == (norms_on if on else 2 * len(gen.target.model.layers) + 1)
    assert torch.equal(outs[0].tokens, outs[1].tokens)
    return tuple(outs)


@pytest.mark.block_merge
def test_split_sum_norm_forward_gives_the_same_bits(tmp_path, monkeypatch) -> None:
    """fused.SPLIT_SUM_NORM: a W12 verify forward whose o and down multiplies split K (32 heads
    of 16 and an intermediate of 512: K 512, two splits here) has their split sums write the
    norms after them: no norm launch but the first layer's and the final one, and the same
    tokens and hidden states, bit for bit, as with the launches."""
    from specpilot.formats.w12_engine import convert_model
    from specpilot.kernels import w12_linear
    from specpilot.models import fused

    target, drafter, _ = _tiny_pair(tmp_path, tied=False, num_attention_heads=32,
                                    intermediate_size=512)  # fmt: skip
    convert_model(target)
    convert_model(drafter)
    plain = w12_linear.tile_config

    def split(m: int, n: int, k: int) -> dict:
        return plain(m, n, k) | (dict(SPLIT_K=2) if m > 1 and k >= 512 else {})

    monkeypatch.setattr(w12_linear, "tile_config", split)
    gen, ids, pos = _verify_inputs(target, drafter, 7)
    on, off = _norm_switch_forwards(monkeypatch, "SPLIT_SUM_NORM", gen, ids, pos, 2)
    assert torch.equal(on.hidden, off.hidden)
    # one row, switched on: the multiplies norm in their prologues or take no split
    monkeypatch.setattr(fused, "SPLIT_SUM_NORM", True)
    one = gen._verify_fn(ids[:, :1], pos[:, :1], 5, (0, 1))
    assert torch.equal(one.tokens, on.tokens[:, :1])


@pytest.mark.block_merge
def test_norm_handoff_forward(tmp_path, monkeypatch) -> None:
    """fused.NORM_HANDOFF_MAX_ROWS: a verify forward with the norms handed from multiply to
    multiply launches one norm kernel (the first layer's) where it launched 2 a layer plus the
    final one and gives the same tokens and hidden states within rounding; W12 multiplies keep
    their norm kernels (NORM_HANDOFF_W12 off). The engine with it (the default) passes token
    forcing in test_fused_engine_passes_token_forcing."""
    from specpilot.models import fused

    target, drafter, _ = _tiny_pair(tmp_path, tied=True)
    gen, ids, pos = _verify_inputs(target, drafter, 5)
    norms = _counted_norms(monkeypatch)
    outs = {}
    for rows in (0, 5):
        monkeypatch.setattr(fused, "NORM_HANDOFF_MAX_ROWS", rows)
        norms.clear()
        outs[rows] = gen._verify_fn(ids, pos, 5, (0, 1))
        layers = len(target.model.layers)
        assert len(norms) == (1 if rows else 2 * layers + 1)
    # one row: each site alone leaves the other's norm kernels (NORM_HANDOFF_ONE_ROW_SITES);
    # no norm prologues, as at the 8B shapes (K > PROLOGUE_MAX_K)
    monkeypatch.setattr(fused, "PROLOGUE_ROWS", {"norm": 0, "glu": 0})
    for sites in (fused.HAND_O, fused.HAND_DOWN, fused.HAND_O | fused.HAND_DOWN):
        monkeypatch.setattr(fused, "NORM_HANDOFF_ONE_ROW_SITES", sites)
        norms.clear()
        one = gen._verify_fn(ids[:, :1], pos[:, :1], 5, (0, 1))
        assert len(norms) == (1 if sites == fused.HAND_O | fused.HAND_DOWN else layers + 1)
        assert torch.equal(one.tokens, outs[5].tokens[:, :1])
    assert torch.equal(outs[5].tokens, outs[0].tokens)
    # two layers of other rounding points (x * w, then the sums scaled), each rounding
    # carried on in the residual stream: within 16 half-ulps of the largest tenth
    close(outs[5].hidden, outs[0].hidden, 16)
    from specpilot.formats import w12

    down = target.model.layers[0].mlp.down_proj.weight
    head = w12.encode(torch.randn(8, 256).to(BF16), 128)
    after = (target.model.norm.weight, 1e-6, head)
    down_site = fused.HAND_DOWN
    assert fused.handoff_for(5, down, after, down_site) is None  # a W12 multiply after
    monkeypatch.setattr(fused, "NORM_HANDOFF_W12", True)
    assert fused.handoff_for(5, down, after, down_site).norm_weight is after[0]
    assert fused.handoff_for(6, down, after, down_site) is None  # > NORM_HANDOFF_MAX_ROWS
    assert fused.handoff_for(5, down, None, down_site) is None  # nothing after (drafter's last)
    # one row: only the sites NORM_HANDOFF_ONE_ROW_SITES names; more rows: every site
    monkeypatch.setattr(fused, "NORM_HANDOFF_ONE_ROW_SITES", fused.HAND_O)
    assert fused.handoff_for(1, down, after, down_site) is None
    assert fused.handoff_for(1, down, after, fused.HAND_O) is not None
    assert fused.handoff_for(2, down, after, down_site) is not None


@pytest.mark.block_merge
def test_norm_handoff_through_w12_multiplies(tmp_path, monkeypatch) -> None:
    """fused.NORM_HANDOFF_W12: a verify forward of W12 weights (the tiny pair's 5-row tiles: no
    K split) hands every norm but the first on, and gives the tokens and, within rounding, the
    hidden states of its forward with norm kernels."""
    from specpilot.formats.w12_engine import convert_model

    target, drafter, _ = _tiny_pair(tmp_path)
    convert_model(target)
    gen, ids, pos = _verify_inputs(target, drafter, 6)
    on, off = _norm_switch_forwards(monkeypatch, "NORM_HANDOFF_W12", gen, ids, pos, 1)
    # as test_norm_handoff_forward's, with the W12 tiles' other orders: one entry of
    # 640 at 17 half-ulps on the H200 (run 161)
    close(on.hidden, off.hidden, 24)


@pytest.mark.block_merge
@pytest.mark.parametrize("weights", ["bf16", "w12", "w12:gate_up,lm_head"])
def test_fused_engine_passes_token_forcing(tmp_path, weights: str) -> None:
    """AR and speculative decoding through the kernels (bf16, or W12 weights converted on load:
    all of them, or only some matrices with the rest in bf16, EngineConfig.w12_matrices) pass
    token forcing against the fp32 PyTorch model, and the drafter's fused forward is exercised
    for steps after the first."""
    target, drafter, reference = _tiny_pair(tmp_path, tied=weights == "bf16")
    if weights.startswith("w12"):  # untied: the lm_head is W12 too
        from specpilot.formats.w12_engine import W12Linear, convert_model, parse_matrices

        matrices = parse_matrices(weights.partition(":")[2] or "all")
        convert_model(target, matrices=matrices)
        convert_model(drafter, matrices=matrices)
        assert isinstance(target.model.layers[0].mlp.down_proj, W12Linear) == (weights == "w12")
        assert isinstance(target.model.layers[0].mlp.up_proj, W12Linear)
        assert isinstance(target.lm_head, W12Linear)
        assert isinstance(drafter.fc, W12Linear) == (weights == "w12")
    gen = Generator(target, drafter, EngineConfig(kernels="triton"), DEVICE, BF16)
    assert gen.fused_target is not None and gen.fused_drafter is not None
    vocab = target.config.vocab_size
    for speculative in (False, True) if weights == "bf16" else (True,):
        seqs = _sequences(vocab, SPEC_TOKENS)
        gen.run(seqs, speculative=speculative)
        assert all(len(s.output_ids) == SPEC_TOKENS for s in seqs)
        assert_forced(reference, seqs)


@pytest.mark.block_merge
@pytest.mark.parametrize("weights", ["w12"])  # bf16 alone is the simpler branch; 40 s each
def test_fused_drafter_with_a_draft_vocabulary(tmp_path, weights: str) -> None:
    """EngineConfig.draft_vocab through the kernels: the fused drafter multiplies by the
    subset's rows (W12-encoded when the head is W12) and maps back to token ids; every proposal
    lies in the subset and the outputs are AR's and pass token forcing."""
    from specpilot.spec import draft_vocab

    target, drafter, reference = _tiny_pair(tmp_path, tied=weights == "bf16")
    if weights == "w12":
        from specpilot.formats.w12 import W12Weight
        from specpilot.formats.w12_engine import convert_model

        convert_model(target)
        convert_model(drafter)
    vocab = target.config.vocab_size
    ids = torch.arange(0, vocab, 3)  # every third token
    path = tmp_path / "vocab.safetensors"
    draft_vocab.save_ids(path, ids, vocab, "test")
    gen = Generator(target, drafter, EngineConfig(kernels="triton"), DEVICE, BF16)
    ar = _sequences(vocab, SPEC_TOKENS)
    gen.run(ar, speculative=False)
    # the target's head asked for: "auto" is FP8 on CUDA (tests/test_fp8.py has that case)
    config = EngineConfig(kernels="triton", draft_vocab=str(path), draft_head="target")
    gen = Generator(target, drafter, config, DEVICE, BF16)
    assert gen.fused_drafter.head.shape[0] == ids.numel()
    if weights == "w12":
        assert isinstance(gen.fused_drafter.head, W12Weight)
    seen = record_drafts(gen)
    seqs = _sequences(vocab, SPEC_TOKENS)
    gen.run(seqs, speculative=True)
    assert [s.output_ids for s in seqs] == [s.output_ids for s in ar]
    assert_forced(reference, seqs)
    assert seen and set(seen) <= set(ids.tolist())


@pytest.mark.block_merge
def test_draft_context_once_writes_the_same_cache(tmp_path, monkeypatch) -> None:
    """fused.DRAFT_CONTEXT_ONCE: the context's keys and values of every drafter layer from one
    multiply by the stacked k|v weights, written a layer at a time (1) or in one launch (2),
    fill the drafter's cache as each layer's own multiply and write do (0), within the
    rounding of another tile's sums (1 and 2: bit for bit), and the drafts agree."""
    from specpilot.models import fused

    target, drafter, _ = _tiny_pair(tmp_path)
    gen = Generator(target, drafter, EngineConfig(kernels="triton"), DEVICE, BF16)
    gen._buffers_for("draft", 1, 64)
    cache, table = gen._buffers["draft"]
    assert len(gen.fused_drafter.blocks) > 1
    gen_in = torch.Generator().manual_seed(8)
    hidden = torch.randn(1, 5, drafter.fc.in_features, generator=gen_in).to(DEVICE, BF16)
    ctx_pos = torch.arange(5, device=DEVICE)[None]
    block_pos = torch.arange(5, 5 + gen.block_size, device=DEVICE)[None]
    anchors = torch.tensor([7], device=DEVICE)
    outs = {}
    for mode in (0, 1, 2):
        monkeypatch.setattr(fused, "DRAFT_CONTEXT_ONCE", mode)
        cache.k.zero_()
        cache.v.zero_()
        drafts = gen.fused_drafter(hidden, ctx_pos, anchors, block_pos, cache, table)
        outs[mode] = drafts, cache.k.clone(), cache.v.clone()
    for a, b in zip(outs[1], outs[2]):
        assert torch.equal(a, b)
    for a, b in zip(outs[0][1:], outs[1][1:]):
        assert a[:, :, :, :5].abs().sum() > 0
        close(a, b, 4)
    assert (outs[0][0] == outs[1][0]).float().mean() > 0.8  # bf16 near-ties may differ


@pytest.mark.block_merge
def test_wide_steps_run_fused_and_pass_token_forcing(tmp_path) -> None:
    """Five sequences speculating together: verify and draft blocks of 5 x 16 = 80 rows, past
    the skinny kernels' 64, run fused with cuBLAS multiplies (a wide step); the logits match the
    PyTorch path and the outputs pass token forcing against the fp32 model."""
    from specpilot.models import fused

    target, drafter, reference = _tiny_pair(tmp_path)
    config = EngineConfig(kernels="triton", block_size=16)
    gen = Generator(target, drafter, config, DEVICE, BF16)
    k = gen.block_size
    assert gen.fused_target.fits(5, k) and not gen.fused_target.fits(5, 17)
    assert not fused.fits(5, k, has_w12=True)
    # one wide verify forward against the PyTorch path, same cache contents
    gen._buffers_for("target", 5, 64)
    ids = torch.randint(0, 263, (5, k), device=DEVICE)
    pos = torch.arange(k, device=DEVICE)[None].repeat(5, 1)
    wide = gen._verify_fn(ids, pos, k, ())
    gen.fused_target, fused_target = None, gen.fused_target
    plain = gen._verify_fn(ids, pos, k, ())
    gen.fused_target = fused_target
    assert (wide.tokens == plain.tokens).float().mean() > 0.9  # bf16: near-ties may differ
    gen_seq = torch.Generator().manual_seed(7)
    seqs = [  # the prompt's token, then one wide speculative step (draft and verify)
        Sequence(torch.randint(0, 263, (n,), generator=gen_seq).tolist(), 2, frozenset())
        for n in (5, 9, 6, 12, 7)
    ]
    gen.run(seqs, speculative=True)
    assert all(len(s.output_ids) == 2 for s in seqs)
    assert_forced(reference, seqs)


@pytest.mark.block_merge
def test_fused_prefill_matches_the_pytorch_path(tmp_path, monkeypatch) -> None:
    """EngineConfig.prefill = "fused": two right-padded prompts through FusedTarget.prefill
    give the PyTorch path's first tokens, captured hidden states and cache entries (bf16
    summation order aside), and generation with it, AR and speculative, through the generator
    and through the scheduler's contiguous slots, passes token forcing."""
    from specpilot.engine.scheduler import Scheduler
    from specpilot.layers.attention import AttentionMeta

    target, drafter, reference = _tiny_pair(tmp_path)
    gen = Generator(target, drafter, EngineConfig(kernels="triton", prefill="fused"), DEVICE, BF16)
    capture = drafter.config.target_layer_ids
    lens = [7, 12]
    gen_ids = torch.Generator().manual_seed(3)
    ids = torch.zeros(2, 12, dtype=torch.long)
    for b, n in enumerate(lens):
        ids[b, :n] = torch.randint(0, 263, (n,), generator=gen_ids)
    rows = torch.tensor(lens) - 1
    cache, table = gen._buffers_for("target", 2, 64)
    fused = gen.fused_target.prefill(ids.to(DEVICE), cache, table, capture, logit_rows=rows)
    fused_keys = [cache.k[i].clone() for i in range(2)]
    positions = torch.arange(12)[None].repeat(2, 1).to(DEVICE)
    meta = AttentionMeta.causal(positions, 12, table)
    plain = target(ids.to(DEVICE), meta, cache, capture, logit_rows=rows.to(DEVICE))
    assert fused.logits.shape == plain.logits.shape == (2, 1, 263)
    torch.testing.assert_close(fused.logits.float(), plain.logits.float(), atol=0.1, rtol=0.05)
    assert torch.equal(fused.logits.argmax(-1), plain.logits.argmax(-1))
    # hidden states and keys against the fp32 target: bf16 rounding compounds over the layers
    # (run 40 on the H200: 0.23 apart at entries near 4), so the fused path's distance from fp32
    # must stay within a small multiple of the PyTorch bf16 path's own distance
    from specpilot.layers.attention import KVCache
    from specpilot.layers.rotary import RotaryTable

    cfg = reference.config
    cache32 = KVCache(cfg.num_layers, 2, cfg.num_kv_heads, 64, cfg.head_dim, DEVICE, torch.float32)
    table32 = RotaryTable(cfg.head_dim, cfg.rope_theta, cfg.rope_scaling, 64, DEVICE, torch.float32)
    exact = reference.to(DEVICE)(
        ids.to(DEVICE), AttentionMeta.causal(positions, 12, table32), cache32, capture
    )

    def distance(got: torch.Tensor, want: torch.Tensor) -> float:
        return ((got.float() - want).abs().max() / want.abs().max()).item()

    for b, n in enumerate(lens):  # real positions only: padding writes are never read
        pairs = [(fused.hidden, plain.hidden, exact.hidden)]
        pairs += [(fused_keys[i], cache.k[i], cache32.k[i]) for i in range(2)]
        for got, bf16, want in pairs:
            rows = (b, slice(0, n)) if got.dim() == 3 else (b, slice(None), slice(0, n))
            floor = distance(bf16[rows], want[rows])
            assert distance(got[rows], want[rows]) <= 3 * floor + 2**-8, (floor, b)
    calls = []
    prefill = type(gen.fused_target).prefill
    monkeypatch.setattr(
        type(gen.fused_target), "prefill", lambda *a, **k: calls.append(1) or prefill(*a, **k)
    )
    vocab = target.config.vocab_size
    for speculative in (False, True):
        seqs = _sequences(vocab, SPEC_TOKENS)
        gen.run(seqs, speculative=speculative)
        assert_forced(reference, seqs)
    assert len(calls) == 2  # one batched prefill per run
    sched = Scheduler(gen, 4, 64)
    seqs = _sequences(vocab, SPEC_TOKENS)
    sched.add_many([(s, None, 0) for s in seqs])  # slots 0 and 1: a contiguous view
    while not all(s.finished for s in seqs):
        sched.step()
    assert len(calls) == 3
    assert_forced(reference, seqs)
    # the default, "auto": the fused prefill on CUDA only (under the interpreter it is slow)
    gen.config = dataclasses.replace(gen.config, prefill="auto")
    gen.run(_sequences(vocab, 2), speculative=False)
    assert len(calls) == 3 + CUDA


# --- kernels/tokens.py: the embedding gather and the argmax ------------------------------------


def test_embed_rows_and_anchor_blocks_gather_the_tables_rows() -> None:
    """embed_rows gives F.embedding's rows (an id outside the vocabulary: zeros);
    embed_anchor_blocks the rows of [anchor, fill, ..., fill] per anchor, anchors read through
    their stride (a column of the step's meta)."""
    from specpilot.kernels import tokens

    gen = torch.Generator().manual_seed(0)
    table = torch.randn(50, 2100, generator=gen).to(BF16).to(DEVICE)  # 3 column chunks
    ids = torch.randint(0, 50, (2, 3), generator=gen).to(DEVICE)
    assert torch.equal(tokens.embed_rows(ids, table), F.embedding(ids, table).view(6, -1))
    bad = torch.tensor([3, 50, -1], device=DEVICE)
    rows = tokens.embed_rows(bad, table)
    assert torch.equal(rows[0], table[3]) and not rows[1:].any()
    meta = torch.tensor([[9, 1, 7], [9, 1, 12]], device=DEVICE)  # (start, ctx, anchor)
    block = torch.full((2, 4), 49, device=DEVICE)
    block[:, 0] = meta[:, 2]
    got = tokens.embed_anchor_blocks(meta[:, 2], 49, 4, table)
    assert torch.equal(got, F.embedding(block, table).view(8, -1))
    with pytest.raises(ValueError, match="fill id"):
        tokens.embed_anchor_blocks(meta[:, 2], 50, 4, table)
    with pytest.raises(ValueError, match="int32/int64"):
        tokens.embed_rows(ids.float(), table)


def test_argmax_rows_is_torch_argmax_ties_nans_and_infinities(monkeypatch) -> None:
    """argmax_rows against torch.argmax, with chunks of 64 values (several a row, the last
    partial): random rows, a maximum repeated in other chunks (the first wins), NaNs (the first
    NaN wins), rows of -inf, +inf beside NaN, bf16 and fp32, one chunk, a 3-D block."""
    from specpilot.kernels import tokens

    monkeypatch.setattr(tokens, "ARGMAX_BLOCK", 64)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(7, 300, generator=gen)
    x[1, [10, 150, 299]] = 9.0  # ties across chunks
    x[2, [200, 40]] = float("nan")
    x[3] = float("-inf")
    x[4, 5], x[4, 250] = float("inf"), float("nan")
    x[5] = 0.0
    x[5, 100] = -0.0
    x[6] = torch.randint(-2, 3, (300,), generator=gen).float()  # many ties
    for dtype in (BF16, torch.float32):
        rows = x.to(dtype).to(DEVICE)
        assert torch.equal(tokens.argmax_rows(rows).cpu(), rows.cpu().argmax(-1))
    one_chunk = x[:, :50].to(BF16).to(DEVICE)
    assert torch.equal(tokens.argmax_rows(one_chunk).cpu(), one_chunk.cpu().argmax(-1))
    block = x[:6].to(BF16).view(2, 3, 300).to(DEVICE)
    assert torch.equal(tokens.argmax_rows(block).cpu(), block.cpu().argmax(-1))
    with pytest.raises(ValueError, match="float rows"):
        tokens.argmax_rows(x.to(DEVICE).t())


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.sampled_from([-1.0, 0.0, 0.5, 2.0, float("inf"), float("-inf"), float("nan")]),
        min_size=1,
        max_size=200,
    ),
    st.sampled_from([16, 32, 64]),
)
def test_argmax_rows_property(values: list[float], block: int) -> None:
    """argmax_rows == torch.argmax on rows from a small alphabet (ties, infinities, NaNs
    everywhere), at several chunk sizes."""
    from specpilot.kernels import tokens

    own, tokens.ARGMAX_BLOCK = tokens.ARGMAX_BLOCK, block
    try:
        x = torch.tensor(values).to(BF16)
        got = tokens.argmax_rows(x.to(DEVICE)[None]).cpu()
    finally:
        tokens.ARGMAX_BLOCK = own
    assert torch.equal(got, x[None].argmax(-1))


def test_argmax_accept_packs_blocks_as_accept_greedy(monkeypatch) -> None:
    """argmax_accept: the tokens argmax_rows gives and packed = (ids, tokens, accepted) with
    spec/accept.accept_greedy's count, for blocks that accept none, some, all drafts; with
    rows of several chunks and of one."""
    from specpilot.kernels import tokens
    from specpilot.spec.accept import accept_greedy

    gen = torch.Generator().manual_seed(2)
    for block in (64, 4096):  # 4 chunks a row; one
        monkeypatch.setattr(tokens, "ARGMAX_BLOCK", block)
        logits = torch.randn(3, 5, 200, generator=gen).to(BF16)
        best = logits.argmax(-1)
        ids = torch.randint(0, 200, (3, 5), generator=gen)
        ids[0, 1:] = best[0, :-1]  # every draft right
        ids[1, 1:3] = best[1, :2]  # two right, then (surely) wrong
        ids[1, 3] = (best[1, 2] + 1) % 200
        ids[2, 1] = (best[2, 0] + 1) % 200  # the first wrong
        got_tokens, packed = tokens.argmax_accept(logits.to(DEVICE), ids.to(DEVICE))
        accepted = accept_greedy(ids[:, 1:], best)
        assert accepted.tolist() == [4, 2, 0]
        assert torch.equal(got_tokens.cpu(), best)
        assert torch.equal(packed.cpu(), torch.cat([ids, best, accepted[:, None]], dim=1))
    with pytest.raises(ValueError, match="logits \\[B, K, N\\]"):
        tokens.argmax_accept(logits.to(DEVICE), ids[:, :4].to(DEVICE))


def test_next_meta_is_next_step_meta() -> None:
    """tokens.next_meta against spec/accept.next_step_meta: blocks that accept none, some and
    all drafts, one held at its limit; a strided meta; bad shapes and dtypes refused."""
    from specpilot.kernels import tokens
    from specpilot.spec.accept import next_step_meta

    gen = torch.Generator().manual_seed(3)
    k = 4
    packed = torch.randint(0, 100, (3, 2 * k + 1), generator=gen)
    packed[:, 2 * k] = torch.tensor([0, 2, 3])
    meta = torch.tensor([[10, 5, 7], [20, 18, 1], [30, 26, 4]])
    limits = torch.tensor([50, 60, 32])  # the last: 30 + 3 + 1 held at 32
    want = next_step_meta(packed, meta, limits)
    got = tokens.next_meta(packed.to(DEVICE), meta.to(DEVICE), limits.to(DEVICE))
    assert torch.equal(got.cpu(), want) and want[2, 0] == 32
    assert want[:, 2].tolist() == [packed[0, k], packed[1, k + 2], packed[2, k + 3]]
    wide = torch.zeros(3, 5, dtype=torch.int64)
    wide[:, :3] = meta
    got = tokens.next_meta(packed.to(DEVICE), wide[:, :3].to(DEVICE), limits.to(DEVICE))
    assert torch.equal(got.cpu(), want)
    with pytest.raises(ValueError, match="next_meta wants"):
        tokens.next_meta(packed[:, :-1].to(DEVICE), meta.to(DEVICE), limits.to(DEVICE))


def test_next_decode_is_next_decode_inputs() -> None:
    """tokens.next_decode against spec/accept.next_decode_inputs, both in place: each row's last
    token (of a block of several, int32 tokens too), positions + 1 with one row held at its
    limit, strided buffers; bad shapes and dtypes refused."""
    from specpilot.kernels import tokens
    from specpilot.spec.accept import next_decode_inputs

    gen = torch.Generator().manual_seed(5)
    for width, dtype in ((1, torch.int64), (3, torch.int32)):
        out = torch.randint(0, 1000, (3, width), generator=gen).to(dtype)
        ids = torch.tensor([[1], [2], [3]])
        wide = torch.zeros(3, 4, dtype=torch.int64)  # positions as a strided column
        wide[:, 1] = torch.tensor([40, 17, 31])
        limits = torch.tensor([[90], [70], [31]])  # the last row is held at its limit
        want_ids, want_pos = ids.clone(), wide[:, 1:2].clone()
        next_decode_inputs(out, want_ids, want_pos, limits)
        assert want_ids[:, 0].tolist() == out[:, -1].tolist()
        assert want_pos[:, 0].tolist() == [41, 18, 31]
        got_ids, got_wide = ids.to(DEVICE), wide.to(DEVICE)
        tokens.next_decode(out.to(DEVICE), got_ids, got_wide[:, 1:2], limits.to(DEVICE))
        assert torch.equal(got_ids.cpu(), want_ids)
        assert torch.equal(got_wide[:, 1:2].cpu(), want_pos)
        assert torch.equal(got_wide[:, [0, 2, 3]].cpu(), wide[:, [0, 2, 3]])  # nothing else
    with pytest.raises(ValueError, match="next_decode wants"):
        tokens.next_decode(out.to(DEVICE), ids[:2].to(DEVICE), ids.to(DEVICE), limits.to(DEVICE))
    with pytest.raises(ValueError, match="next_decode wants"):
        tokens.next_decode(out.to(DEVICE), ids.int().to(DEVICE), ids.to(DEVICE), limits.to(DEVICE))


def test_replay_drafts_kernel_is_replay_drafts(monkeypatch) -> None:
    """tokens.replay_drafts against spec/replay.replay_drafts: rows whose drafts run past the
    continuation's end, that accept none or all, a draft of the last vocabulary id (wrapping
    to 0 when made wrong), emitted counts from the step's start less the prompt."""
    from specpilot.kernels import tokens
    from specpilot.spec.replay import replay_drafts

    gen = torch.Generator().manual_seed(4)
    table = torch.randint(0, 50, (3, 12), generator=gen)
    table[1, 3] = table[1, 7] = 49  # row 1's first draft (kept), its fifth (the wrong one)
    table_lengths = torch.tensor([12, 9, 5])
    prompt = torch.tensor([7, 20, 3])
    meta = torch.tensor([[10, 0, 1], [22, 0, 1], [6, 0, 1]])  # emitted 4, 3, 4
    counts = torch.tensor([1, 5, 6])
    emitted = meta[:, 0] - prompt + 1
    want = replay_drafts(table, table_lengths, emitted, counts.tolist(), 7, 50)
    args = (table, table_lengths, meta, prompt, counts)
    got = tokens.replay_drafts(*(t.to(DEVICE) for t in args), 7, 50)
    assert torch.equal(got.cpu(), want)
    assert want[1, 0] == 49 and want[1, 4] == 0  # a replayed 49 kept; made wrong, it wraps
    assert want[2, 1] == 0  # past the continuation's end
    from specpilot.models.fused import FusedTarget

    on_device = [t.to(DEVICE) for t in args]
    assert torch.equal(FusedTarget.replay(*on_device, 7, 50).cpu(), want)  # as the loop calls it
    monkeypatch.setattr(tokens, "REPLAY", False)  # switched off: the loop's PyTorch form runs
    assert FusedTarget.replay(*on_device, 7, 50) is None
    with pytest.raises(ValueError, match="int64"):
        tokens.replay_drafts(table.int(), table_lengths, meta, prompt, counts, 7, 50)


def test_w12_join_order_verify_gives_the_same_tokens(tmp_path, monkeypatch) -> None:
    """w12_linear.JOIN_INPUT in a fused W12 verify forward (hidden 128, intermediate 256: K a
    multiple of 128): the rmsnorm launches before q|k|v, gate|up and the head write join_order,
    gate|up's SwiGLU epilogue writes it for the down, and their tiles read it with JOIN 2. The
    same tokens as with it off, the captured hidden states to summation order."""
    from specpilot.formats.w12_engine import convert_model
    from specpilot.kernels import w12_linear as w12_kernels
    from tests.test_w12_kernels import wgmma_rule_tiles

    wgmma_rule_tiles(monkeypatch, w12_kernels)
    target, drafter, _ = _tiny_pair(tmp_path, tied=False, hidden_size=128, intermediate_size=256)
    convert_model(target)
    convert_model(drafter)
    gen, ids, pos = _verify_inputs(target, drafter, 5)
    orders = _recorded_linear_calls(monkeypatch, lambda kw: (kw.get("x_order"), kw.get("y_order")))
    outs = {}
    for on in (False, True):
        monkeypatch.setattr(w12_kernels, "JOIN_INPUT", on)
        orders.clear()
        outs[on] = gen._verify_fn(ids, pos, 5, (0, 1))
        # q|k|v, the down and the head read join_order; gate|up reads and writes it
        assert (("join", None) in orders and ("join", "join") in orders) is on
    assert torch.equal(outs[True].tokens, outs[False].tokens)
    close(outs[True].hidden.float(), outs[False].hidden.float(), 4)


def _switched_w12_forwards(
    tmp_path,
    monkeypatch,
    module,
    kernel: str,
    switch: str,
    rows: int,
    w12: bool = True,
    ulps: float = 4,
    **shape,
):
    """The tiny pair in W12 (hidden 256, intermediate 512: K and N / 2 multiples of 256; w12
    False: in bf16), a fused forward of `rows` tokens with module.switch off, then on: the same
    tokens (or, where they differ, each a near-tie of the fp32 reference's that summation order
    decides: `_near_ties`), the hidden states to summation order (`ulps` half-ulps); -> how many
    calls
    module.kernel took with it
    off and on (keys False, True), how many of those took the norm prologue (("prologues", ...))
    and how many norm kernels the forward launched (keys ("norms", False / True))."""
    from specpilot.formats.w12_engine import convert_model
    from specpilot.kernels import w12_row, w12_tc, w12_tokens, w12_ws

    # the other Gluon routes off (w12_row's and w12_tokens' are on by default): the off arm is
    # the Triton path
    for other, name in ((w12_row, "ONE_ROW"), (w12_row, "BF16_ONE_ROW"), (w12_tc, "ONE_ROW"),
                        (w12_tc, "VERIFY"), (w12_ws, "VERIFY"),
                        (w12_tokens, "VERIFY")):  # fmt: skip
        monkeypatch.setattr(other, name, type(getattr(other, name))(0))
    shape = dict(hidden_size=256, intermediate_size=512) | shape
    target, drafter, reference = _tiny_pair(tmp_path, tied=False, **shape)
    if w12:
        convert_model(target)
        convert_model(drafter)
    gen, ids, pos = _verify_inputs(target, drafter, 5)
    calls = []
    original = getattr(module, kernel)
    monkeypatch.setattr(module, kernel, lambda *a, **kw: calls.append(kw) or original(*a, **kw))
    norms = _counted_norms(monkeypatch)
    outs, counts = {}, {}
    for on in (False, True):
        monkeypatch.setattr(module, switch, on)
        calls.clear()
        norms.clear()
        outs[on] = gen._verify_fn(ids[:, :rows], pos[:, :rows], rows, (0, 1))
        counts[on] = len(calls)
        counts["prologues", on] = sum(kw.get("norm_weight") is not None for kw in calls)
        counts["norms", on] = len(norms)
    differ = (outs[True].tokens != outs[False].tokens)[0].nonzero().flatten().tolist()
    _near_ties(reference, ids[0], differ, [outs[on].tokens[0] for on in (False, True)])
    close(outs[True].hidden.float(), outs[False].hidden.float(), ulps)
    return counts


def _near_ties(reference, ids: torch.Tensor, positions: list[int], tokens: list) -> None:
    """At each position of a verify block where two forwards' tokens differ, both pass token
    forcing against the fp32 reference (within its margin of 0.5 of the top logit): a near-tie
    that the forwards' summation orders decide, not an error."""
    from specpilot.spec.forcing import token_forcing

    for i in positions:
        for t in tokens:
            report = token_forcing(reference, ids[: i + 1].tolist(), [int(t[i])], threshold=0.5)
            assert report.passed, f"position {i}: token {int(t[i])}: {report.failures}"


# the Gluon kernels' switches in fused forwards: on a Hopper GPU, or on kernels/emulate.py (the
# tiny pair on the CPU: where the tests' DEVICE is a GPU, it runs them itself)
GLUON_WHERE = ["cuda", pytest.param("emulated", marks=pytest.mark.skipif(CUDA, reason="a GPU"))]


@pytest.mark.prototype
@pytest.mark.parametrize("where", GLUON_WHERE)
def test_w12_ws_verify_gives_the_same_tokens(tmp_path, monkeypatch, where: str) -> None:
    """kernels/w12_ws.VERIFY in a fused W12 verify forward of 5 tokens: the rmsnorm before
    gate|up writes pair order, gate|up's SwiGLU writes it for the down; on it takes gate|up and
    down of each of the two layers."""
    from specpilot.kernels import w12_ws

    with gluon_on(where):
        counts = _switched_w12_forwards(tmp_path, monkeypatch, w12_ws, "w12_ws_linear", "VERIFY",
                                        5)  # fmt: skip
    assert counts[False] == 0 and counts[True] == 4


@pytest.mark.prototype
@pytest.mark.parametrize("where", GLUON_WHERE)
def test_w12_tc_verify_gives_the_same_tokens(tmp_path, monkeypatch, where: str) -> None:
    """kernels/w12_tc.VERIFY in a fused W12 verify forward of 5 tokens (every matrix W12): the
    rmsnorm before gate|up writes pair order, gate|up's SwiGLU writes it for the down, as with
    w12_ws.VERIFY, the norms before q|k|v and an exact W12 LM head write it for them (the CPU's
    head; a GPU's verify head is certified and stays off it), and the attention for o (16
    heads of 16: K 256): on, it takes q|k|v, o, gate|up and down of each of the two layers, and
    that head. The hidden states to 8 half-ulps: four multiplies a layer summed in wgmma's
    chunk order carry 5.7 half-ulps through two layers (emulated; 4 for one reordered kernel)."""
    from specpilot.kernels import w12_tc
    from specpilot.models import fused

    # (no split sum handing a norm on: on a GPU's SMs the tiny o splits; test_split_sum_hand_*)
    monkeypatch.setattr(fused, "SPLIT_SUM_HAND", False)
    with gluon_on(where):
        counts = _switched_w12_forwards(tmp_path, monkeypatch, w12_tc, "w12_tc_linear", "VERIFY",
                                        5, ulps=8, num_attention_heads=16)  # fmt: skip
    assert counts[False] == 0 and counts[True] in (8, 9)
    assert counts["norms", True] == counts["norms", False]  # (in pair order where w12_tc reads)


def test_split_sum_hand_goes_to_w12_tc_only(monkeypatch) -> None:
    """fused.norm_after_for: SPLIT_SUM_HAND hands the norm on only where w12_tc takes it (a
    pair_kernel that is w12_tc's, or norm_order's "pair"); for w12_ws's pair kernel it falls
    back to SPLIT_SUM_NORM's norm in the split sum where that is on, else to the norm kernel
    (None); with neither switch, None; a hand-off of that norm already, None."""
    from specpilot.kernels import w12_tc, w12_ws
    from specpilot.kernels.linear import Handoff
    from specpilot.models import fused

    x = torch.zeros(5, 256, dtype=BF16)
    after = (torch.ones(256, dtype=BF16), 1e-6, torch.zeros(64, 256, dtype=BF16))

    def made(hand: bool, norm: bool, pair, handoff=None):
        monkeypatch.setattr(fused, "SPLIT_SUM_HAND", hand)
        monkeypatch.setattr(fused, "SPLIT_SUM_NORM", norm)
        got = fused.norm_after_for(x, after, handoff, pair=pair)
        return None if got is None else (got.order, got.handed)

    tc, ws = w12_tc.w12_tc_linear, w12_ws.w12_ws_linear
    assert made(True, False, tc) == ("pair", True)
    assert made(True, True, tc) == ("pair", True)
    assert made(True, False, ws) is None
    assert made(True, True, ws) == ("pair", False)
    assert made(False, False, tc) is None
    assert made(False, True, tc) == ("pair", False)
    assert made(True, False, tc, Handoff(after[0], 1e-6)) is None


@pytest.mark.prototype
@pytest.mark.parametrize("where", GLUON_WHERE)
def test_split_sum_hand_forward(tmp_path, monkeypatch, where: str) -> None:
    """fused.SPLIT_SUM_HAND in a W12 verify forward of 5 tokens on w12_tc (every matrix W12;
    o's K 512 and the down's split 2 ways, UNIT_SPLIT 2): the split sums hand the norms after
    them on to gate|up and the next layer's q|k|v, which scale their sums: the forward launches
    two norm kernels (the first layer's and the final one) where it launched five, and gives the
    same tokens (or near-ties) and hidden states to 16 half-ulps (the hand-off's rounding
    points, carried through two layers, as test_norm_handoff_forward's)."""
    from specpilot.kernels import w12_tc
    from specpilot.models import fused

    counts = split_verify_forwards(tmp_path, monkeypatch, where, (fused, "SPLIT_SUM_HAND"),
                                   (w12_tc, "w12_tc_linear"), "handed_norm")  # fmt: skip
    assert (counts[False][0], counts[False][2]) == (5, 0)
    assert (counts[True][0], counts[True][2]) == (2, 3)


def split_verify_forwards(tmp_path, monkeypatch, where: str, switch: tuple, spied: tuple,
                          key: str) -> dict:  # fmt: skip
    """The tiny pair in W12 (every matrix; o's K 512), a verify forward of 5 tokens on w12_tc
    with o and the down split 2 ways (UNIT_SPLIT 2), with switch (module, name) off, then on:
    the same tokens (or near-ties) and hidden states to 16 half-ulps (a norm hand-off's rounding
    points carried through two layers) -> {on: (norm kernels launched, calls of spied (module,
    function), of them with keyword `key` given)}."""
    from specpilot.formats.w12_engine import convert_model
    from specpilot.kernels import w12_row, w12_tc, w12_tokens

    monkeypatch.setattr(w12_row, "ONE_ROW", False)
    monkeypatch.setattr(w12_tc, "VERIFY", True)
    monkeypatch.setattr(w12_tokens, "VERIFY", False)  # (o on w12_tc, split, unless switched)
    monkeypatch.setattr(w12_tc, "UNIT_SPLIT", 2)
    shape = dict(hidden_size=256, intermediate_size=512, num_attention_heads=32)
    target, drafter, reference = _tiny_pair(tmp_path, tied=False, **shape)
    convert_model(target)
    convert_model(drafter)
    calls: list = []
    plain = getattr(*spied)
    monkeypatch.setattr(*spied, lambda *a, **kw: calls.append(kw.get(key) is not None)
                        or plain(*a, **kw))  # fmt: skip
    with gluon_on(where):
        gen, ids, pos = _verify_inputs(target, drafter, 5)
        norms = _counted_norms(monkeypatch)
        outs, counts = {}, {}
        for on in (False, True):
            monkeypatch.setattr(*switch, on)
            norms.clear()
            calls.clear()
            outs[on] = gen._verify_fn(ids, pos, 5, (0, 1))
            counts[on] = len(norms), len(calls), sum(calls)
    differ = (outs[True].tokens != outs[False].tokens)[0].nonzero().flatten().tolist()
    _near_ties(reference, ids[0], differ, [outs[on].tokens[0] for on in (False, True)])
    close(outs[True].hidden.float(), outs[False].hidden.float(), 16)
    return counts


@pytest.mark.prototype
@pytest.mark.parametrize("where", GLUON_WHERE)
def test_w12_tc_one_row_forward_gives_the_same_tokens(tmp_path, monkeypatch, where: str) -> None:
    """kernels/w12_tc.ONE_ROW: the same routes as VERIFY in a one-row forward (every matrix
    W12, o's K 256): q|k|v, o, gate|up and down of each layer and the CPU's exact W12 head on
    w12_tc, their inputs in pair order; same token, hidden states to 8 half-ulps."""
    from specpilot.kernels import w12_tc

    with gluon_on(where):
        counts = _switched_w12_forwards(tmp_path, monkeypatch, w12_tc, "w12_tc_linear", "ONE_ROW",
                                        1, ulps=8, num_attention_heads=16)  # fmt: skip
    assert counts[False] == 0 and counts[True] in (8, 9)


@pytest.mark.parametrize("where", GLUON_WHERE)
def test_w12_row_one_row_forward_gives_the_same_tokens(tmp_path, monkeypatch, where: str) -> None:
    """kernels/w12_row.ONE_ROW in a fused one-row W12 forward: on it takes q|k|v (its norm
    prologue), o (the residual), gate|up (the norm prologue and SwiGLU) and down (the residual)
    of each layer, at least, and the forward launches no norm kernel before the multiplies that
    take the norm prologue: q|k|v and gate|up (2 layers: 4 fewer), and the LM head where it is
    an exact W12 multiply (not certified: the CPU's)."""
    from specpilot.kernels import w12_row

    with gluon_on(where):
        counts = _switched_w12_forwards(tmp_path, monkeypatch, w12_row, "w12_row_linear",
                                        "ONE_ROW", 1)  # fmt: skip
    assert counts[False] == 0 and counts[True] >= 8
    assert counts["prologues", True] in (4, 5)
    assert counts["norms", True] == counts["norms", False] - counts["prologues", True]


@pytest.mark.parametrize("where", GLUON_WHERE)
def test_bf16_row_one_row_forward_gives_the_same_tokens(tmp_path, monkeypatch, where: str) -> None:
    """kernels/w12_row.BF16_ONE_ROW in a fused one-row bf16 forward: no norm hand-off, the norm
    in the prologue of q|k|v and gate|up; every multiply of each layer on bf16_row_linear. The
    hand-off is off in both arms (NORM_HANDOFF_MAX_ROWS 0): with it the off arm norms in the
    hand-off's order, which two layers carry to ~5 ulps of the hidden states (emulated: 10.7
    half-ulps with it, bit for bit without); the switch's own hand-off rule is tested in
    tests/test_w12_row.py."""
    from specpilot.kernels import w12_row
    from specpilot.models import fused

    monkeypatch.setattr(fused, "NORM_HANDOFF_MAX_ROWS", 0)

    with gluon_on(where):
        counts = _switched_w12_forwards(tmp_path, monkeypatch, w12_row, "bf16_row_linear",
                                        "BF16_ONE_ROW", 1, w12=False)  # fmt: skip
    assert counts[False] == 0 and counts[True] >= 8
