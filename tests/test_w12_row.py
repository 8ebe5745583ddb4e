"""kernels/w12_row.py: the one-row W12 multiply fed by a TMA ring (a prototype, CUDA only).

Without a GPU: the kernel's bit work, emulated in PyTorch, gives back every weight bit for bit,
the kernel compiles for sm_90a without spills, and its own code runs on kernels/emulate.py
("emulated" cases). On CUDA (Hopper, "cuda" cases): the kernel against w12_linear_reference."""

from __future__ import annotations

import pytest
import torch

from specpilot.formats import w12
from specpilot.kernels import w12_row
from specpilot.kernels.elementwise import rmsnorm_reference
from specpilot.kernels.w12_linear import w12_linear_reference
from tests.conftest import compiled_json, gluon_on, traced_rows
from tests.test_kernels import CUDA, order_floor
from tests.test_w12_kernels import close_columns, weight_with_escapes


def _weights(n: int, k: int, seed: int = 0) -> torch.Tensor:
    """test_w12_kernels.weight_with_escapes (zeros of both signs, tiny and subnormal weights,
    outliers either side of a group's window, one row of 2^-60 .. 2^52), seeded."""
    return weight_with_escapes(n, k, torch.Generator().manual_seed(seed))


def _row_inputs(n: int, k: int, device, gen: torch.Generator) -> tuple:  # noqa: ANN001
    """A seeded weight with escapes [n, k] (`_weights`, seed k), its W12 form, an input x [1, k]
    and a norm weight [k] (both bf16) on `device`."""
    w = _weights(n, k, seed=k).to(device)
    x = (3 * torch.randn(1, k, generator=gen)).to(device, torch.bfloat16)
    nw = (torch.rand(k, generator=gen) + 0.5).to(device, torch.bfloat16)
    return w, w12.encode(w), x, nw


def _escaped(packed: w12.W12Weight, n: int, k: int) -> torch.Tensor:
    out = torch.zeros(n, k, dtype=torch.bool)
    rows = torch.repeat_interleave(torch.arange(n), packed.row_ptr.diff())
    out[rows, packed.esc_col.long()] = True
    return out


@pytest.mark.parametrize("n, k", [(64, 256), (130, 4096), (33, 600)])
def test_row_words_give_every_weight_back_bit_for_bit(n: int, k: int) -> None:
    """The kernel's SWAR high bytes, its prmt selectors and its bf16x2 scaling (emulated): every
    weight that is not escaped comes back with its own bits (zeros with their sign, tiny and
    huge weights of every group), escaped ones as +0, and the padded columns as +0."""
    w = _weights(n, k, seed=k)
    packed = w12.encode(w)
    got = w12_row.row_words(packed)
    assert got.shape == (n, w12.padded(k))
    assert (got[:, k:].view(torch.int16) == 0).all()
    got = got[:, :k].view(torch.int16)
    escaped = _escaped(packed, n, k)
    assert escaped.any() and (~escaped).any()
    assert torch.equal(got[~escaped], w.view(torch.int16)[~escaped])
    assert (got[escaped] == 0).all()


def test_geometry_and_bad_input() -> None:
    geo = w12_row.geometry(w12_row.TILE, 12288)
    assert geo["BN"] == 16 and geo["n_stages"] == 24 and geo["XB"] == 48 and geo["GROUPS"] == 128
    assert w12_row.geometry(w12_row.TILE | dict(SB=4), 600)["XB"] == 4  # 3 blocks, one stage
    # MMA 2 allocates what MMA 1 does: x's pairs and the row sums beside the FFMA tiles' buffers
    mma = [w12_row.geometry(w12_row.ROW_TILES[i], 14336)["shared"] for i in (12, 14)]
    no_mma = w12_row.geometry(w12_row.ROW_TILES[12] | dict(MMA=0), 14336)["shared"]
    assert mma[0] == mma[1] == no_mma + 56 * 256 * 2 + 2 * 4 * 32 * 4
    packed = w12.encode(_weights(64, 256))
    with pytest.raises(ValueError, match="unknown tile keys"):
        w12_row.w12_row_linear(torch.zeros(1, 256, dtype=torch.bfloat16), packed, dict(BLOCK=1))
    with pytest.raises(ValueError, match="wants x"):
        w12_row.w12_row_linear(torch.zeros(2, 256, dtype=torch.bfloat16), packed)


def test_the_plane_words_are_read_without_bank_conflicts() -> None:
    """Every tile's multiplying warps read a stage's plane words [BN rows, 32 positions] (and
    bf16_row its weight words) a row's 32 words across a warp's lanes: no bank conflicts from
    the unswizzled 128-byte rows TMA writes (Triton's count; kernels/w12_tc.py's fragment-owned
    reads of such rows had 7 excess passes)."""
    from triton.experimental.gluon import language as gl

    from specpilot.kernels import aot

    planes = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=2)
    for tile in w12_row.ROW_TILES:
        rows = tile["ROWS"] * tile["WARPS"]
        words = gl.BlockedLayout([tile["ROWS"], 1], [1, 32], [tile["WARPS"], 1], [1, 0])
        assert aot.bank_conflicts(words, planes, [rows, 32]) == 0, tile


def test_the_kernel_compiles_for_sm90_without_spills() -> None:
    """Gluon compiles it for sm_90a here (Triton's ptxas): no spills, one program an SM in
    shared memory; the default tile at K 4096 and 12288 (with the residual), SwiGLU, 4 rows a
    thread on 4 warps, one block a stage, and the bounds; with programmatic dependent launch's
    waits (the residual's and the copies bound's); the norm prologue with SwiGLU; X32 (x
    widened in shared memory) with the residual at K 12288 and with the norm and SwiGLU at
    Llama's 14336; traced (the kernel timeline's marks), W12 with the norm and bf16; the small
    multiplies' candidate tiles (ROW_TILES 3: 10 stages, W12 and bf16 with the norm; 4: 8-row
    tiles; 5: 15 stages, W12 with the norm); the early escapes (ESC_EARLY 1 and 2) with the
    norm and SwiGLU, and with the residual at K 12288; the escapes one at a time (ESC_BATCH 0)
    with the norm; ROW_TILES 6 (10 stages, 6 before PDL's wait), W12 and bf16 with the norm;
    ROW_TILES 7 and 8 (stages of 4 blocks), with the norm and with the residual at K 12288;
    BOUND 18 (the hand-off without the meta warp) with the norm; 4 meta slots (SLOTS) with the
    norm and SwiGLU, and a tile ahead (ESC_EARLY 2) with the residual at K 12288; ROW_TILES 9
    (7 with X32) with the norm and SwiGLU and with the residual at K 12288, 10 and 11 (32-row
    tiles, X32) with the norm and SwiGLU; 12 (MMA: mma.sync on 4 warps) with the norm and
    SwiGLU, and the residual with PDL and traced; 14 (MMA 2: the scale deferred) with the norm
    and SwiGLU. (At K 12288 MMA's tiles spill up to 24 bytes on 255 registers:
    test_mma_tiles_compile_at_the_down.)"""
    cases = [({}, 4096, False, False), ({}, 12288, False, True, True), ({}, 4096, True, False),
             (dict(ROWS=4, WARPS=4), 4096, False, False), (dict(SB=1, STAGES=12), 4096, False,
             False), (dict(BOUND=8), 4096, False, False, True), (dict(BOUND=2, FENCE=1), 12288,
             False, False), ({}, 4096, True, False, True, False, True),
             (dict(X32=1), 12288, False, True, True), (dict(X32=1), 14336, True, False, True,
             False, True), ({}, 4096, False, True, True, False, True, True),
             ({}, 4096, False, False, True, True, False, True),
             (dict(STAGES=10), 4096, False, False, True, False, True),
             (dict(STAGES=10), 4096, False, False, True, True, True), (dict(ROWS=1), 4096,
             False, True, True), (dict(STAGES=15), 4096, False, False, True, False,
             True), (dict(ESC_EARLY=1), 4096, True, False, True, False, True),
             (dict(ESC_EARLY=1), 12288, False, True, True),
             (dict(ESC_EARLY=2), 4096, True, False, True, False, True),
             (dict(ESC_EARLY=2), 12288, False, True, True),
             (dict(ESC_BATCH=0), 4096, False, False, True, False, True),
             (w12_row.ROW_TILES[6], 4096, False, False, True, False, True),
             (w12_row.ROW_TILES[6], 4096, False, False, True, True, True),
             (w12_row.ROW_TILES[7], 4096, False, False, True, False, True),
             (w12_row.ROW_TILES[8], 12288, False, True, True),
             (dict(BOUND=18), 4096, False, False, True, False, True),
             (dict(SLOTS=4), 4096, True, False, True, False, True),
             (dict(SLOTS=4, ESC_EARLY=2), 12288, False, True, True),
             (w12_row.ROW_TILES[9], 4096, True, False, True, False, True),
             (w12_row.ROW_TILES[9], 12288, False, True, True),
             (w12_row.ROW_TILES[10], 4096, True, False, True, False, True),
             (w12_row.ROW_TILES[11], 4096, True, False, True, False, True),
             (w12_row.ROW_TILES[12], 4096, True, False, True, False, True),
             (w12_row.ROW_TILES[12], 4096, False, True, True, False, False, True),
             (w12_row.ROW_TILES[14], 4096, True, False, True, False, True)]  # fmt: skip
    code = "import json; from specpilot.kernels import aot, w12_row; "
    code += f"print(json.dumps([aot.usage(w12_row.compile_sm90(*c)) for c in {cases!r}]))"
    usages = compiled_json(code)
    for usage in usages:
        assert usage["spill_stores"] == 0 and usage["spill_loads"] == 0
        assert usage["shared"] <= 227 * 1024
    assert usages[0]["warps"] == 12  # 8 multiplying, the meta warp and the loader (padded to 12)
    assert usages[3]["warps"] == 8


# (where, N, K, tile, PDL): on a Hopper GPU Qwen3-8B's shapes (PDL as the settings say), on the
# emulator (kernels/emulate.py, 3 SMs) the same tiles at sizes it runs in a second, with and
# without PDL's branches
EMULATED_CASES = [(48, 600, {}), (70, 2304, {}), (64, 2304, dict(ROWS=4, WARPS=4)),
                  (70, 2304, dict(SB=1, STAGES=12)), (70, 2304, dict(SB=4, STAGES=3)),
                  (70, 2304, dict(FENCE=1, ESC_BATCH=0)), (70, 2304, dict(PERSISTENT=2)),
                  (90, 1152, dict(ROWS=1)), (70, 2304, dict(X32=1)),
                  (48, 600, w12_row.ROW_TILES[12]), (70, 2304, w12_row.ROW_TILES[13]),
                  (48, 600, w12_row.ROW_TILES[14]), (70, 2304, w12_row.ROW_TILES[15])]  # fmt: skip
CASES = [("cuda", n, k, tile, False) for n, k, tile in [
    (4096, 4096, {}), (6144, 4096, {}), (4096, 12288, {}), (4100, 1152, {}), (333, 600, {}),
    (4096, 4096, dict(ROWS=4, WARPS=4)), (2000, 2304, dict(SB=1, STAGES=12)),
    (2000, 2304, dict(SB=4, STAGES=3)), (2000, 2304, dict(FENCE=1, ESC_BATCH=0)),
    (2000, 2304, dict(PERSISTENT=2)), (9000, 2304, dict(ROWS=1)), (4096, 12288, dict(X32=1)),
    (4096, 12288, w12_row.ROW_TILES[1]), (4096, 4096, w12_row.ROW_TILES[1]),
    (6144, 4096, dict(MAXNREG=80)), (4096, 12288, dict(MAXNREG=80)),
    (6144, 4096, w12_row.ROW_TILES[12]), (4096, 12288, w12_row.ROW_TILES[13]),
    (4100, 1152, w12_row.ROW_TILES[12]), (6144, 4096, w12_row.ROW_TILES[14]),
    (4096, 12288, w12_row.ROW_TILES[15]), (4100, 1152, w12_row.ROW_TILES[14])]] + [
    ("emulated", n, k, tile, pdl) for n, k, tile in EMULATED_CASES for pdl in (False, True)
]  # fmt: skip
BOTH = ["cuda", "emulated"]


def emulated_case(n: int, k: int):
    """An emulated case whose test also runs a Triton kernel on CPU tensors (rmsnorm): the
    interpreter's, so not where a GPU is (run 295: "cannot be accessed from Triton"); as
    test_kernels.GLUON_WHERE's emulated case."""
    return pytest.param("emulated", n, k, marks=pytest.mark.skipif(CUDA, reason="a GPU"))


def test_maxnreg_fits_two_programs_an_sm(monkeypatch) -> None:
    """MAXNREG 80 (sm_90a, Triton's ptxas): two programs an SM by registers, and two different
    multiplies' programs fit its shared memory together (the down's at K 12288 beside q|k|v's
    or gate|up's with the norm at 4096); no spills at K 4096 (q|k|v and gate|up with the norm,
    o with the residual), at most 16 bytes at 12288. Without it (-1, the switch's 0), ptxas's
    168 registers take the SM. The switch fills the tile's -1 (W12's MAXNREG, bf16's
    BF16_MAXNREG); a bad value is refused."""
    cases = [(dict(MAXNREG=80), 4096, False, False, True, False, True),
             (dict(MAXNREG=80), 4096, True, False, True, False, True),
             (dict(MAXNREG=80), 4096, False, True, True), (dict(MAXNREG=80), 12288, False, True,
             True), ({}, 4096, False, False, True, False, True)]  # fmt: skip
    code = "import json; from specpilot.kernels import aot, w12_row; "
    code += f"print(json.dumps([aot.usage(w12_row.compile_sm90(*c)) for c in {cases!r}]))"
    qkv, gate_up, o, down, plain = compiled_json(code)
    for usage in (qkv, gate_up, o, down):
        assert usage["registers"] <= 80 and usage["programs_per_sm"] == 2
    assert down["shared"] + max(qkv["shared"], gate_up["shared"]) + 2048 <= 228 * 1024
    assert all(u["spill_stores"] == 0 for u in (qkv, gate_up, o)) and down["spill_stores"] <= 16
    assert plain["registers"] > 128 and plain["programs_per_sm"] == 1
    geo = w12_row.geometry(w12_row.TILE, 4096, False)
    assert "maxnreg" not in w12_row.kernel_constants(w12_row.TILE, geo)
    monkeypatch.setattr(w12_row, "MAXNREG", 80)
    assert w12_row.kernel_constants(w12_row.TILE, geo)["maxnreg"] == 80
    assert "maxnreg" not in w12_row.kernel_constants(w12_row.TILE, geo, bf16=True)
    assert "maxnreg" not in w12_row.kernel_constants(w12_row.TILE | dict(MAXNREG=0), geo)
    with pytest.raises(ValueError, match="MAXNREG"):
        w12_row.kernel_constants(w12_row.TILE | dict(MAXNREG=84), geo)


@pytest.mark.parametrize(
    "where", ["cuda", pytest.param("emulated", marks=pytest.mark.skipif(CUDA, reason="a GPU"))]
)
def test_maxnreg_gives_the_same_bits(monkeypatch, where: str) -> None:
    """The switch MAXNREG 80 through w12_row_linear's launch (Triton's maxnreg): the same
    outputs, bit for bit, as ptxas's own register count (the sums' order is the kernel's, not
    the register allocator's), q|k|v's shape with the norm and the down's with the residual."""
    with gluon_on(where) as device:
        outs = {}
        for most in (0, 80):
            monkeypatch.setattr(w12_row, "MAXNREG", most)
            for n, k in ((6144, 4096), (4096, 12288)) if where == "cuda" else ((64, 512),):
                packed = w12.encode(_weights(n, k, seed=k).to(device))
                x = torch.randn(1, k, generator=torch.Generator().manual_seed(n)).to(device)
                x = x.to(torch.bfloat16)
                g = torch.ones(k, device=device, dtype=torch.bfloat16)
                res = torch.zeros(1, n, device=device, dtype=torch.bfloat16)
                outs[most, n] = (w12_row.w12_row_linear(x, packed, norm_weight=g),
                                 w12_row.w12_row_linear(x, packed, residual=res))  # fmt: skip
    for (_, n), pair in outs.items():
        assert all(torch.equal(a, b) for a, b in zip(pair, outs[0, n], strict=True))


@pytest.mark.parametrize("where, n, k, tile, pdl", CASES)
def test_w12_row_matches_the_reference(where: str, n: int, k: int, tile: dict, pdl: bool) -> None:
    """N not a multiple of the tile, K not a multiple of 256 (x padded), the tiles' keys; more
    tiles than programs (the rings and slots run on across tiles). Row 4 of the weights has
    more escapes than the batch of 4."""
    with gluon_on(where, pdl) as device:
        w = _weights(n, k, seed=n + k)
        packed = w12.encode(w.to(device))
        x = torch.randn(1, k).to(device, torch.bfloat16)
        ref = w12_linear_reference(x, packed).float()
        floor = order_floor(x, w)  # run 295: outputs that cancel to ~1e-6 moved by the order
        close_columns(w12_row.w12_row_linear(x, packed, tile).float(), ref, 4, floor)


@pytest.mark.parametrize("where, n, k", [("cuda", 4096, 12288), ("emulated", 70, 1152)])
@pytest.mark.parametrize("kw", [{}, dict(swiglu=True), dict(norm=True), dict(residual=True)])
def test_w12_row_x32_gives_the_same_bits(where: str, n: int, k: int, kw: dict) -> None:
    """X32 (x widened to fp32 in shared memory once) multiplies the same exact values in the
    same order: its output is the plain tile's bit for bit, with each epilogue and the norm
    prologue."""
    gen = torch.Generator().manual_seed(n)
    with gluon_on(where) as device:
        packed = w12.encode(_weights(n, k, seed=n).to(device))
        x = (3 * torch.randn(1, k, generator=gen)).to(device, torch.bfloat16)
        args = dict(swiglu=kw.get("swiglu", False))
        if kw.get("norm"):
            args |= dict(norm_weight=(torch.rand(k, generator=gen) + 0.5).to(device,
                         torch.bfloat16), eps=1e-6)  # fmt: skip
        if kw.get("residual"):
            args["residual"] = torch.randn(1, n, generator=gen).to(device, torch.bfloat16)
        plain = w12_row.w12_row_linear(x, packed, **args)
        wide = w12_row.w12_row_linear(x, packed, dict(X32=1), **args)
        assert torch.equal(wide.view(torch.int16), plain.view(torch.int16))


@pytest.mark.parametrize("where", BOTH)
@pytest.mark.parametrize("tile", [{}, dict(ROWS=1)])
def test_w12_row_swiglu(where: str, tile: dict) -> None:
    """silu(gate) * up of the [gate | up] weight (w12_linear's contract): a tile's gates and
    their ups half N further on (N / 2 off the tile)."""
    half = 1000 if where == "cuda" else 100
    with gluon_on(where) as device:
        packed = w12.encode(_weights(2 * half, 1152, seed=11).to(device))
        x = torch.randn(1, 1152).to(device, torch.bfloat16)
        ref = w12_linear_reference(x, packed, swiglu=True).float()
        y = w12_row.w12_row_linear(x, packed, tile, swiglu=True)
        assert y.shape == (1, half)
        close_columns(y.float(), ref, 4)


@pytest.mark.parametrize("where", BOTH)
def test_w12_row_residual(where: str) -> None:
    """residual + x @ W.T: the residual added to the rounded product and rounded again, exact
    given the product."""
    with gluon_on(where) as device:
        packed = w12.encode(_weights(320, 2304, seed=5).to(device))
        x = torch.randn(1, 2304).to(device, torch.bfloat16)
        r = torch.randn(1, 320).to(device, torch.bfloat16)
        plain = w12_row.w12_row_linear(x, packed)
        close_columns(plain.float(), w12_linear_reference(x, packed).float(), 4)
        y = w12_row.w12_row_linear(x, packed, residual=r)
        assert torch.equal(y, (plain.float() + r.float()).to(torch.bfloat16))


@pytest.mark.parametrize("where", BOTH)
def test_row_kernels_mark_the_kernel_timeline(where: str) -> None:
    """Under kernels/trace.tracing both kernels write their launch's row (`w12_ws._trace_mark`,
    from the multiplying warps): every program's entry, PDL pass and exit, in that order (the
    emulator: ticks of a counter), one launch after the other; outputs bit for bit as untraced;
    the launch's record says what it read. Tracing's atomics compile on sm_90
    (test_the_kernel_compiles_for_sm90_without_spills)."""
    with gluon_on(where) as device:
        packed = w12.encode(_weights(200, 1152, seed=3).to(device))
        dense = (torch.randn(96, 512) * 512**-0.5).to(device, torch.bfloat16)
        x, xb = torch.randn(1, 1152).to(device, torch.bfloat16), torch.randn(1, 512).to(device)
        xb = xb.to(torch.bfloat16)
        rows = traced_rows(
            device, lambda: (w12_row.w12_row_linear(x, packed), w12_row.bf16_row_linear(xb, dense))
        )
    assert [r["kernel"] for r in rows] == ["w12_row", "bf16_row"]
    assert (rows[0]["n"], rows[0]["k"], rows[0]["bytes"]) == (200, 1152, packed.nbytes_bound())
    assert (rows[1]["n"], rows[1]["k"], rows[1]["bytes"]) == (96, 512, dense.nbytes)


@pytest.mark.parametrize("where", BOTH)
def test_w12_row_takes_an_unaligned_input_view(where: str) -> None:
    """x a view 2 bytes into a larger buffer (TMA reads 16-byte aligned rows: the launcher copies
    it), the same products as from an aligned copy."""
    with gluon_on(where) as device:
        packed = w12.encode(_weights(128, 1024, seed=2).to(device))
        big = torch.randn(1, 1025).to(device, torch.bfloat16)
        x = big[:, 1:]
        assert x.data_ptr() % 16
        y = w12_row.w12_row_linear(x, packed)
        assert torch.equal(y, w12_row.w12_row_linear(x.clone(), packed))


@pytest.mark.skipif(CUDA, reason="its tensors are the CPU's (run 295)")
def test_one_row_route_needs_the_switch_one_row_and_hopper(monkeypatch) -> None:
    """The engine's linear takes the kernel only with ONE_ROW on, for one row of group size 128
    on a Hopper GPU: here (CPU, interpreted) never, so its one-row products are unchanged."""
    from specpilot.formats.w12_engine import linear

    packed = w12.encode(_weights(64, 256))
    x = torch.randn(1, 256).to(torch.bfloat16)
    monkeypatch.setattr(w12_row, "ONE_ROW", True)
    assert not w12_row.one_row_route(x, packed)  # not on a GPU
    close_columns(linear(x, packed).float(), w12_linear_reference(x, packed).float(), 2)
    monkeypatch.setattr(w12_row, "ONE_ROW", False)
    assert not w12_row.one_row_route(x, packed)
    with pytest.raises(ValueError, match="group size"):
        w12_row.w12_row_linear(x, w12.encode(_weights(64, 256), 32))


def test_prologue_rows_take_the_norm_with_one_row(monkeypatch) -> None:
    """models/fused.prologue_rows: with ONE_ROW a one-row W12 multiply (group size 128) takes
    the norm prologue (no rmsnorm launch before it), never the SwiGLU one; off, neither; on
    (the default) only where the kernel runs (a Hopper GPU, here the CPU's emulator)."""
    from specpilot.kernels import launch
    from specpilot.models.fused import prologue_rows

    packed, other = w12.encode(_weights(64, 256)), w12.encode(_weights(64, 256), 32)
    assert w12_row.ONE_ROW == 1 and prologue_rows(packed, "norm") == 0  # CPU tensors, no emulator
    monkeypatch.setattr(launch, "GLUON_EMULATED", True)
    monkeypatch.setattr(w12_row, "ONE_ROW", False)
    assert prologue_rows(packed, "norm") == 0
    monkeypatch.setattr(w12_row, "ONE_ROW", True)
    assert prologue_rows(packed, "norm") == 1 and prologue_rows(packed, "glu") == 0
    assert prologue_rows(other, "norm") == 0
    monkeypatch.setattr(w12_row, "ONE_ROW", 2)  # the residual multiplies only: no norm prologue
    assert prologue_rows(packed, "norm") == 0


@pytest.mark.parametrize("where, n, k", [("cuda", 1000, 1024), ("cuda", 1000, 12288),
                                         ("cuda", 1000, 600), emulated_case(100, 600),
                                         emulated_case(64, 1152)])  # fmt: skip
def test_w12_row_norm_prologue(where: str, n: int, k: int) -> None:
    """norm_weight: the input RMSNorm(x) * w normed in shared memory (the escapes' inputs too),
    the same products as the rmsnorm kernel's output multiplied (to summation order: 1 / RMS
    is summed in another order), with SwiGLU too; K off the blocks (x and w padded)."""
    from specpilot.kernels.elementwise import rmsnorm

    gen = torch.Generator().manual_seed(k)
    with gluon_on(where) as device:
        packed = w12.encode(_weights(n, k, seed=k).to(device))
        x = (3 * torch.randn(1, k, generator=gen)).to(device, torch.bfloat16)
        nw = (torch.rand(k, generator=gen) + 0.5).to(device, torch.bfloat16)
        for kw in ({}, dict(swiglu=True)):
            y = w12_row.w12_row_linear(x, packed, norm_weight=nw, eps=1e-6, **kw)
            expected = w12_row.w12_row_linear(rmsnorm(x, nw, 1e-6), packed, **kw)
            close_columns(y.float(), expected.float(), 4)
            ref = w12_linear_reference(x, packed, norm_weight=nw, eps=1e-6, **kw)
            close_columns(y.float(), ref.float(), 4)


def test_mma_tiles_compile_at_the_down() -> None:
    """MMA's tiles (ROW_TILES 12-15) at the down's K 12288 with the residual and PDL compile for
    sm_90a with at most 32 bytes spilled (24 so far: the 16 mmas of a stage and their operands
    take the multiplying warps' 255 registers) and one program an SM."""
    cases = [(w12_row.ROW_TILES[i], 12288, False, True, True) for i in (12, 13, 14, 15)]
    code = "import json; from specpilot.kernels import aot, w12_row; "
    code += f"print(json.dumps([aot.usage(w12_row.compile_sm90(*c)) for c in {cases!r}]))"
    for usage in compiled_json(code):
        assert usage["spill_stores"] <= 32 and usage["shared"] <= 227 * 1024
        assert usage["programs_per_sm"] == 1


@pytest.mark.parametrize("where, n, k", [("cuda", 24576, 4096), ("cuda", 4096, 12288),
                                         emulated_case(96, 1152)])  # fmt: skip
def test_mma_tiles_take_every_epilogue(where: str, n: int, k: int) -> None:
    """MMA (ROW_TILES 12-15: the multiplying warps on mma.sync, a block a warp; 14, 15 with
    the scale deferred to each half block's sum): normed with SwiGLU, and plain with the
    residual, as the FFMA tiles give them to summation order (the tensor cores' fp32 sums round
    otherwise: run 342 on an H100 moved one output that cancels to ~1e-5 by 9.5e-6, inside
    order_floor); tiles it cannot run refused."""
    gen = torch.Generator().manual_seed(k + 1)
    w = _weights(n, k, seed=k)
    x = (3 * torch.randn(1, k, generator=gen)).to(torch.bfloat16)
    nw = (torch.rand(k, generator=gen) + 0.5).to(torch.bfloat16)
    r = torch.randn(1, n, generator=gen).to(torch.bfloat16)
    floors = order_floor(rmsnorm_reference(x, nw, 1e-6), w, swiglu=True), order_floor(x, w)
    with gluon_on(where) as device:
        packed = w12.encode(w.to(device))
        x, nw, r = x.to(device), nw.to(device), r.to(device)
        floors = [f.to(device) for f in floors]
        for tile in w12_row.ROW_TILES[12:16]:
            glu = w12_row.w12_row_linear(x, packed, tile, norm_weight=nw, swiglu=True)
            ref = w12_linear_reference(x, packed, norm_weight=nw, eps=1e-6, swiglu=True)
            close_columns(glu.float(), ref.float(), 4, floors[0])
            y = w12_row.w12_row_linear(x, packed, tile, residual=r)
            plain = w12_row.w12_row_linear(x, packed, tile)
            assert torch.equal(y, (plain.float() + r.float()).to(torch.bfloat16))
            close_columns(plain.float(), w12_linear_reference(x, packed).float(), 4, floors[1])
        for bad in (dict(STAGES=3), dict(X32=1), dict(WARPS=8, ROWS=2), dict(MMA=3)):
            with pytest.raises(ValueError, match="MMA"):
                w12_row.w12_row_linear(x, packed, w12_row.ROW_TILES[12] | bad)


@pytest.mark.parametrize("where", BOTH)
def test_the_norm_bound_multiplies_x_as_it_is(where: str, monkeypatch) -> None:
    """BOUND 4 (NORM_BOUND: a bound for the decode graph's timeline): a launch with a norm
    weight leaves the prologue out, its products those of x unnormed, bit for bit as a launch
    without the norm (W12 with X32 or not, its escapes too; bf16_row_linear); BOUND 4 without a
    norm weight, or a BOUND of other bits, is refused."""
    k = 1152
    gen = torch.Generator().manual_seed(k)
    with gluon_on(where) as device:
        w = _weights(64, k, seed=3).to(device)
        packed = w12.encode(w)
        x = (3 * torch.randn(1, k, generator=gen)).to(device, torch.bfloat16)
        nw = (torch.rand(k, generator=gen) + 0.5).to(device, torch.bfloat16)
        for tile in ({}, dict(X32=1)):
            plain = w12_row.w12_row_linear(x, packed, tile)
            bound = w12_row.w12_row_linear(x, packed, tile | dict(BOUND=4), norm_weight=nw)
            assert torch.equal(bound, plain)
        normed = w12_row.w12_row_linear(x, packed, norm_weight=nw)
        assert not torch.equal(normed, plain)
        monkeypatch.setattr(w12_row, "NORM_BOUND", 1)
        assert torch.equal(w12_row.w12_row_linear(x, packed, norm_weight=nw), plain)
        wb = w.to(torch.bfloat16)
        assert torch.equal(w12_row.bf16_row_linear(x, wb, norm_weight=nw),
                           w12_row.bf16_row_linear(x, wb))  # fmt: skip
        monkeypatch.setattr(w12_row, "NORM_BOUND", 0)
        for bad in (dict(BOUND=4), dict(BOUND=1)):
            with pytest.raises(ValueError, match="BOUND is a sum"):
                w12_row.w12_row_linear(x, packed, bad)


@pytest.mark.parametrize("where, pdl", [("cuda", False), ("emulated", False), ("emulated", True)])
def test_the_norm_weight_copied_first_gives_the_same_bits(where: str, pdl: bool,
                                                          monkeypatch) -> None:  # fmt: skip
    """NORM_WEIGHT_EARLY: the prologue's norm weight copied before the ring's first stages and
    PDL's wait (x's barrier expecting both copies' bytes at once): the same bits as copied beside
    x, W12 (K 1,152 and a ring fuller than the program's stages; SwiGLU) and bf16, with and
    without PDL's branches."""
    gen = torch.Generator().manual_seed(7)
    with gluon_on(where, pdl=pdl) as device:
        for k in (1152, 4096):
            w, packed, x, nw = _row_inputs(64, k, device, gen)
            runs = []
            for early in (0, 1):
                monkeypatch.setattr(w12_row, "NORM_WEIGHT_EARLY", early)
                plain = w12_row.w12_row_linear(x, packed, norm_weight=nw)
                glu = w12_row.w12_row_linear(x, packed, norm_weight=nw, swiglu=True)
                bf16 = w12_row.bf16_row_linear(x, w.to(torch.bfloat16), norm_weight=nw)
                runs.append((plain, glu, bf16))
            for before, after in zip(*runs, strict=True):
                assert torch.equal(after, before)


@pytest.mark.parametrize("where, pdl", [("cuda", False), ("emulated", False), ("emulated", True)])
def test_early_escapes_give_the_same_bits(where: str, pdl: bool, monkeypatch) -> None:
    """EARLY_ESCAPES (tile key ESC_EARLY): the meta warp's escape lists asked for beside the
    scale words' bases and their first entries before PDL's wait (1), and a tile ahead (2:
    `_meta_ahead`; persistent programs over several tiles, and over one): the same bits as
    without, W12 plain, normed with SwiGLU and with the residual, on weights with escapes in
    many rows (16 rows of six large ones: every entry, the four at once and `_escape_entry`'s
    later ones in turn, moves the sums), with and without PDL's branches; the tile key
    overrides the switch."""
    gen = torch.Generator().manual_seed(13)
    with gluon_on(where, pdl=pdl) as device:
        w = _weights(96, 1152, seed=3)
        for r in range(16, 32):  # six outliers of like size a row: every entry counts
            cols = torch.randperm(1152, generator=gen)[:6]
            w[r, cols] = (2.0**14 * (1 + torch.arange(6) / 8)).to(w.dtype) * (-1) ** r
        w = w.to(device)
        packed = w12.encode(w)
        per_row = packed.row_ptr.diff().cpu()
        assert bool((per_row[16:32] >= 6).all())
        few = w12.encode(w[:48])  # 3 tiles: on the emulator's 3 SMs, one a program
        x = (3 * torch.randn(1, 1152, generator=gen)).to(device, torch.bfloat16)
        nw = (torch.rand(1152, generator=gen) + 0.5).to(device, torch.bfloat16)
        res = torch.randn(1, 96, generator=gen).to(device, torch.bfloat16)
        runs = []
        for early in (0, 1, 2):
            monkeypatch.setattr(w12_row, "EARLY_ESCAPES", early)
            other = dict(ESC_EARLY=(early + 1) % 3)  # the tile key over the switch
            runs.append((w12_row.w12_row_linear(x, packed),
                         w12_row.w12_row_linear(x, packed, norm_weight=nw, swiglu=True),
                         w12_row.w12_row_linear(x, packed, residual=res),
                         w12_row.w12_row_linear(x, packed, other),
                         w12_row.w12_row_linear(x, few)))  # fmt: skip
        for later in runs[1:]:
            for before, after in zip(runs[0], later, strict=True):
                assert torch.equal(after, before)
        ref = w12_linear_reference(x, packed)
        assert (runs[1][0].float() - ref.float()).abs().max() <= 2**-6 * ref.float().abs().max()


@pytest.mark.parametrize("where, pdl", [("cuda", False), ("emulated", False), ("emulated", True)])
def test_more_meta_slots_give_the_same_bits(where: str, pdl: bool, monkeypatch) -> None:
    """META_SLOTS (tile key SLOTS): 4 slots of scale words and escape sums, the meta warp up to 3
    tiles ahead: the same bits as 2, with ESC_EARLY 0, 1 and 2, plain, normed with SwiGLU and
    with the residual, where each program takes more tiles than twice the slots (30 tiles on
    the emulator's 3 SMs: every slot's phase turns over) and escapes sit in every tile; the tile
    key overrides the switch; 1, 3 and 5 slots are refused."""
    gen = torch.Generator().manual_seed(19)
    with gluon_on(where, pdl=pdl) as device:
        w = _weights(480, 600, seed=5)
        for r in range(0, 480, 3):  # outliers in every tile, up to six in a row
            cols = torch.randperm(600, generator=gen)[: 1 + r % 6]
            w[r, cols] = (2.0**14 * (1 + torch.arange(len(cols)) / 8)).to(w.dtype) * (-1) ** r
        packed = w12.encode(w.to(device))
        assert bool((packed.row_ptr.view(-1)[::16].diff().cpu() >= 6).all())
        x = (3 * torch.randn(1, 600, generator=gen)).to(device, torch.bfloat16)
        nw = (torch.rand(600, generator=gen) + 0.5).to(device, torch.bfloat16)
        res = torch.randn(1, 480, generator=gen).to(device, torch.bfloat16)
        runs = []
        for slots in (2, 4):
            monkeypatch.setattr(w12_row, "META_SLOTS", slots)
            for early in (0, 1, 2):
                tile = dict(ESC_EARLY=early)
                runs.append((w12_row.w12_row_linear(x, packed, tile),
                             w12_row.w12_row_linear(x, packed, tile, norm_weight=nw, swiglu=True),
                             w12_row.w12_row_linear(x, packed, tile, residual=res)))  # fmt: skip
        monkeypatch.setattr(w12_row, "META_SLOTS", 2)
        runs.append((w12_row.w12_row_linear(x, packed, dict(SLOTS=4)),) + runs[0][1:])
        for later in runs[1:]:
            for before, after in zip(runs[0], later, strict=True):
                assert torch.equal(after, before)
        ref = w12_linear_reference(x, packed)
        assert (runs[0][0].float() - ref.float()).abs().max() <= 2**-6 * ref.float().abs().max()
        for slots in (1, 3, 5):
            with pytest.raises(ValueError, match="SLOTS"):
                w12_row.w12_row_linear(x, packed, dict(SLOTS=slots))


@pytest.mark.parametrize("where, pdl", [("cuda", False), ("emulated", False), ("emulated", True)])
def test_fewer_stages_before_the_wait_give_the_same_bits(where: str, pdl: bool) -> None:
    """PRE (tile key): the loader asks for PRE stages before PDL's wait and the rest of the
    ring after it: the same bits as every stage before it (PRE 0), W12 and bf16, normed with
    SwiGLU and plain, on a ring deeper than a tile's stages (K 4096: 8 stages, 10 in the ring)
    and on one a program fills before PRE (K 600: 2 stages); ROW_TILES 6 is such a tile; PRE
    past STAGES is refused."""
    gen = torch.Generator().manual_seed(17)
    with gluon_on(where, pdl=pdl) as device:
        for k in (4096, 600):
            w, packed, x, nw = _row_inputs(80, k, device, gen)
            runs = []
            for tile in (dict(STAGES=10), dict(STAGES=10, PRE=6), dict(STAGES=10, PRE=3)):
                runs.append((w12_row.w12_row_linear(x, packed, tile),
                             w12_row.w12_row_linear(x, packed, tile, norm_weight=nw, swiglu=True),
                             w12_row.bf16_row_linear(x, w, tile, norm_weight=nw)))  # fmt: skip
            for later in runs[1:]:
                for before, after in zip(runs[0], later, strict=True):
                    assert torch.equal(after, before)
        assert w12_row.ROW_TILES[6]["PRE"] == 6 < w12_row.ROW_TILES[6]["STAGES"]
        with pytest.raises(ValueError, match="PRE is 0"):
            w12_row.w12_row_linear(x, packed, dict(STAGES=4, PRE=5))


@pytest.mark.parametrize("bound", [2, 8, 18])
def test_the_row_bound_leaves_the_products_out(bound: int, monkeypatch) -> None:
    """ROW_BOUND (a bound for the decode graph's timeline): every launch of either kernel runs
    its ring with BOUND 2 (the hand-off alone), 8 (the copies alone) or 18 (2 without W12's meta
    warp) and ends (emulated, W12 plain and with the norm and SwiGLU, bf16 with the residual),
    its products left out: W12's outputs are the escapes' sums alone (its escape table emptied:
    zeros; with escapes, 2's outputs are their sums and 18's zeros; with NORM_BOUND's prologue
    left out too, zeros), bf16's the residual as it came. Values other than 0, 2, 8 and 18 are
    refused where switches are parsed, BOUND 16 without 2 or 8 where the kernel is launched."""
    from specpilot import switches

    gen = torch.Generator().manual_seed(5)
    w = (0.02 * torch.randn(64, 1152, generator=gen)).to(torch.bfloat16)
    packed = w12.encode(w).without_escapes()  # (their escaped weights then decode to 0)
    x = torch.randn(1, 1152, generator=gen).to(torch.bfloat16)
    nw = (torch.rand(1152, generator=gen) + 0.5).to(torch.bfloat16)
    res = torch.randn(1, 64, generator=gen).to(torch.bfloat16)
    with gluon_on("emulated"):
        assert w12_row.w12_row_linear(x, packed).abs().max() > 0.1
        monkeypatch.setattr(w12_row, "ROW_BOUND", bound)
        assert not w12_row.w12_row_linear(x, packed).any()
        assert not w12_row.w12_row_linear(x, packed, norm_weight=nw, swiglu=True).any()
        assert torch.equal(w12_row.bf16_row_linear(x, w, residual=res), res)
        outlier = w.clone()
        outlier[3, 7] = 2.0**14  # an escape: row 3's sum is x[7] times it
        escaped = w12.encode(outlier)
        y = w12_row.w12_row_linear(x, escaped)
        if bound == 18:
            assert not y.any()
        else:  # (the random weights' own few escapes too: their rows alone are not zero)
            assert y[0, 3].float() == (x[0, 7].float() * 2.0**14).to(torch.bfloat16).float() != 0
            assert not y[0, escaped.row_ptr.diff() == 0].any()
        monkeypatch.setattr(w12_row, "NORM_BOUND", 1)  # and without the norm prologue
        assert not w12_row.w12_row_linear(x, packed, norm_weight=nw, swiglu=True).any()
        monkeypatch.setattr(w12_row, "ROW_BOUND", 0)
        with pytest.raises(ValueError, match="16 \\(with 2 or 8\\)"):
            w12_row.w12_row_linear(x, packed, dict(BOUND=16))
    with pytest.raises(Exception, match="0, 2, 8 or 18"):
        switches.parse("kernels.w12_row.ROW_BOUND=4")


def test_even_programs_keep_the_waves_and_the_bits(monkeypatch) -> None:
    """EVEN_PROGRAMS: the fewest programs that keep the waves (Qwen3-8B's one-row gate|up, 1,536
    tiles, on 128 of 132 SMs; q|k|v's 384 and o's 256 too; 4 tiles on 3 SMs: 2), none more
    than off; and the kernel's bits on those programs (4 tiles and 5 on the emulator's 3 SMs,
    W12 with SwiGLU and bf16 with the residual) are the bits on all of them."""
    monkeypatch.setattr(w12_row, "EVEN_PROGRAMS", 1)
    got = [w12_row.even_programs(u, 132) for u in (1536, 384, 256, 132, 40)]
    assert got == [128, 128, 128, 132, 40]
    assert [w12_row.even_programs(u, 3) for u in (4, 5, 7, 9)] == [2, 3, 3, 3]
    monkeypatch.setattr(w12_row, "EVEN_PROGRAMS", 0)
    assert [w12_row.even_programs(u, 132) for u in (1536, 40)] == [132, 40]
    gen = torch.Generator().manual_seed(11)
    with gluon_on("emulated") as device:
        for n in (64, 80):
            w = _weights(n, 512, seed=n).to(device)
            packed = w12.encode(w)
            x = (3 * torch.randn(1, 512, generator=gen)).to(device, torch.bfloat16)
            res = torch.randn(1, n, generator=gen).to(device, torch.bfloat16)
            runs = []
            for even in (0, 1):
                monkeypatch.setattr(w12_row, "EVEN_PROGRAMS", even)
                glu = w12_row.w12_row_linear(x, packed, swiglu=True)
                bf16 = w12_row.bf16_row_linear(x, w.to(torch.bfloat16), residual=res)
                runs.append((glu, bf16))
            for before, after in zip(*runs, strict=True):
                assert torch.equal(after, before)


def test_small_multiplies_take_their_own_tile(monkeypatch) -> None:
    """ONE_ROW_SMALL_TILE / BF16_ONE_ROW_SMALL_TILE: q|k|v's and o's N x K (at most
    SMALL_WEIGHTS) on that tile, gate|up's and down's on the main one; -1 leaves every shape on
    the main tile; a small tile whose shared memory a long K overfills falls back; and `routed`
    hands the chosen tile to the launchers (emulated routes, the launchers counted), with
    ONE_ROW_NORMED_SMALL_TILE's and ONE_ROW_SWIGLU_TILE's (W12 gate|up) where they are set."""
    rt = w12_row.row_tile
    for n, k in [(6144, 4096), (4096, 4096), (1024, 1536)]:
        assert rt(n, k, 0, 3, False, True) == w12_row.ROW_TILES[3]
        assert rt(n, k, 2, -1, True, False) == w12_row.ROW_TILES[2]
    for n, k in [(24576, 4096), (4096, 12288), (28672, 4096)]:
        assert rt(n, k, 0, 3, False, True) == w12_row.ROW_TILES[0]
    assert rt(1024, 24576, 0, 3, True, True) == w12_row.ROW_TILES[0]  # 10 stages too big there
    assert rt(1024, 24576, 0, 4, True, True) == w12_row.ROW_TILES[4]
    assert rt(6144, 4096, 0, 5, False, True) == w12_row.ROW_TILES[5]  # 15 stages fit W12
    assert rt(6144, 4096, 0, 5, True, True) == w12_row.ROW_TILES[0]  # but not bf16's ring
    got = []
    for name in ("w12_row_linear", "bf16_row_linear"):
        monkeypatch.setattr(w12_row, name, lambda x, w, tile, **kw: got.append(tile))
    monkeypatch.setattr(w12_row, "ONE_ROW_SMALL_TILE", 3)
    monkeypatch.setattr(w12_row, "BF16_ONE_ROW_SMALL_TILE", 4)
    kw = dict(glu=False, swiglu=False, residual=None, norm_weight=None, eps=1e-6)
    with gluon_on("emulated"):
        x = torch.zeros(1, 256, dtype=torch.bfloat16)
        w = torch.zeros(64, 256, dtype=torch.bfloat16)
        w12_row.routed(x, w12.encode(w), kw, {})
        w12_row.routed(x, w, kw, {})
        # ONE_ROW_NORMED_SMALL_TILE: the small W12 multiplies with the norm prologue (q|k|v)
        # on theirs, the others (o) on ONE_ROW_SMALL_TILE's; bf16's stays on its own
        monkeypatch.setattr(w12_row, "ONE_ROW_NORMED_SMALL_TILE", 7)
        normed = kw | dict(norm_weight=torch.ones(256, dtype=torch.bfloat16))
        w12_row.routed(x, w12.encode(w), normed, {})
        w12_row.routed(x, w12.encode(w), kw, {})
        w12_row.routed(x, w, normed, {})
        monkeypatch.setattr(w12_row, "SMALL_WEIGHTS", 64 * 256 - 1)
        w12_row.routed(x, w12.encode(w), normed, {})
        # ONE_ROW_SWIGLU_TILE: the W12 multiplies with the SwiGLU epilogue (gate|up) on theirs,
        # the rest and bf16's on the main ones
        monkeypatch.setattr(w12_row, "ONE_ROW_SWIGLU_TILE", 10)
        glu = normed | dict(swiglu=True)
        w12_row.routed(x, w12.encode(w), glu, {})
        w12_row.routed(x, w12.encode(w), normed, {})
        w12_row.routed(x, w, glu, {})
    tiles, main = w12_row.ROW_TILES, w12_row.ROW_TILES[w12_row.ONE_ROW_TILE]
    assert got == [tiles[3], tiles[4] | dict(X32=0), tiles[7], tiles[3], tiles[4] | dict(X32=0),
                   main, tiles[10], main, w12_row.TILE]  # fmt: skip


@pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9,
    reason="Gluon warp specialization: CUDA sm_90+ only",
)
@pytest.mark.parametrize("kind", ["w12", "bf16"])
@pytest.mark.parametrize("kw", [{}, dict(swiglu=True), dict(residual=True), dict(norm=True)])
def test_one_row_calls_route_to_the_kernel(monkeypatch, kind: str, kw: dict) -> None:
    """ONE_ROW (a W12 weight) and BF16_ONE_ROW (bf16) on: the engine's one-row multiplies
    (formats/w12_engine.linear: a norm prologue, SwiGLU or residual epilogue) are
    w12_row_linear's / bf16_row_linear's bits; a SwiGLU prologue, two rows or a given tile stay
    on w12_linear / skinny_linear. (The routes take Hopper GPUs alone: not emulated.)"""
    from specpilot.formats.w12_engine import linear
    from specpilot.kernels import linear as bf16_kernels
    from specpilot.kernels import w12_linear as w12_kernels

    w = (torch.randn(512, 1024) * 0.03).to(torch.bfloat16).cuda()
    weight = w12.encode(w) if kind == "w12" else w
    x = torch.randn(2, 1024, device="cuda").to(torch.bfloat16)
    if kw.get("residual"):
        kw = dict(residual=torch.randn(1, 512, device="cuda").to(torch.bfloat16))
    if kw.get("norm"):
        kw = dict(norm_weight=torch.rand(1024, device="cuda").to(torch.bfloat16) + 0.5)
    name, switch = ("w12_row_linear", "ONE_ROW") if kind == "w12" else ("bf16_row_linear",
                                                                        "BF16_ONE_ROW")  # fmt: skip
    calls = []
    original = getattr(w12_row, name)
    counted = lambda *a, **k: calls.append(1) or original(*a, **k)  # noqa: E731
    monkeypatch.setattr(w12_row, name, counted)
    monkeypatch.setattr(w12_row, switch, True)
    y = linear(x[:1], weight, **kw)
    assert calls == [1]
    assert torch.equal(y, original(x[:1], weight, **kw))
    if kind == "w12":  # ONE_ROW 2: only the residual's multiply, on ROW_TILES[ONE_ROW_TILE]
        monkeypatch.setattr(w12_row, "ONE_ROW", 2)
        monkeypatch.setattr(w12_row, "ONE_ROW_TILE", 1)
        y = linear(x[:1], weight, **kw)
        assert calls == [1, 1] if "residual" in kw else calls == [1]
        if "residual" in kw:
            assert torch.equal(y, original(x[:1], weight, w12_row.ROW_TILES[1], **kw))
        monkeypatch.setattr(w12_row, "ONE_ROW", 1)
        del calls[1:]  # (run 296: the checks below count the first call alone)
    linear(torch.cat([x[:1], x[:1]], 1), weight, glu=True)
    linear(x, weight)
    tile = (w12_kernels if kind == "w12" else bf16_kernels).tile_config(1, 512, 1024)
    linear(x[:1], weight, config=tile)
    assert calls == [1]


def test_bf16_kernel_compiles_and_refuses_bad_weights() -> None:
    """bf16_row_linear's kernel (the same ring on a bf16 weight) compiles for sm_90a without
    spills (SwiGLU, the residual with PDL at K 12288); weights TMA cannot read are refused."""
    cases = [dict(bf16=True), dict(bf16=True, swiglu=True),
             dict(bf16=True, k=12288, residual=True, pdl=True)]  # fmt: skip
    code = "import json; from specpilot.kernels import aot, w12_row; "
    code += f"print(json.dumps([aot.usage(w12_row.compile_sm90(**c)) for c in {cases!r}]))"
    for usage in compiled_json(code):
        assert usage["spill_stores"] == 0 and usage["shared"] <= 227 * 1024
    x = torch.zeros(1, 12, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="multiples of 8"):
        w12_row.bf16_row_linear(x, torch.zeros(4, 12, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="bf16 weight"):
        w12_row.bf16_row_linear(x, torch.zeros(4, 12))


@pytest.mark.parametrize("where, n, k, tile", [
    ("cuda", 6144, 4096, {}), ("cuda", 4096, 12288, {}), ("cuda", 334, 600, {}),
    ("cuda", 2000, 2304, dict(ROWS=1, STAGES=8)), ("emulated", 70, 600, {}),
    ("emulated", 90, 2304, dict(ROWS=1, STAGES=8)), ("emulated", 64, 1152, dict(ROWS=4, WARPS=4)),
])  # fmt: skip
@pytest.mark.parametrize("epilogue", ["plain", "swiglu", "residual"])
def test_bf16_row_matches_the_reference(where: str, n: int, k: int, tile: dict,
                                        epilogue: str) -> None:  # fmt: skip
    """bf16_row_linear against skinny_linear_reference: plain, SwiGLU, the residual exact given
    the product; N off the tile, K off the blocks (x padded, the weight's last box past K)."""
    from specpilot.kernels.linear import skinny_linear_reference

    gen = torch.Generator().manual_seed(n + k)
    with gluon_on(where) as device:
        w = (torch.randn(n, k, generator=gen) * k**-0.5).to(device, torch.bfloat16)
        x = torch.randn(1, k, generator=gen).to(device, torch.bfloat16)
        if epilogue == "residual":
            r = torch.randn(1, n, generator=gen).to(device, torch.bfloat16)
            plain = w12_row.bf16_row_linear(x, w, tile)
            y = w12_row.bf16_row_linear(x, w, tile, residual=r)
            assert torch.equal(y, (plain.float() + r.float()).to(torch.bfloat16))
            return
        kw = dict(swiglu=True) if epilogue == "swiglu" else {}
        y = w12_row.bf16_row_linear(x, w, tile, **kw)
        floor = order_floor(x, w, **kw)
        close_columns(y.float(), skinny_linear_reference(x, w, **kw).float(), 4, floor)


def test_bf16_one_row_hands_no_norm_on_and_takes_it_in_the_prologue(monkeypatch) -> None:
    """BF16_ONE_ROW: one-row forwards hand no norm on (models/fused.handoff_for) and give bf16
    multiplies the norm in the prologue, but not the certified head (no `linear`), where the
    kernel runs (a Hopper GPU, here the CPU's emulator); elsewhere, on by default, neither."""
    from specpilot.kernels import launch
    from specpilot.models import fused

    w = torch.zeros(64, 4096, dtype=torch.bfloat16)
    after = (torch.ones(4096, dtype=torch.bfloat16), 1e-6, w)
    assert w12_row.BF16_ONE_ROW  # the default, but the CPU's tensors take no Gluon kernel:
    assert not w12_row.bf16_route(torch.zeros(1, 4096, dtype=torch.bfloat16), w)
    assert fused.handoff_for(1, w, after, fused.HAND_O) is not None
    assert fused.prologue_rows(w, "norm") == 0
    monkeypatch.setattr(launch, "GLUON_EMULATED", True)
    monkeypatch.setattr(w12_row, "BF16_ONE_ROW", False)
    assert fused.handoff_for(1, w, after, fused.HAND_O) is not None
    assert fused.prologue_rows(w, "norm") == 0
    monkeypatch.setattr(w12_row, "BF16_ONE_ROW", True)
    assert fused.handoff_for(1, w, after, fused.HAND_O) is None
    assert fused.handoff_for(2, w, after, fused.HAND_O) is not None
    assert fused.prologue_rows(w, "norm") == 1 and fused.prologue_rows(w, "glu") == 0
    assert fused.prologue_rows(w, "norm", row_kernels=False) == 0


@pytest.mark.parametrize("where, n, k", [("cuda", 2000, 4096), ("cuda", 2000, 600),
                                         emulated_case(100, 600)])  # fmt: skip
def test_bf16_row_norm_prologue(where: str, n: int, k: int) -> None:
    """norm_weight on bf16 weights: RMSNorm(x) * w normed in shared memory, against the
    rmsnorm kernel's output multiplied and skinny_linear_reference (to summation order)."""
    from specpilot.kernels.elementwise import rmsnorm
    from specpilot.kernels.linear import skinny_linear_reference

    gen = torch.Generator().manual_seed(k)
    with gluon_on(where) as device:
        w = (torch.randn(n, k, generator=gen) * k**-0.5).to(device, torch.bfloat16)
        x = (3 * torch.randn(1, k, generator=gen)).to(device, torch.bfloat16)
        nw = (torch.rand(k, generator=gen) + 0.5).to(device, torch.bfloat16)
        for kw in ({}, dict(swiglu=True)):
            y = w12_row.bf16_row_linear(x, w, norm_weight=nw, **kw)
            normed = w12_row.bf16_row_linear(rmsnorm(x, nw, 1e-6), w, **kw)
            close_columns(y.float(), normed.float(), 4)
            ref = skinny_linear_reference(x, w, norm_weight=nw, eps=1e-6, **kw)
            close_columns(y.float(), ref.float(), 4)
