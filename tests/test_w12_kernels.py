"""The W12 Triton kernel against its PyTorch reference (decode, then the modules' steps), on the
GPU or in Triton's interpreter; the interpreter set-up is test_kernels.py's."""

from __future__ import annotations

import pytest
import torch

from tests.test_kernels import (  # sets TRITON_INTERPRET=1 without CUDA
    BF16,
    DEVICE,
    close,
    prologue_kwargs,
)

# isort: split
from specpilot.formats import w12  # after the interpreter is set up
from specpilot.formats.w12_engine import W12Linear, linear
from specpilot.kernels.linear import skinny_linear
from specpilot.kernels.w12_linear import join_order, w12_linear, w12_linear_reference


def close_columns(actual: torch.Tensor, expected: torch.Tensor, ulps: float = 2.0,
                  floor: torch.Tensor | None = None) -> None:  # fmt: skip
    """`close` for each output column (one weight row) on its own: weight_with_escapes puts
    weights up to 2^52 in row 4, whose outputs would otherwise set every column's floor and
    leave the test blind to errors in the ordinary rows. A one-row column has no neighbours to
    set a floor for an output that cancels to near zero: pass `floor` (test_kernels.order_floor)
    where the two sides sum in different orders over thousands of terms."""
    for j in range(expected.shape[1]):
        try:
            close(actual[:, j], expected[:, j], ulps, None if floor is None else floor[:, j])
        except AssertionError as err:
            raise AssertionError(f"output column {j}: {err}") from None


def weight_with_escapes(n: int, k: int, gen: torch.Generator) -> torch.Tensor:
    w = (torch.randn(n, k, generator=gen) * k**-0.5).to(BF16)
    w[0, :5] = torch.tensor([1e-30, -3e-20, 0.0, -0.0, 2.0**-130])  # tiny, zeros, subnormal
    w[2, -1] = 300.0  # far above its group
    w[3] = 0.0
    w[4, ::3] = torch.tensor(2.0) ** torch.arange(-60, 60, 8.0).repeat(k)[: w[4, ::3].numel()]
    return w


@pytest.mark.parametrize("m", [1, 3, 16, 33])
@pytest.mark.parametrize("mode", ["plain", "norm", "residual", "glu"])
def test_w12_linear(m: int, mode: str) -> None:
    gen = torch.Generator().manual_seed(m)
    n, k = 70, (96 if mode == "glu" else 97)  # neither a multiple of the blocks nor the group
    x = torch.randn(m, 2 * k if mode == "glu" else k, generator=gen).to(BF16)
    w = weight_with_escapes(n, k, gen)
    packed = w12.encode(w, 32)
    assert packed.num_escapes > 10
    kw = prologue_kwargs(mode, m, n, k, gen)
    x, packed = x.to(DEVICE), packed.to(DEVICE)
    y = w12_linear(x, packed, **kw)
    close_columns(y, w12_linear_reference(x, packed, **kw), 4 if m > 1 else 2)
    # same weights, same tiles: the bf16 kernel sums in the same order except for the escapes
    close_columns(y, skinny_linear(x, w.to(DEVICE), **kw), 4 if m > 1 else 2)


@pytest.mark.parametrize("m", [1, 16])
def test_w12_norm_handoff_is_the_bf16_kernels(m: int) -> None:
    """The norm hand-off through W12 multiplies (fused.NORM_HANDOFF_W12): a W12 multiply ending
    in the residual add hands on what the bf16 kernel hands on from the same (decoded) weights,
    within summation order (its output equal to its own without the hand-off, u its rounded
    product); a W12 multiply from a handed norm gives the bf16 kernel's from the same u. A
    K-split W12 tile hands nothing on."""
    from specpilot.kernels.linear import Handoff

    gen = torch.Generator().manual_seed(40 + m)
    k_in, k, n = 256 * (1 + (m > 1)), 96, 70  # 16 rows: two 256-column blocks to split
    a = torch.randn(m, k_in, generator=gen).to(DEVICE, BF16)
    w_o = weight_with_escapes(k, k_in, gen)
    res = torch.randn(m, k, generator=gen).to(DEVICE, BF16)
    norm_w = (torch.rand(k, generator=gen) + 0.5).to(DEVICE, BF16)
    w_next = weight_with_escapes(n, k, gen)
    packed_o, packed_next = w12.encode(w_o, 32).to(DEVICE), w12.encode(w_next, 32).to(DEVICE)
    hand, plain = Handoff(norm_w, 1e-6), Handoff(norm_w, 1e-6)
    y = w12_linear(a, packed_o, residual=res, handoff=hand)
    assert torch.equal(y, w12_linear(a, packed_o, residual=res))
    assert torch.equal(hand.u, (y.float() * norm_w.float()).to(BF16))
    torch.testing.assert_close(hand.squares.sum(1), y.float().pow(2).sum(1), rtol=1e-5, atol=0)
    y_bf16 = skinny_linear(a, w_o.to(DEVICE), residual=res, handoff=plain)
    close_columns(y, y_bf16, 4 if m > 1 else 2)
    got = w12_linear(hand.u, packed_next, handed=hand)
    want = skinny_linear(hand.u, w_next.to(DEVICE), handed=Handoff(norm_w, 1e-6, hand.u,
                                                                   hand.squares))  # fmt: skip
    close_columns(got, want, 4 if m > 1 else 2)
    if m > 1:
        split = Handoff(norm_w, 1e-6)
        cfg = dict(BLOCK_M=16, BLOCK_N=32, UNROLL=1, SPLIT_K=2, USE_DOT=True, num_warps=4,
                   num_stages=2)  # fmt: skip
        w12_linear(a, packed_o, residual=res, handoff=split, config=cfg)
        assert not split.ready


TILES = [  # (config, group size): several steps, a K tail, split K, groups of every kind
    (dict(BLOCK_M=1, BLOCK_N=4, UNROLL=1, USE_DOT=False), 128),
    (dict(BLOCK_M=2, BLOCK_N=8, UNROLL=2, USE_DOT=False), 48),
    (dict(BLOCK_M=4, BLOCK_N=4, UNROLL=1, SPLIT_K=3, USE_DOT=False), 64),
    (dict(BLOCK_M=16, BLOCK_N=32, SPLIT_K=2, USE_DOT=True), 256),
    (dict(BLOCK_M=16, BLOCK_N=16, SPLIT_K=3, USE_DOT=True), 32),
    # the group scales applied to each half block's sum (weights decoded times 2^126)
    (dict(BLOCK_M=16, BLOCK_N=32, USE_DOT=True, ACC_SCALE=True), 128),
    (dict(BLOCK_M=16, BLOCK_N=16, SPLIT_K=2, USE_DOT=True, ACC_SCALE=True), 256),
    # each row's first escape fetched in the first loop step
    (dict(BLOCK_M=1, BLOCK_N=4, UNROLL=2, USE_DOT=False, ESC_IN_LOOP=True), 64),
    (dict(BLOCK_M=16, BLOCK_N=16, SPLIT_K=3, USE_DOT=True, ESC_IN_LOOP=True), 128),
    (dict(BLOCK_M=16, BLOCK_N=32, USE_DOT=True, ESC_IN_LOOP=True, ACC_SCALE=True), 128),
    # element-wise tiles whose loop pipelines the planes' loads (LOOP_STAGES)
    (dict(BLOCK_M=1, BLOCK_N=4, UNROLL=1, USE_DOT=False, LOOP_STAGES=3), 128),
    (dict(BLOCK_M=1, BLOCK_N=2, UNROLL=2, USE_DOT=False, LOOP_STAGES=2, ESC_IN_LOOP=True), 48),
    # the decoded pairs' bf16 halves straight to tl.dot (inline PTX: on the GPU only)
    (dict(BLOCK_M=16, BLOCK_N=32, SPLIT_K=2, USE_DOT=True, HALVES=True), 64),
    (dict(BLOCK_M=16, BLOCK_N=32, USE_DOT=True, HALVES=True, ACC_SCALE=True), 128),
    # a half block's 4 slices in one tl.dot, K in word order, the input permuted to match
    (dict(BLOCK_M=16, BLOCK_N=32, SPLIT_K=2, USE_DOT=True, ACC_SCALE=True, JOIN=1), 128),
    (dict(BLOCK_M=16, BLOCK_N=16, USE_DOT=True, ACC_SCALE=True, HALVES=True, JOIN=1), 256),
]


MODES = ("residual", "norm", "glu")


# NOTE: every prologue / epilogue with the first element-wise and tensor-core tiles, one mode in
# turn with the others (the interpreter takes 4-10 s a case; the suite has a time budget)
@pytest.mark.parametrize(
    "tile,mode",
    [(t, m) for t in range(len(TILES)) for m in MODES if t < 4 or m == MODES[t % 3]],
)
def test_w12_linear_tiles(tile: int, mode: str) -> None:
    """Tile configurations the bench sweeps: K of 3 blocks of 256 plus a tail, row tails."""
    config, group = TILES[tile]
    gen = torch.Generator().manual_seed(tile)
    m, n, k = 3, 21, 600
    x = torch.randn(m, 2 * k if mode == "glu" else k, generator=gen).to(BF16)
    w = weight_with_escapes(n, k, gen)
    packed = w12.encode(w, group)
    kw = prologue_kwargs(mode, m, n, k, gen)
    x, packed = x.to(DEVICE), packed.to(DEVICE)
    y = w12_linear(x, packed, config=config, **kw)
    close_columns(y, w12_linear_reference(x, packed, **kw), 4)


@pytest.mark.parametrize("residual", [False, True])
def test_w12_join_2_takes_the_input_in_join_order(residual: bool) -> None:
    """JOIN 2: the JOIN tile reading x already in its K order (join_order), escapes included
    (each read at its column's place there); no prologue, K a multiple of 128."""
    gen = torch.Generator().manual_seed(7 + residual)
    m, n, k = 3, 21, 640
    x = torch.randn(m, k, generator=gen).to(BF16)
    packed = w12.encode(weight_with_escapes(n, k, gen), 128)
    kw = prologue_kwargs("residual", m, n, k, gen) if residual else {}
    x, packed = x.to(DEVICE), packed.to(DEVICE)
    tile = dict(BLOCK_M=16, BLOCK_N=32, USE_DOT=True, ACC_SCALE=True, ESC_IN_LOOP=True, JOIN=2)
    y = w12_linear(join_order(x), packed, config=tile, x_order="join", **kw)
    close_columns(y, w12_linear_reference(x, packed, **kw), 4)
    with pytest.raises(ValueError, match="JOIN 2"):
        w12_linear(join_order(x), packed, config=tile, x_order="join", norm_weight=x[0])
    with pytest.raises(ValueError, match="pass x_order='join'"):
        w12_linear(join_order(x), packed, config=tile)
    with pytest.raises(ValueError, match="JOIN .* needs ACC_SCALE"):
        w12_linear(x, packed, config=dict(tile, ACC_SCALE=False))
    with pytest.raises(ValueError, match="multiple of 128"):
        join_order(x[:, :600])


@pytest.mark.parametrize(
    ("config", "group", "mode", "k"),
    [
        (dict(BLOCK_M=16, BLOCK_N=32, USE_DOT=True, ACC_SCALE=True, ESC_ROWS=2), 128, "residual",
         600),
        (dict(BLOCK_M=16, BLOCK_N=16, SPLIT_K=2, USE_DOT=True, ESC_ROWS=4), 64, "norm", 1024),
        (dict(BLOCK_M=16, BLOCK_N=16, USE_DOT=True, ESC_ROWS=2), 32, "glu", 200),  # one step
        (dict(BLOCK_M=1, BLOCK_N=4, UNROLL=2, USE_DOT=False, ESC_ROWS=1), 128, "residual", 600),
        (dict(BLOCK_M=16, BLOCK_N=32, USE_DOT=True, ACC_SCALE=True, ESC_ROWS=2, JOIN=2), 128,
         "plain", 640),
    ],
)  # fmt: skip
def test_w12_escape_rows(config: dict, group: int, mode: str, k: int) -> None:
    """ESC_ROWS: each row's first entries fetched over the loop's first two steps, their
    products after the loop, the rest (row 4 of weight_with_escapes has ~k / 3) after them; with
    a K split, one loop step (both fetches after it), a one-row tile, JOIN 2's column order."""
    gen = torch.Generator().manual_seed(k)
    m, n = 3, 21
    x = torch.randn(m, 2 * k if mode == "glu" else k, generator=gen).to(BF16)
    packed = w12.encode(weight_with_escapes(n, k, gen), group)
    kw = prologue_kwargs(mode, m, n, k, gen) if mode != "plain" else {}
    x, packed = x.to(DEVICE), packed.to(DEVICE)
    join = config.get("JOIN") == 2
    y = w12_linear(join_order(x) if join else x, packed, config=config,
                   x_order="join" if join else "natural", **kw)  # fmt: skip
    close_columns(y, w12_linear_reference(x, packed, **kw), 4)


@pytest.mark.parametrize(
    ("split_in", "config", "group", "mode"),
    [
        (2, dict(ACC_SCALE=True), 128, "residual"),
        (4, dict(ACC_SCALE=True, ESC_IN_LOOP=True), 256, "norm"),
        (2, dict(), 32, "glu"),  # a scale per slice
        (4, dict(), 48, "residual"),  # a scale per column
    ],
)
def test_w12_split_inside_the_program(split_in: int, config: dict, group: int, mode: str):
    """SPLIT_IN: K in split_in contiguous ranges, one batched tl.dot over them, their sums
    added after the loop. Against the reference (a different order of the same exact products)
    with escapes, row and column tails and each prologue; K must hold whole blocks a range."""
    gen = torch.Generator().manual_seed(split_in + group)
    m, n, k = 5, 21, 1024
    x = torch.randn(m, 2 * k if mode == "glu" else k, generator=gen).to(BF16)
    packed = w12.encode(weight_with_escapes(n, k, gen), group)
    kw = prologue_kwargs(mode, m, n, k, gen)
    x, packed = x.to(DEVICE), packed.to(DEVICE)
    tile = dict(BLOCK_M=16, BLOCK_N=16, USE_DOT=True, SPLIT_IN=split_in, **config)
    y = w12_linear(x, packed, config=tile, **kw)
    close_columns(y, w12_linear_reference(x, packed, **kw), 4)
    with pytest.raises(ValueError, match="SPLIT_IN=4 needs K a multiple of 256 a range"):
        w12_linear(x[:, :768], w12.encode(torch.zeros(n, 768, dtype=BF16)).to(DEVICE),
                   config=dict(tile, SPLIT_IN=4))  # fmt: skip
    with pytest.raises(ValueError, match="needs tl.dot tiles, SPLIT_K 1"):
        w12_linear(x, packed, config=dict(tile, SPLIT_K=2), **kw)


@pytest.mark.parametrize("tile", [i for i, (c, _) in enumerate(TILES) if c.get("SPLIT_K", 1) > 1])
def test_w12_split_sum_in_kernel_gives_the_same_bits(tile: int, monkeypatch) -> None:
    """K-split tiles whose last program adds the slices (SPLIT_SUM_IN_KERNEL) against the
    split-sum launch: the same sums in the same order, so the same bits; the tile counters are
    zero again after each call."""
    from specpilot.kernels import w12_linear as kernel
    from specpilot.kernels.common import zeroed_counters

    config, group = TILES[tile]
    gen = torch.Generator().manual_seed(tile)
    m, n, k = 3, 21, 600
    w = weight_with_escapes(n, k, gen)
    packed = w12.encode(w, group).to(DEVICE)
    for step in range(2):
        x = torch.randn(m, k, generator=gen).to(DEVICE, BF16)
        residual = torch.randn(m, n, generator=gen).to(DEVICE, BF16)
        monkeypatch.setattr(kernel, "SPLIT_SUM_IN_KERNEL", False)
        launched = w12_linear(x, packed, config=config, residual=residual)
        monkeypatch.setattr(kernel, "SPLIT_SUM_IN_KERNEL", True)
        summed = w12_linear(x, packed, config=config, residual=residual)
        assert torch.equal(summed, launched), step
        assert int(zeroed_counters(x.device, 64).abs().sum()) == 0


def test_prmt_selectors_match_the_plain_decode() -> None:
    """The ASM path's `prmt` selectors (PTX: result byte r = byte c[4r + 3 : 4r] of {b, a},
    a = bytes 0-3) build the same bf16 pairs as the plain path's shifts; the interpreter runs
    only the plain path, so the selectors are checked here against PTX's definition."""
    gen = torch.Generator().manual_seed(0)
    low, high = torch.randint(0, 2**32, (2, 64), generator=gen, dtype=torch.int64)

    def prmt(a: torch.Tensor, b: torch.Tensor, sel: int) -> torch.Tensor:
        source = [(t >> (8 * i)) & 0xFF for t in (a, b) for i in range(4)]
        return sum(source[(sel >> (4 * r)) & 7] << (8 * r) for r in range(4))

    for first, sel in ((0, 0x5140), (2, 0x7362)):

        def byte(t: torch.Tensor, i: int) -> torch.Tensor:
            return (t >> (8 * i)) & 0xFF

        plain = sum(
            (byte(high, first + s) << (16 * s + 8)) | (byte(low, first + s) << (16 * s))
            for s in range(2)
        )
        assert torch.equal(prmt(low, high, sel), plain)


def test_w12_acc_scale_needs_tensor_cores_and_whole_half_blocks_per_group() -> None:
    gen = torch.Generator().manual_seed(0)
    packed = w12.encode(weight_with_escapes(8, 256, gen), 64).to(DEVICE)
    x = torch.randn(16, 256, generator=gen).to(DEVICE, BF16)
    for config in (dict(BLOCK_M=16, BLOCK_N=16, USE_DOT=True, ACC_SCALE=True),
                   dict(BLOCK_M=1, BLOCK_N=4, USE_DOT=False, ACC_SCALE=True)):  # fmt: skip
        with pytest.raises(ValueError, match="ACC_SCALE needs"):
            w12_linear(x, packed, config=config)


@pytest.mark.parametrize("m", [1, 16])
@pytest.mark.parametrize("group", [128, 32])
@pytest.mark.parametrize("switch", ["ACC_SCALE_TILES", "ESC_IN_LOOP_TILES", "HALVES_TILES"])
def test_w12_default_tile_switches(switch: str, group: int, m: int, monkeypatch) -> None:
    """The default tiles with each switch on: ACC_SCALE_TILES scales the half blocks' sums
    where the tile and the group size allow (16 rows, 128) and keeps the per-weight scales
    elsewhere; ESC_IN_LOOP_TILES fetches the first escapes in the first loop step."""
    from specpilot.kernels import w12_linear as kernel

    monkeypatch.setattr(kernel, switch, True)
    gen = torch.Generator().manual_seed(group + m)
    n, k = 40, 512
    x = torch.randn(m, k, generator=gen).to(DEVICE, BF16)
    packed = w12.encode(weight_with_escapes(n, k, gen), group).to(DEVICE)
    residual = torch.randn(m, n, generator=gen).to(DEVICE, BF16)
    y = w12_linear(x, packed, residual=residual)
    close_columns(y, w12_linear_reference(x, packed, residual=residual), 4)


@pytest.mark.parametrize("stages", [2, 4])
def test_w12_loop_stages_same_bits(stages: int, monkeypatch) -> None:
    """A one-row element-wise tile with its loads pipelined (LOOP_STAGES) sums the same products
    in the same order as without: the same bits. Through MEASURED_TILES, which tile_config
    takes before its rules."""
    from specpilot.kernels import w12_linear as kernel

    gen = torch.Generator().manual_seed(stages)
    x = torch.randn(1, 1100, generator=gen).to(DEVICE, BF16)
    packed = w12.encode(weight_with_escapes(21, 1100, gen), 128).to(DEVICE)
    tile = dict(BLOCK_M=1, BLOCK_N=4, UNROLL=1, SPLIT_K=1, USE_DOT=False, num_warps=4)
    monkeypatch.setattr(kernel, "MEASURED_TILES", {(1, 21, 1100): dict(tile, LOOP_STAGES=stages)})
    assert kernel.tile_config(1, 21, 1100)["LOOP_STAGES"] == stages
    assert "LOOP_STAGES" not in kernel.tile_config(16, 21, 1100)
    y = w12_linear(x, packed)
    assert torch.equal(y, w12_linear(x, packed, config=tile))
    close_columns(y, w12_linear_reference(x, packed), 2)


@pytest.mark.parametrize("m,tile", [(1, 0), (1, 11), (3, 1), (16, 5), (16, 13), (16, 4)])
def test_w12_swiglu_epilogue_gives_the_bits_of_the_swiglu_kernel(m: int, tile: int) -> None:
    """w12_linear(swiglu=True) of a [gate | up] W12 weight with escapes in both halves: the bits
    of silu_mul after the plain multiply, element-wise and tensor-core tiles (one with a K
    split: silu_mul after it), and close to the reference."""
    from specpilot.kernels.elementwise import silu_mul

    config, group = TILES[tile]
    gen = torch.Generator().manual_seed(100 + tile)
    n, k = 42, 600
    x = torch.randn(m, k, generator=gen).to(DEVICE, BF16)
    packed = w12.encode(weight_with_escapes(n, k, gen), group).to(DEVICE)
    y = w12_linear(x, packed, config=config, swiglu=True)
    assert y.shape == (m, n // 2)
    assert torch.equal(y, silu_mul(w12_linear(x, packed, config=config)))
    close_columns(y, w12_linear_reference(x, packed, swiglu=True), 4)


@pytest.mark.skipif(DEVICE.type == "cuda", reason="the interpreter's wide tile")
@pytest.mark.parametrize("mode", ["plain", "norm", "residual", "glu", "swiglu"])
@pytest.mark.parametrize("kind", ["w12", "bf16"])
def test_the_interpreters_wide_one_row_tile_gives_the_gpus_bits(kind: str, mode: str) -> None:
    """Under the interpreter a one-row element-wise tile takes up to common.INTERPRETED_ROWS
    weight rows a program (common.interpreted_tile): the bits of the GPU's tile (tile_config's,
    given), every prologue and epilogue, W12 and bf16; a shape it would leave a partial tile
    keeps its own."""
    from specpilot.kernels import linear
    from specpilot.kernels import w12_linear as w12_module
    from specpilot.kernels.common import interpreted_tile
    from specpilot.kernels.elementwise import silu_mul

    gen = torch.Generator().manual_seed(7)
    n, k = 256, 512
    kw = prologue_kwargs("plain" if mode == "swiglu" else mode, 1, n, k, gen)
    kw["swiglu"] = mode == "swiglu"
    x = torch.randn(1, 2 * k if mode == "glu" else k, generator=gen).to(DEVICE, BF16)
    w = weight_with_escapes(n, k, gen)
    if kind == "w12":
        weight, multiply, gpu = w12.encode(w, 64).to(DEVICE), w12_linear, w12_module.tile_config
    else:
        weight, multiply, gpu = w.to(DEVICE), skinny_linear, linear.tile_config
    gpu = gpu(1, n, k)
    assert interpreted_tile(gpu, n)["BLOCK_N"] == 64 > gpu["BLOCK_N"]
    assert interpreted_tile(gpu, 2 * gpu["BLOCK_N"] + 2) == gpu  # 2 rows left over: kept
    y = multiply(x, weight, **kw)
    assert torch.equal(y, multiply(x, weight, config=gpu, **kw))
    if mode == "swiglu":
        assert torch.equal(y, silu_mul(multiply(x, weight)))


QWEN3_8B_SHAPES = [(6144, 4096), (4096, 4096), (24576, 4096), (151936, 4096)]
WIDE_SHAPES = [(24576, 4096), (151936, 4096), (28672, 4096)]  # Llama-3.1-8B's gate|up last


@pytest.mark.parametrize(
    "m, shape", [(1, s) for s in QWEN3_8B_SHAPES] + [(1, (28672, 4096))]
    + [(16, s) for s in WIDE_SHAPES]
)  # fmt: skip
def test_w12_measured_tiles(m: int, shape: tuple[int, int], monkeypatch) -> None:
    """The tiles tile_config picks for Qwen3-8B's layers and Llama-3.1-8B's gate|up (one row:
    the measured tiles with their loads pipelined, 4-16 rows a program on 2 or 4 warps; 16
    rows: the measured 64-row ACC_SCALE tiles on 4 or 2 warps), through the launcher's default
    path, on a small weight with a K tail."""
    from specpilot.kernels import w12_linear as kernel

    config = kernel.tile_config(m, *shape)
    monkeypatch.setattr(kernel, "tile_config", lambda m, n, k: dict(config))
    gen = torch.Generator().manual_seed(shape[0] + m)
    x = torch.randn(m, 600, generator=gen).to(DEVICE, BF16)
    packed = w12.encode(weight_with_escapes(70, 600, gen), 128).to(DEVICE)
    residual = torch.randn(m, 70, generator=gen).to(DEVICE, BF16)
    y = w12_linear(x, packed, residual=residual)
    close_columns(y, w12_linear_reference(x, packed, residual=residual), 2)


def test_linear_profile_ranges(monkeypatch) -> None:
    """w12_engine.PROFILE_RANGES (bench/engine_speed.kernel_profile) puts each multiply in a
    profiler range named by its kind and shape; off, the same product."""
    from torch.profiler import ProfilerActivity, profile

    from specpilot.formats import w12_engine

    gen = torch.Generator().manual_seed(3)
    x = torch.randn(2, 64, generator=gen).to(DEVICE, BF16)
    weight = torch.randn(48, 64, generator=gen).to(DEVICE, BF16)
    monkeypatch.setattr(w12_engine, "PROFILE_RANGES", True)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        y = linear(x, weight)
        linear(x, w12.encode(weight))
    assert {"bf16 2x48x64", "w12 2x48x64"} <= {e.key for e in prof.key_averages()}
    monkeypatch.setattr(w12_engine, "PROFILE_RANGES", False)
    assert torch.equal(y, linear(x, weight))


def test_w12_linear_on_fused_row_views() -> None:
    """The fused forwards multiply by row slices of a concatenated weight (views, absolute
    escape offsets) and call `linear` for either weight type."""
    gen = torch.Generator().manual_seed(7)
    w = weight_with_escapes(40, 64, gen)
    fused = w12.cat([w12.encode(w[:9], 16), w12.encode(w[9:], 16)]).to(DEVICE)
    x = torch.randn(2, 64, generator=gen).to(DEVICE, BF16)
    part = fused[9:31]
    close_columns(linear(x, part), w12_linear_reference(x, part))
    assert torch.equal(linear(x, part), w12_linear(x, part))
    assert torch.equal(linear(x, w[9:31].to(DEVICE)), skinny_linear(x, w[9:31].to(DEVICE)))
    layer = W12Linear(fused, use_kernel=True)
    close_columns(layer(x.view(2, 1, 64)).view(2, -1), w12_linear_reference(x, fused))


def test_w12_linear_rejects_bad_input() -> None:
    packed = w12.encode(torch.randn(4, 8).to(BF16)).to(DEVICE)
    x = torch.randn(2, 8, dtype=BF16, device=DEVICE)
    with pytest.raises(ValueError, match="columns"):
        w12_linear(torch.randn(2, 6, dtype=BF16, device=DEVICE), packed)
    with pytest.raises(ValueError, match="at most 64 rows"):
        w12_linear(torch.randn(65, 8, dtype=BF16, device=DEVICE), packed)
    with pytest.raises(ValueError, match="bf16 x"):
        w12_linear(x.half(), packed)
    with pytest.raises(ValueError, match="unit stride"):
        w12_linear(torch.randn(8, 2, dtype=BF16, device=DEVICE).t(), packed)
    with pytest.raises(ValueError, match="residual"):
        w12_linear(x, packed, residual=torch.zeros(3, 2, dtype=BF16, device=DEVICE))
    with pytest.raises(ValueError, match="leaves a split without columns"):
        w12_linear(x, packed, config=dict(BLOCK_M=2, BLOCK_N=4, SPLIT_K=2, USE_DOT=False))
    with pytest.raises(ValueError, match="BLOCK_M >= 16"):
        w12_linear(x, packed, config=dict(BLOCK_M=4, BLOCK_N=32, UNROLL=1, USE_DOT=True))


@pytest.mark.parametrize("n,k,group", [(21, 600, 128), (9, 97, 32), (7, 256, 48)])
def test_w12_decode_kernel_is_bit_exact(n: int, k: int, group: int) -> None:
    """w12_decode (one kernel, for multiplies wider than w12_linear takes) gives formats/w12's
    decode bit for bit: escapes (huge, tiny, subnormal), signed zeros, K tails, odd groups, a
    row view of a concatenated weight (absolute escape offsets)."""
    from specpilot.kernels.w12_linear import w12_decode

    gen = torch.Generator().manual_seed(n)
    w = weight_with_escapes(n, k, gen)
    w[1, 7] = float("inf")
    w[1, 8] = float("nan")
    w[6, :3] = torch.tensor([-0.0, 2.0**-133, -(2.0**-126)])
    packed = w12.encode(w, group)
    assert packed.num_escapes > 5
    both = w12.cat([w12.encode(weight_with_escapes(5, k, gen), group), packed]).to(DEVICE)
    view = both.rows(5, 5 + n)
    for weight in (packed.to(DEVICE), view):
        got = w12_decode(weight).cpu().view(torch.int16)
        assert torch.equal(got, w.view(torch.int16))


def test_w12_module_above_the_kernel_rows_decodes_in_one_kernel(monkeypatch) -> None:
    """W12Linear with more rows than w12_linear takes: w12_decode then F.linear, never the
    host-synchronising formats/w12.decode; the product is the decoded weight's."""
    from specpilot.kernels.w12_linear import MAX_ROWS

    gen = torch.Generator().manual_seed(3)
    w = weight_with_escapes(24, 300, gen)
    module = W12Linear(w12.encode(w, 64).to(DEVICE), use_kernel=True)
    x = torch.randn(2, MAX_ROWS, 300, generator=gen).to(DEVICE, BF16)

    def refuse(_weight):  # noqa: ANN001, ANN202
        raise AssertionError("formats/w12.decode called")

    monkeypatch.setattr(w12, "decode", refuse)
    assert torch.equal(module(x), torch.nn.functional.linear(x, w.to(DEVICE)))


def test_w12_rules_give_unswept_wide_shapes_the_measured_families() -> None:
    """A gate|up or LM head of a model whose shapes were never swept (here 20480 x 5120) gets
    the families that won at every wide shape swept (runs 88, 115, 123), not the narrow
    shapes' rules: one row, 16 rows a program with the loads pipelined; 2-16 rows, 64 rows on
    2 warps with ACC_SCALE and no K split."""
    from specpilot.kernels import w12_linear as kernel

    one = kernel.tile_config(1, 20480, 5120)
    assert (one["USE_DOT"], one["BLOCK_N"], one["LOOP_STAGES"]) == (False, 16, 3)
    for m in (2, 16):
        tile = kernel.tile_config(m, 20480, 5120)
        assert (tile["BLOCK_N"], tile["num_warps"], tile["SPLIT_K"]) == (64, 2, 1)
        assert tile["ACC_SCALE"]
    assert kernel.tile_config(16, 4096, 5120)["BLOCK_N"] == 32  # narrow shapes: as before


def test_w12_join_input_from_the_rmsnorm_launch(monkeypatch) -> None:
    """JOIN_INPUT: where a 16-row W12 multiply takes its norm from an rmsnorm launch, the launch
    writes it in join_order and the multiply's tile reads it so (x_order "join"); the products
    are the reference's to summation order. Off: the natural order, no keyword."""
    from specpilot.kernels import w12_linear as w12_kernels
    from specpilot.kernels.elementwise import rmsnorm
    from specpilot.models import fused

    monkeypatch.setattr(w12_kernels, "JOIN_INPUT", True)
    wgmma_rule_tiles(monkeypatch, w12_kernels)
    gen = torch.Generator().manual_seed(11)
    m, n, k = 16, 21, 256
    x = torch.randn(m, k, generator=gen).to(BF16).to(DEVICE)
    norm = (torch.rand(k, generator=gen) + 0.5).to(BF16).to(DEVICE)
    packed = w12.encode(weight_with_escapes(n, k, gen), 128).to(DEVICE)
    a, kw = fused.normed_input(x, packed, norm, 1e-6)
    assert kw == {"x_order": "join"}
    assert torch.equal(a, join_order(rmsnorm(x, norm, 1e-6)))
    y = fused.normed_linear(x, packed, norm, 1e-6)
    close_columns(y, w12_linear_reference(x, packed, norm_weight=norm, eps=1e-6), 4)
    assert not w12_kernels.join_input(packed, 1)  # one row: element-wise tiles
    monkeypatch.setattr(w12_kernels, "JOIN_INPUT", False)
    assert fused.normed_input(x, packed, norm, 1e-6)[1] == {}
    with pytest.raises(ValueError, match="multiple of 128"):
        rmsnorm(x[:, :200], norm[:200], 1e-6, join=True)


def test_w12_swiglu_epilogue_writes_join_order() -> None:
    """y_order "join": the SwiGLU epilogue's columns at their join_position, the same bits;
    refused without the epilogue or with N / 2 not a multiple of 128."""
    gen = torch.Generator().manual_seed(12)
    m, n, k = 5, 256, 256
    x = torch.randn(m, k, generator=gen).to(BF16).to(DEVICE)
    packed = w12.encode(weight_with_escapes(n, k, gen), 128).to(DEVICE)
    tile = dict(BLOCK_M=16, BLOCK_N=32, USE_DOT=True, ACC_SCALE=True)
    y = w12_linear(x, packed, config=tile, swiglu=True)
    assert torch.equal(w12_linear(x, packed, config=tile, swiglu=True, y_order="join"),
                       join_order(y))  # fmt: skip
    with pytest.raises(ValueError, match="SwiGLU epilogue"):
        w12_linear(x, packed, config=tile, y_order="join")


def wgmma_rule_tiles(monkeypatch, w12_kernels) -> None:
    """The W12 rule tiles of 2-64 rows as 64 weight rows on 4 warps (wgmma on Hopper), the tiles
    join_input takes (at these small shapes the rules give 2-warp tiles)."""
    plain = w12_kernels._rule_tile
    wide = dict(BLOCK_M=16, BLOCK_N=64, UNROLL=1, SPLIT_K=1, USE_DOT=True, num_warps=4,
                num_stages=3)  # fmt: skip
    monkeypatch.setattr(
        w12_kernels, "_rule_tile", lambda m, n, k: wide if m > 1 else plain(m, n, k)
    )
