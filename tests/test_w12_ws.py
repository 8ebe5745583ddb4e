"""kernels/w12_ws.py: the warp-specialized W12 multiply (a prototype, CUDA only).

Without a GPU: the kernel's bit work, emulated in PyTorch, gives back every weight bit for bit
and the reference's products, the kernel compiles for sm_90a, and its own code runs on
kernels/emulate.py ("emulated" cases). On CUDA (Hopper, "cuda" cases): the kernel against
w12_linear_reference."""

from __future__ import annotations

import pytest
import torch

from specpilot.formats import w12
from specpilot.kernels import w12_ws
from specpilot.kernels.w12_linear import w12_linear_reference
from tests.conftest import compiled_json, gluon_on
from tests.test_kernels import DEVICE
from tests.test_w12_kernels import close_columns, weight_with_escapes


def _weights(n: int, k: int, seed: int = 0) -> torch.Tensor:
    """test_w12_kernels.weight_with_escapes (zeros of both signs, tiny and subnormal weights,
    outliers either side of a group's window, one row of 2^-60 .. 2^52), seeded."""
    return weight_with_escapes(n, k, torch.Generator().manual_seed(seed))


def test_prmt_emulation_picks_the_bytes() -> None:
    a = torch.tensor([0x44332211], dtype=torch.int32)
    b = torch.tensor([0x0B0A0908], dtype=torch.int32)
    assert w12_ws.prmt(a, b, 0x5140).item() == 0x09220811  # a0 b0 a1 b1, low byte first
    assert w12_ws.prmt(a, b, 0x5342).item() == 0x09440833  # a2 b0 a3 b1
    ones = torch.tensor([-1], dtype=torch.int32)
    assert w12_ws.prmt(a, ones, 0x4000).item() == 0xFF111111 - 2**32  # a signed word back


@pytest.mark.parametrize("n, k", [(64, 256), (96, 640), (130, 4096)])
def test_pair_decode_gives_every_weight_back(n: int, k: int) -> None:
    """The `_pair` words (emulated), scaled by each group's 2^(2b) and put back from
    pair_order's columns, are the weights bit for bit; escaped weights read as zero."""
    w = _weights(n, k)
    packed = w12.encode(w)
    kp = packed.low.shape[1]
    eye = torch.eye(kp, dtype=torch.bfloat16)[:, :k]  # each natural column alone
    # emulate(x = identity rows) gives the decoded weights' columns, escapes added
    got = w12_ws.emulate(eye[:k], packed)  # [k, n]: row c = column c of every weight row
    # equal as numbers: every bit of a non-zero weight (a sum keeps no zero's sign)
    assert torch.equal(got.T.to(torch.bfloat16).float(), w.float())


@pytest.mark.parametrize("n, k", [(64, 256), (130, 4096)])
def test_restore_gives_every_weight_back_bit_for_bit(n: int, k: int) -> None:
    """RESTORE's `_restore` (emulated: each half's exponent raised by 2b where it is not 0) turns
    the decoded stage into the weights themselves, bit for bit (zeros with their sign, tiny and
    huge weights of every group), escaped weights +0."""
    w = _weights(n, k, seed=3)
    packed = w12.encode(w)
    got = w12_ws.restored_weights(packed)[:, :k].view(torch.int16)
    escaped = torch.zeros(n, k, dtype=torch.bool)
    rows = torch.repeat_interleave(torch.arange(n), packed.row_ptr.diff())
    escaped[rows, packed.esc_col.long()] = True
    assert escaped.any() and (~escaped).any()
    assert torch.equal(got[~escaped], w.view(torch.int16)[~escaped])
    assert (got[escaped] == 0).all()
    # by hand, b = 63 (exponents + 126): +0 and -0 stay; exponents 1 and 2 raised; -1.875 x 2^-112
    # (exponent 15, the window's top) to -1.875 x 2^14 beside a +0
    words = torch.tensor([0x0000_8000, 0x0080_0100, 0x87F0_0000 - 2**32], dtype=torch.int32)
    got = w12_ws.restore_words(words, torch.tensor([63 << 8], dtype=torch.int32))
    assert (got.long() & 0xFFFFFFFF).tolist() == [0x0000_8000, 0x3F80_4000, 0xC6F0_0000]


@pytest.mark.parametrize("restore", [False, True])
@pytest.mark.parametrize("m", [1, 5, 16])
def test_emulated_products_match_the_reference(m: int, restore: bool) -> None:
    """The kernel's arithmetic (emulated): each group's sums scaled, or (RESTORE) the weights
    restored and summed as they are."""
    w = _weights(192, 1152, seed=m)
    packed = w12.encode(w)
    x = (torch.randn(m, 1152, generator=torch.Generator().manual_seed(7))).to(torch.bfloat16)
    ref = w12_linear_reference(x, packed).float()
    close_columns(w12_ws.emulate(x, packed, restore=restore), ref, 4)


def test_pair_order_is_a_permutation_of_each_block() -> None:
    x = torch.arange(2 * 512, dtype=torch.float32).view(2, 512)
    p = w12_ws.pair_order(x)
    assert p.shape == (2, 512)
    for block in range(2):
        cols = p[0, 256 * block : 256 * (block + 1)]
        assert sorted(cols.tolist()) == list(range(256 * block, 256 * (block + 1)))
    # position 64 p + r of a block: column 32 (4 h + q0 + r % 2) + r // 2
    assert p[0, :4].tolist() == [0, 32, 1, 33] and p[0, 64:66].tolist() == [64, 96]
    assert p[0, 128:130].tolist() == [128, 160]
    assert w12_ws.pair_order(torch.ones(1, 300)).shape == (1, 512)  # zero columns to Kp


def test_the_kernel_compiles_for_sm90_without_spills() -> None:
    """Gluon compiles it for sm_90a here (Triton's ptxas): no spills, one program an SM in
    shared memory; the default tile (4 input stages, 2 decoded) and 128 rows with 8 decoding
    warps (bench/w12_join.py --ws tries both), and the SwiGLU and residual epilogues, with
    programmatic dependent launch's waits too."""
    wide = dict(BLOCK_N=128, STAGES=2, W_STAGES=1, DECODE_WARPS=8, DECODE_REGS=80)
    code = "import json; from specpilot.kernels import aot, w12_ws; "
    code += f"print(json.dumps([aot.usage(w12_ws.compile_sm90(t)) for t in ({{}}, {wide!r})] + "
    code += "[aot.usage(w12_ws.compile_sm90(swiglu=True)), "
    code += "aot.usage(w12_ws.compile_sm90(dict(SPLIT_K=1), residual=True)), "
    code += "aot.usage(w12_ws.compile_sm90(dict(SPLIT_K=1), residual=True, pdl=True)), "
    code += "aot.usage(w12_ws.compile_sm90(swiglu=True, pdl=True))]))"
    default, eight, swiglu, residual, *pdl = compiled_json(code)
    for usage in (default, eight, swiglu, residual, *pdl):
        assert usage["spill_stores"] == 0 and usage["spill_loads"] == 0
        assert usage["shared"] <= 227 * 1024
    assert default["warps"] == 12  # 4 multiplying, 4 decoding, 1 loading (a warpgroup's worth)
    assert eight["warps"] == 16


def test_bad_input_is_refused() -> None:
    packed = w12.encode(_weights(64, 256))
    x = torch.zeros(2, 256, dtype=torch.bfloat16)
    for tile in (dict(RESTORE=1, BOUND=2), dict(RESTORE=1, MMA_LAG=1), dict(MMA_LAG=1, BOUND=3)):
        with pytest.raises(ValueError, match="RESTORE|MMA_LAG"):
            w12_ws.w12_ws_linear(x, packed, tile)
    wide = w12.encode(_weights(64, 4352))  # 17 blocks: more than a restored unit takes
    with pytest.raises(ValueError, match="RESTORE"):
        w12_ws.w12_ws_linear(torch.zeros(2, 4352, dtype=torch.bfloat16), wide, dict(RESTORE=1),
                             swiglu=True)  # fmt: skip
    with pytest.raises(ValueError, match="unknown tile keys"):
        w12_ws.w12_ws_linear(torch.zeros(1, 256, dtype=torch.bfloat16), packed, dict(BLOCK=1))
    with pytest.raises(ValueError, match="wants x"):
        w12_ws.w12_ws_linear(torch.zeros(17, 256, dtype=torch.bfloat16), packed)


BOTH = ["cuda", "emulated"]  # a Hopper GPU, or kernels/emulate.py on the CPU (3 SMs)


@pytest.mark.parametrize("m", [1, 7, 16])
@pytest.mark.parametrize("where, n, k, split", [
    ("cuda", 4096, 4096, 0), ("cuda", 320, 1152, 1), ("cuda", 256, 12288, 4),
    ("cuda", 4100, 1152, 0),  # N off 16: w12_tc's GPU fault (runs 302-304), shared here?
    ("emulated", 200, 1152, 0), ("emulated", 64, 4608, 2)])  # fmt: skip
def test_w12_ws_matches_the_reference(where: str, m: int, n: int, k: int, split: int) -> None:
    with gluon_on(where) as device:
        packed = w12.encode(_weights(n, k, seed=n + m).to(device))
        x = torch.randn(m, k).to(device, torch.bfloat16)
        ref = w12_linear_reference(x, packed).float()
        y = w12_ws.w12_ws_linear(x, packed, dict(SPLIT_K=split)).float()
        close_columns(y, ref, 4)


@pytest.mark.parametrize("m, n, k, tile", [
    (16, 130, 600, dict(SPLIT_K=1)), (16, 128, 4096, dict(SPLIT_K=1)),
    (7, 200, 2304, dict(STAGES=2, SPLIT_K=1)), (16, 200, 2304, dict(SPLIT_K=1, X_STAGES=3)),
    (16, 200, 2304, dict(SPLIT_K=1, BOUND=4))])  # fmt: skip
def test_w12_ws_with_pdl(m: int, n: int, k: int, tile: dict) -> None:
    """Programmatic dependent launch's branches (emulated): the planes of the first
    min(STAGES, X_STAGES) blocks before the wait, their inputs after it; programs of fewer
    blocks than that (K 600), of more (K 4096), of several units (200 rows on 3 SMs), an input
    ring shallower than the planes' (X_STAGES 3), and BOUND 4's uncopied input (a bound: wrong
    products, so no reference); the residual read after the wait. (No K split: its sum is a
    Triton kernel, which the interpreter runs without PDL's instructions.)"""
    with gluon_on("emulated", pdl=True) as device:
        packed = w12.encode(_weights(n, k, seed=n + k).to(device))
        x = torch.randn(m, k).to(device, torch.bfloat16)
        y = w12_ws.w12_ws_linear(x, packed, tile)
        if tile.get("BOUND"):
            return
        close_columns(y.float(), w12_linear_reference(x, packed).float(), 4)
        r = torch.randn(m, n).to(device, torch.bfloat16)
        with_r = w12_ws.w12_ws_linear(x, packed, tile, residual=r)
        assert torch.equal(with_r, (y.float() + r.float()).to(torch.bfloat16))


@pytest.mark.parametrize("where", BOTH)
@pytest.mark.parametrize(
    "tile",
    [dict(PERSISTENT=1), dict(SWIZZLE=0), dict(STAGES=2), dict(ESC_FIRST=0),
     dict(ESC_BATCH=0), dict(BASE_SLAB=0), dict(SPLIT_K=1),
     dict(STAGES=2, W_STAGES=1, DECODE_REGS=80, MAXNREG=80, PERSISTENT=2),
     dict(EARLY_FREE=1, PERSISTENT=1, X_STAGES=3), dict(MMA_LAG=1), dict(MMA_LAG=1, SPLIT_K=1),
     dict(RESTORE=1), dict(RESTORE=1, ESC_FIRST=0, PERSISTENT=1, SPLIT_K=1)],
)  # fmt: skip
def test_w12_ws_tiles_match_the_reference(where: str, tile: dict) -> None:
    """A persistent grid (141 tiles of 64 rows, more than the SMs: the rings run on across
    units), unswizzled planes, a 2-stage ring, the escapes after the blocks or one after another,
    each block's group bases loaded in the loop, no K split (a slab of 9 blocks' bases), two
    persistent programs an SM (80 registers at launch), the planes' stage freed before the
    decode with an input ring shallower than the planes', each block's products waited for
    after the next block's are issued (with and without a K split), the weights restored by
    the decoders into one accumulator; N not a multiple of the tile. (Row 4 of the weights has
    more escapes than the batch of 4; emulated: 200 rows, 4 units a program.)"""
    with gluon_on(where) as device:
        packed = w12.encode(_weights(9000 if where == "cuda" else 200, 2304, seed=3).to(device))
        x = torch.randn(16, 2304).to(device, torch.bfloat16)
        ref = w12_linear_reference(x, packed).float()
        y = w12_ws.w12_ws_linear(x, packed, tile).float()
        close_columns(y, ref, 4)


@pytest.mark.parametrize("where", BOTH)
@pytest.mark.parametrize("m, tile", [(1, {}), (16, {}), (16, dict(RESTORE=1))])
def test_w12_ws_swiglu_and_its_pair_order(where: str, m: int, tile: dict) -> None:
    """swiglu: silu(gate) * up of the [gate | up] weight (w12_linear's contract), and the same
    written in pair_order for a w12_ws down; 2 x 512 rows, N / 2 a multiple of 256 (RESTORE:
    the ups' group bases read half N further down)."""
    with gluon_on(where) as device:
        packed = w12.encode(_weights(1024 if where == "cuda" else 512, 1152, seed=11).to(device))
        half = packed.shape[0] // 2
        x = torch.randn(m, 1152).to(device, torch.bfloat16)
        ref = w12_linear_reference(x, packed, swiglu=True).float()
        y = w12_ws.w12_ws_linear(x, packed, tile, swiglu=True)
        assert y.shape == (m, half)
        close_columns(y, ref, 4)
        paired = w12_ws.w12_ws_linear(x, packed, tile, swiglu=True, y_order="pair")
        assert torch.equal(paired, w12_ws.pair_order(y))


@pytest.mark.parametrize("where", BOTH)
@pytest.mark.parametrize("split", [1, 3])
def test_w12_ws_residual(where: str, split: int) -> None:
    """residual + x @ W.T, in the epilogue (no K split) or in the split sum's."""
    residual_holds(w12_ws.w12_ws_linear, where, split)


def residual_holds(linear, where: str, split: int) -> None:
    """`linear` (w12_ws's, w12_tc's) with the residual, 16 rows, K split `split`: the plain
    products the reference's, the residual's sum exact given them."""
    with gluon_on(where) as device:
        packed = w12.encode(_weights(320 if where == "cuda" else 96, 2304, seed=5).to(device))
        n = packed.shape[0]
        x = torch.randn(16, 2304).to(device, torch.bfloat16)
        r = torch.randn(16, n).to(device, torch.bfloat16)
        plain = linear(x, packed, dict(SPLIT_K=split))
        close_columns(plain.float(), w12_linear_reference(x, packed).float(), 4)
        # the residual added to the rounded product and rounded again, as w12_linear_reference
        # (and HF's modules) do: exact given the product (an ulp of the product off in summation
        # order can be many of a sum that cancels, which a tolerance on y would call wrong; run
        # 279)
        y = linear(x, packed, dict(SPLIT_K=split), residual=r)
        assert torch.equal(y, (plain.float() + r.float()).to(torch.bfloat16))


def test_epilogues_refuse_what_they_do_not_do() -> None:
    packed = w12.encode(_weights(64, 256))
    x = torch.zeros(2, 256, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="swiglu only"):
        w12_ws.w12_ws_linear(x, packed, y_order="pair")
    with pytest.raises(ValueError, match="no residual"):
        w12_ws.w12_ws_linear(x, packed, swiglu=True, residual=torch.zeros(2, 64))
    with pytest.raises(ValueError, match="multiple of 256"):
        w12_ws.w12_ws_linear(x, packed, swiglu=True, y_order="pair")
    with pytest.raises(ValueError, match="residual must be"):
        w12_ws.w12_ws_linear(x, packed, residual=torch.zeros(2, 63, dtype=torch.bfloat16))


def test_rmsnorm_writes_pair_order() -> None:
    """rmsnorm(pair=True): its output at kernels/common.pair_position, which is pair_order's
    permutation (the input a w12_ws multiply takes); refused with join or K not a multiple of
    256."""
    from specpilot.kernels.elementwise import rmsnorm

    gen = torch.Generator().manual_seed(4)
    x = torch.randn(3, 512, generator=gen).to(DEVICE, torch.bfloat16)
    norm = (torch.rand(512, generator=gen) + 0.5).to(DEVICE, torch.bfloat16)
    assert torch.equal(rmsnorm(x, norm, 1e-6, pair=True), w12_ws.pair_order(rmsnorm(x, norm, 1e-6)))
    with pytest.raises(ValueError, match="pair order"):
        rmsnorm(x[:, :384], norm[:384], 1e-6, pair=True)
    with pytest.raises(ValueError, match="pair order"):
        rmsnorm(x, norm, 1e-6, join=True, pair=True)


@pytest.mark.parametrize("where", BOTH)
def test_w12_ws_pair_order_runs_from_gate_up_to_down(where: str) -> None:
    """The verify forward's chain (models/fused.py with VERIFY): `pair_chain_holds`."""
    pair_chain_holds(w12_ws.w12_ws_linear, where)


def pair_chain_holds(linear, where: str) -> None:
    """gate|up's SwiGLU written in pair order, read so by the down with its residual, on
    `linear` (w12_ws's, w12_tc's) from an input in pair order (as rmsnorm(pair=True) writes
    it): the bits of the same multiplies with the host's pair_order between them, and the
    reference's products."""
    gen = torch.Generator().manual_seed(9)
    with gluon_on(where) as device:
        gate_up = w12.encode(_weights(1024, 512, seed=1)).to(device)
        down = w12.encode(_weights(512, 512, seed=2)).to(device)
        x = torch.randn(16, 512, generator=gen).to(device, torch.bfloat16)
        r = torch.randn(16, 512, generator=gen).to(device, torch.bfloat16)
        xp = w12_ws.pair_order(x)
        act = linear(xp, gate_up, x_order="pair", swiglu=True, y_order="pair")
        y = linear(act, down, x_order="pair", residual=r)
        natural = linear(x, gate_up, swiglu=True)
        assert torch.equal(act, w12_ws.pair_order(natural))
        assert torch.equal(y, linear(natural, down, residual=r))
        close_columns(natural.float(), w12_linear_reference(x, gate_up, swiglu=True).float(), 4)


def test_an_n_off_16_is_padded_and_cut_back() -> None:
    """Where N is not a multiple of 16 (the products wrong on the GPU: w12_ws.ROW_MULTIPLE) the
    launchers multiply by the weight padded with zero rows and cut y back: the zero rows decode
    to 0 and carry no escapes, the residual is padded with the weight, an N already a multiple
    is left alone; SwiGLU pads its gates and its ups each, y cut back to N / 2."""
    packed = w12.encode(weight_with_escapes(130, 512, torch.Generator().manual_seed(3)))
    wide = w12_ws.padded_rows(packed, 144)
    assert wide.shape == (144, 512) and w12_ws.padded_rows(packed, 130) is packed
    assert torch.equal(w12.decode(wide)[:130], w12.decode(packed))
    assert not w12.decode(wide)[130:].any() and wide.num_escapes == packed.num_escapes
    seen = []

    def linear(x, weight, tile, residual=None, **kw):
        seen.append((weight.shape[0], None if residual is None else tuple(residual.shape), kw))
        return torch.ones(x.shape[0], weight.shape[0])

    x, residual = torch.zeros(3, 512), torch.zeros(3, 130)
    y = w12_ws.off_row_multiple(linear, x, packed, {}, False, residual, x_order="pair")
    assert y.shape == (3, 130) and seen == [(144, (3, 144), {"x_order": "pair"})]
    square = w12.encode(weight_with_escapes(128, 512, torch.Generator().manual_seed(4)))
    assert w12_ws.off_row_multiple(linear, x, square, {}, False, None) is None
    halves = w12_ws.padded_rows(packed, 144, halves=True)  # 65 gates + 7, 65 ups + 7
    decoded, original = w12.decode(halves), w12.decode(packed)
    assert torch.equal(decoded[:65], original[:65]) and torch.equal(decoded[72:137], original[65:])
    assert not decoded[65:72].any() and not decoded[137:].any()
    assert halves.num_escapes == packed.num_escapes and halves.row_ptr.diff().min() >= 0
    seen.clear()
    y = w12_ws.off_row_multiple(linear, x, packed, {}, True, None)
    assert y.shape == (3, 65) and seen[0][0] == 144
