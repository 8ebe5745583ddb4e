"""kernels/w12_tokens.py: W12 multiplies of 1-16 token rows on 16-row mma.sync tiles (CUDA sm_90
only). Without a GPU: the kernel compiles for sm_90a without spills, and its own code runs on
kernels/emulate.py ("emulated" cases); on a Hopper GPU ("cuda" cases) the same checks. Both
against w12_linear_reference, to summation order (test_kernels.order_floor)."""

from __future__ import annotations

from unittest import mock

import pytest
import torch

from specpilot.formats import w12
from specpilot.kernels import w12_row, w12_tokens
from specpilot.kernels.w12_linear import w12_linear_reference
from specpilot.kernels.w12_ws import pair_order
from tests.conftest import compiled_json, gluon_on, traced_rows
from tests.test_kernels import GLUON_WHERE, order_floor, split_verify_forwards
from tests.test_w12_kernels import close_columns, weight_with_escapes


def test_the_kernel_compiles_for_sm90_without_spills() -> None:
    """At o's K 4096 with the residual, PDL, the norm handed on and the timeline's marks, plain
    on 4 stages of the ring for at most 8 tokens (HALVES 1), and the down's K 12288 with x
    streamed (STREAM_TILE) as the first: no spills, one program an SM, its shared memory within
    the SM's."""
    cases = [(dict(STAGES=2), 4096, True, True, True, True),
             (dict(STAGES=4), 1024, False, False, False, False, 1),
             (w12_tokens.STREAM_TILE, 12288, True, True, True, True)]  # fmt: skip
    code = "import json; from specpilot.kernels import aot, w12_tokens; "
    code += f"print(json.dumps([aot.usage(w12_tokens.compile_sm90(*c)) for c in {cases!r}]))"
    for usage in compiled_json(code):
        assert usage["spill_stores"] == 0 and usage["shared"] <= 227 * 1024
        assert usage["programs_per_sm"] == 1


def test_the_words_are_read_without_bank_conflicts() -> None:
    """The multiplying warps read each half block's plane words and each pair slot of x's
    words [64 rows, 32 positions] at once (WORDS16: a lane's 8 positions of two rows), through
    the 128-byte swizzle TMA wrote them with: no excess passes (Triton's count); unswizzled
    the same reads take 1. w12_row's MMA tiles read the same way since session 71 (before, one
    word a lane a k-step from unswizzled rows: 8 rows on each of 4 banks, docs/LOG.md)."""
    from triton.experimental.gluon import language as gl

    from specpilot.kernels import aot

    def planes(swizzle: int):
        return gl.NVMMASharedLayout(swizzle_byte_width=swizzle, element_bitwidth=32, rank=2)

    words = w12_row.WORDS16.value
    assert aot.bank_conflicts(words, planes(w12_row.SWIZZLE.value), [64, 32]) == 0
    assert aot.bank_conflicts(words, planes(0), [64, 32]) == 1


def test_every_arrive_follows_its_partitions_barrier() -> None:
    """Gluon's mbarrier.arrive is one thread's: a ring stage (or a meta slot) freed while
    another warp of the partition still reads it would be overwritten under that warp. Triton
    puts the partition's barrier (bar.sync, or bar.warp.sync for one warp) before each arrive;
    the kernel relies on that (the 4 multiplying warps read different blocks of a stage)."""
    code = "import json; from specpilot.kernels import w12_tokens; "
    code += "print(json.dumps(w12_tokens.compile_sm90(residual=True).asm['ptx']))"
    lines = [ln.strip() for ln in compiled_json(code).split("\n")]
    lines = [ln for ln in lines if ln and not ln.startswith((".loc", "//", "$L"))]
    arrives = [i for i, ln in enumerate(lines) if "mbarrier.arrive.shared::cta.b64 _," in ln]
    assert len(arrives) >= 4  # (the stages', the meta slots' and the meta warp's)
    for i in arrives:  # (the barrier, then at most the arrive's address arithmetic)
        before = lines[i - 3 : i]
        assert any(ln.startswith(("bar.sync", "bar.warp.sync")) for ln in before), before
        last = max(j for j, ln in enumerate(before) if ln.startswith("bar."))
        assert all(ln.startswith(("add.", "mov.", "cvt.")) for ln in before[last + 1 :]), before


def test_fence_puts_its_fences_in_and_changes_no_output() -> None:
    """FENCE: 1 a fence.acq_rel.cta at each of the 7 hand-offs, 2 one fence.mbarrier_init after
    the barriers' init, 4 (the default's: run 346's race without it; tests/test_bench_smoke's
    SASS check) a fence.proxy.async before a stage is freed; none without it. On the emulator
    the output is FENCE 0's, bit for bit."""
    assert w12_tokens.FENCE & 4
    code = "import json; from specpilot.kernels import w12_tokens; "
    code += "ptx = {f: w12_tokens.compile_sm90(fence=f).asm['ptx'] for f in (0, 4, 7)}; "
    code += "print(json.dumps({f: [p.count('fence.' + k) for k in ('acq_rel.cta', "
    code += "'mbarrier_init', 'proxy.async')] for f, p in ptx.items()}))"
    assert compiled_json(code) == {"0": [0, 0, 0], "4": [0, 0, 1], "7": [7, 1, 1]}
    gen = torch.Generator().manual_seed(7)
    w = weight_with_escapes(40, 1024, gen)
    x = (3 * torch.randn(16, 1024, generator=gen)).to(torch.bfloat16)
    with gluon_on("emulated"):
        packed = w12.encode(w)
        ys = []
        for fence in (0, 7):
            with mock.patch.object(w12_tokens, "FENCE", fence):
                ys.append(w12_tokens.w12_tokens_linear(x, packed))
    assert torch.equal(ys[0], ys[1])


# x resident (2 and 4 stages), x streamed (2 stages of x, rounds of 2 tiles; 3 stages of x,
# one tile a round, SLOTS 4)
TILES = (dict(STAGES=2), dict(STAGES=4, SLOTS=4, ESC_BATCH=0), dict(XS=2, TILES=2),
         dict(STAGES=4, SLOTS=4, XS=3, TILES=1))  # fmt: skip


@pytest.mark.parametrize(
    "where, n, k, m",
    [("cuda", 4096, 4096, 16), ("cuda", 4096, 4096, 5), ("cuda", 1000, 2304, 9),
     ("cuda", 4096, 4096, 1), ("cuda", 4096, 12288, 16), ("cuda", 4000, 12288, 7),
     ("cuda", 4096, 14336, 16),
     ("emulated", 48, 1152, 16), ("emulated", 40, 2048, 3), ("emulated", 112, 3328, 16)],
)  # fmt: skip
def test_w12_tokens_matches_the_reference(where: str, n: int, k: int, m: int) -> None:
    """Every token's row as the reference gives it to summation order (the weight's escapes,
    zeros, tiny and huge weights included; N not a multiple of the tile's 16 rows; K past a
    stage's 4 blocks), plain and with the residual, from a natural or a pair-ordered x, on
    `TILES` (x resident where K fits, and x streamed: rounds of 2 tiles with a phantom past N,
    more rounds than programs, x's ring turning over); three runs give the same bits. On the
    GPU a run on other data comes before each run, so that a read of shared memory at the
    wrong time finds other values rather than the run before's, the same (runs 344-346, H100:
    at 16 tokens one row of a tile off, a ring stage freed with its loads in flight, mended by
    FENCE's proxy fence)."""
    gen = torch.Generator().manual_seed(k + m)
    w = weight_with_escapes(n, k, gen)
    x = (3 * torch.randn(m, k, generator=gen)).to(torch.bfloat16)
    r = torch.randn(m, n, generator=gen).to(torch.bfloat16)
    floor = order_floor(x, w)
    with gluon_on(where) as device:
        packed = w12.encode(w.to(device))
        x, r, floor = x.to(device), r.to(device), floor.to(device)
        ref = w12_linear_reference(x, packed).float()
        if where == "cuda":  # (other data, run before each run)
            other_w = torch.randn(n, k, generator=gen).to(device, torch.bfloat16)
            other = (torch.randn(m, k, generator=gen).to(device, torch.bfloat16),
                     w12.encode(other_w))  # fmt: skip
        for tile in TILES:
            if w12_tokens.geometry(w12_tokens.TILE | tile, k)["shared"] > w12_tokens.SHARED_LIMIT:
                continue
            runs = []
            for _ in range(3):
                if where == "cuda":
                    w12_tokens.w12_tokens_linear(*other, tile)
                runs.append(w12_tokens.w12_tokens_linear(x, packed, tile))
            y = runs[0]
            assert y.shape == (m, n)
            for again in runs[1:]:  # (one order of sums: the same bits every run)
                differ = (again != y).any(0).nonzero().flatten() // 16
                assert not differ.numel(), f"runs differ in tiles {differ.unique().tolist()[:20]}"
            _where_off(y.float(), ref, floor)
            close_columns(y.float(), ref, 4, floor)
            yr = w12_tokens.w12_tokens_linear(pair_order(x), packed, tile, residual=r,
                                              x_order="pair")  # fmt: skip
            assert torch.equal(yr, (y.float() + r.float()).to(torch.bfloat16))


def _where_off(y: torch.Tensor, ref: torch.Tensor, floor: torch.Tensor) -> None:
    """Which 16-row tiles and tokens are off by more than summation order could move them (8
    ulps and the floor): all of them named, so that a GPU failure tells a race (a few tiles,
    different each run) from a layout error (every tile, some tokens)."""
    off = (y - ref).abs() > ref.abs() * 2**-5 + floor
    if off.any():
        token, row = off.nonzero(as_tuple=True)
        tiles = sorted({int(r) // 16 for r in row})
        raise AssertionError(f"{int(off.sum())} outputs off: tiles {tiles[:20]} "
                             f"({len(tiles)} of {-(-y.shape[1] // 16)}), tokens "
                             f"{sorted({int(t) for t in token})}")  # fmt: skip


def test_bad_input_is_refused() -> None:
    """Clear errors: too many tokens, a K whose x does not fit (x resident asked for; without
    a tile such a K streams x), wrong dtypes and shapes, unknown or bad tile keys (on the
    emulator's CPU tensors: the checks come before any launch)."""
    w = weight_with_escapes(32, 512, torch.Generator().manual_seed(0))
    packed = w12.encode(w)
    x = torch.zeros(2, 512, dtype=torch.bfloat16)
    with gluon_on("emulated"):
        with pytest.raises(ValueError, match="1-16"):
            w12_tokens.w12_tokens_linear(torch.zeros(17, 512, dtype=torch.bfloat16), packed)
        with pytest.raises(ValueError, match="bf16"):
            w12_tokens.w12_tokens_linear(x.float(), packed)
        with pytest.raises(ValueError, match="residual"):
            w12_tokens.w12_tokens_linear(x, packed, residual=torch.zeros(2, 31))
        with pytest.raises(ValueError, match="unknown tile keys"):
            w12_tokens.w12_tokens_linear(x, packed, dict(ROWS=32))
        with pytest.raises(ValueError, match="x_order"):
            w12_tokens.w12_tokens_linear(x, packed, x_order="joined")
        with pytest.raises(ValueError, match="STAGES"):
            w12_tokens.w12_tokens_linear(x, packed, dict(STAGES=3))
        for bad in (dict(XS=1), dict(XS=5), dict(TILES=2), dict(XS=2, TILES=3)):
            with pytest.raises(ValueError, match="XS"):
                w12_tokens.w12_tokens_linear(x, packed, bad)
        long = w12.encode(weight_with_escapes(16, 12288, torch.Generator().manual_seed(1)))
        with pytest.raises(ValueError, match="shared memory"):  # (x resident asked for)
            w12_tokens.w12_tokens_linear(torch.zeros(1, 12288, dtype=torch.bfloat16), long, {})
    assert 4096 <= w12_tokens.max_k() < 12288


@pytest.mark.parametrize("where", ["cuda", "emulated"])
def test_the_next_norm_is_handed_on(where: str) -> None:
    """With the residual and a handed NormAfter: y as without it, u = y times the norm weight
    (rounded) in pair order, and the squares [M, tiles] adding up to each token's sum of y^2
    (to fp32 order)."""
    from specpilot.kernels.elementwise import NormAfter

    m, n, k = 6, 512, 1024
    gen = torch.Generator().manual_seed(3)
    w = weight_with_escapes(n, k, gen)
    x = (3 * torch.randn(m, k, generator=gen)).to(torch.bfloat16)
    r = torch.randn(m, n, generator=gen).to(torch.bfloat16)
    nw = (torch.rand(n, generator=gen) + 0.5).to(torch.bfloat16)
    with gluon_on(where) as device:
        packed = w12.encode(w.to(device))
        x, r, nw = x.to(device), r.to(device), nw.to(device)
        plain = w12_tokens.w12_tokens_linear(x, packed, residual=r)
        after = NormAfter(nw, 1e-6, order="pair", handed=True)
        y = w12_tokens.w12_tokens_linear(x, packed, residual=r, norm_after=after)
        assert torch.equal(y, plain) and after.ready
        assert torch.equal(after.u, pair_order((y.float() * nw.float()).to(torch.bfloat16)))
        assert after.squares.shape == (m, n // 16)
        expected = (y.double() ** 2).sum(1)
        assert torch.allclose(after.squares.double().sum(1), expected, rtol=1e-5)
        unhanded = NormAfter(nw, 1e-6, order="pair")
        w12_tokens.w12_tokens_linear(x, packed, residual=r, norm_after=unhanded)
        assert not unhanded.ready  # (left for the caller's norm)


@pytest.mark.prototype
@pytest.mark.parametrize("where", GLUON_WHERE)
def test_verify_forward_takes_o_here(tmp_path, monkeypatch, where: str) -> None:
    """w12_tokens.VERIFY in a W12 verify forward of 5 tokens on w12_tc (every matrix W12, o's K
    512; UNIT_SPLIT 2, so that without it o splits and its split sum hands the next norm on):
    on, o of both layers runs here and hands that norm on itself (as many norm kernels as
    without), the same tokens (or near-ties) and the hidden states to 16 half-ulps."""
    from specpilot.models import fused

    monkeypatch.setattr(fused, "SPLIT_SUM_HAND", True)
    monkeypatch.setattr(w12_tokens, "STREAM", False)  # (o alone: the down's is the next test)
    counts = split_verify_forwards(tmp_path, monkeypatch, where, (w12_tokens, "VERIFY"),
                                   (w12_tokens, "w12_tokens_linear"), "norm_after")  # fmt: skip
    assert counts[True] == (counts[False][0], 2, 2) and counts[False][1] == 0


@pytest.mark.prototype
@pytest.mark.parametrize("where", GLUON_WHERE)
def test_verify_forward_streams_the_down_here(tmp_path, monkeypatch, where: str) -> None:
    """w12_tokens.STREAM: with x's room made 256 columns (max_k), o (K 256) runs here with x
    resident and the down (K 512) with x streamed (models/fused: `down_route`), each handing the
    next norm on where there is one, instead of w12_tc's split and its split sums: the same
    tokens (or near-ties), hidden states to 16 half-ulps."""
    from specpilot.models import fused

    monkeypatch.setattr(fused, "SPLIT_SUM_HAND", True)
    monkeypatch.setattr(w12_tokens, "STREAM", True)
    monkeypatch.setattr(w12_tokens, "max_k", lambda tile=None: 256)
    counts = split_verify_forwards(tmp_path, monkeypatch, where, (w12_tokens, "VERIFY"),
                                   (w12_tokens, "w12_tokens_linear"), "norm_after")  # fmt: skip
    # (o twice and the first down hand a norm on; the last down has none after it here)
    assert counts[True] == (counts[False][0], 4, 3) and counts[False][1] == 0


@pytest.mark.parametrize("where", ["cuda", "emulated"])
def test_the_kernel_marks_the_timeline(where: str) -> None:
    """Under kernels/trace.tracing the kernel writes its launch's row (every program's entry,
    PDL pass and exit in order: conftest.traced_rows), the same bits as untraced, and the
    record says what it read."""
    w = weight_with_escapes(80, 1024, torch.Generator().manual_seed(5))
    with gluon_on(where) as device:
        packed = w12.encode(w.to(device))
        x = torch.randn(7, 1024).to(device, torch.bfloat16)
        rows = traced_rows(device, lambda: (w12_tokens.w12_tokens_linear(x, packed),))
    assert [r["kernel"] for r in rows] == ["w12_tokens"]
    assert (rows[0]["rows"], rows[0]["n"], rows[0]["k"]) == (7, 80, 1024)
    assert rows[0]["bytes"] == packed.nbytes_bound()
