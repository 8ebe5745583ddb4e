"""kernels/emulate.py: Gluon kernels run on the CPU.

A small warp-specialized kernel (a loader warp copying tiles by TMA into a ring of two stages, the
default partition summing their rows) runs right, and each kind of mistake the emulator is for
shows: a wrong barrier parity or too few expected bytes deadlock (named, not hung), a consumer
that does not wait reads garbage, an arrival past a barrier's count and an out-of-bounds load
raise. The same kernel compiles for sm_90a, so what is emulated is real Gluon. The W12 kernels
run on it in tests/test_w12_row.py, test_w12_tc.py and test_w12_ws.py."""

from __future__ import annotations

import pytest
import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from specpilot.kernels import emulate
from specpilot.kernels.w12_row import _mma_sync
from tests.conftest import compiled_json

ROWS = gl.constexpr(8)  # rows a tile
LAYOUT = gl.constexpr(gl.BlockedLayout([1, 1], [1, 32], [4, 1], [1, 0]))
ONE_WARP = gl.constexpr(gl.BlockedLayout([1], [32], [1], [0]))  # 32 elements on one warp


@gluon.jit
def _ring_loader(desc, buf, ready, empty, tiles, FLIP: gl.constexpr, SHORT: gl.constexpr):
    for i in range(tiles):
        s = i % 2
        mbarrier.wait(empty.index(s), ((i // 2) & 1) ^ 1 ^ FLIP)
        mbarrier.expect(ready.index(s), desc.block_type.nbytes - SHORT)
        tma.async_copy_global_to_shared(desc, [ROWS * i, 0], ready.index(s), buf.index(s))


@gluon.jit
def _ring_summer(buf, ready, empty, y_ptr, tiles, WAIT: gl.constexpr, EXTRA: gl.constexpr):
    for i in range(tiles):
        s = i % 2
        if WAIT:
            mbarrier.wait(ready.index(s), (i // 2) & 1)
        sums = gl.sum(buf.index(s).load(LAYOUT), axis=1)
        mbarrier.arrive(empty.index(s), count=1 + EXTRA)
        rows = ROWS * i + gl.arange(0, ROWS, layout=gl.SliceLayout(1, LAYOUT))
        gl.store(y_ptr + rows, sums)


@gluon.jit
def _ring_kernel(desc, y_ptr, tiles, FLIP: gl.constexpr, SHORT: gl.constexpr, WAIT: gl.constexpr,
                 EXTRA: gl.constexpr):  # fmt: skip
    """y[r] = the sum of x's row r, x [tiles x ROWS, 32] fp32 read through a 2-stage TMA ring.
    FLIP: the loader waits for the wrong parity; SHORT: expects that many bytes too few; WAIT 0:
    the summer reads a stage without waiting for it; EXTRA: arrives that many times more."""
    buf = gl.allocate_shared_memory(gl.float32, [2, ROWS, 32], desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(2):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    gl.warp_specialize(
        [(_ring_summer, (buf, ready, empty, y_ptr, tiles, WAIT, EXTRA)),
         (_ring_loader, (desc, buf, ready, empty, tiles, FLIP, SHORT))],
        [1],
        [24],
    )  # fmt: skip


@gluon.jit
def _overrun_kernel(x_ptr, y_ptr):
    offs = gl.arange(0, 64, layout=gl.BlockedLayout([1], [32], [4], [0]))
    gl.store(y_ptr + offs, gl.load(x_ptr + offs))


@gluon.jit
def _mma_kernel(a_ptr, b_ptr, y_ptr, FENCE: gl.constexpr):
    """y [64, 16] = a [64, 16] @ b [16, 16], both stored to shared memory, then wgmma."""
    rows: gl.constexpr = gl.BlockedLayout([1, 1], [2, 16], [4, 1], [1, 0])
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, 16, 16])  # fmt: skip
    shared: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=32, element_bitwidth=16,
                                                rank=2)  # fmt: skip
    r = gl.arange(0, 64, layout=gl.SliceLayout(1, rows))
    c = gl.arange(0, 16, layout=gl.SliceLayout(0, rows))
    a = gl.allocate_shared_memory(gl.bfloat16, [64, 16], shared)
    b = gl.allocate_shared_memory(gl.bfloat16, [16, 16], shared)
    a.store(gl.load(a_ptr + r[:, None] * 16 + c[None, :]))
    b.store(gl.load(b_ptr + r[:16, None] * 16 + c[None, :]))
    if FENCE:
        fence_async_shared()
    acc = warpgroup_mma(a, b, gl.zeros([64, 16], gl.float32, acc_layout))
    gl.store(y_ptr + r[:, None] * 16 + c[None, :], gl.convert_layout(acc, rows))


@gluon.jit
def _unrolled_kernel(y_ptr, n, N: gl.constexpr, RUNTIME: gl.constexpr):
    """y[0] = n + 0 + 1 + ... + (N - 1), the loop unrolled over N; RUNTIME 1 unrolls it over
    n // 2, RUNTIME 2 stores through an arange to n + 25, which the compiler does not know."""
    acc = n
    if RUNTIME == 1:
        for i in gl.static_range(n // 2):
            acc += i
    else:
        for i in gl.static_range(N):
            acc += i
    if RUNTIME == 2:
        offs = gl.arange(0, n + 25, layout=ONE_WARP)
    else:
        offs = gl.arange(0, 32, layout=ONE_WARP)
    gl.store(y_ptr + offs, gl.full([32], acc, gl.int32, ONE_WARP), mask=offs < 1)


def _ring(x: torch.Tensor, seed: int = 0, **flags) -> torch.Tensor:
    layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=2)
    rows = ROWS.value
    desc = TensorDescriptor.from_tensor(x, [rows, 32], layout)
    tiles = -(-x.shape[0] // rows)
    y = torch.empty(tiles * rows)
    consts = dict(FLIP=0, SHORT=0, WAIT=1, EXTRA=0) | flags
    with emulate.gluon(seed=seed):
        _ring_kernel[(1,)](desc, y, tiles, **consts, num_warps=4)
    return y


@pytest.mark.parametrize("seed", range(4))
def test_a_ring_kernel_runs_right(seed: int) -> None:
    """Rows' sums through the ring, 5 tiles (the stages reused), the last tile past x's rows
    (TMA's zeros), for several schedules."""
    x = torch.randn(37, 32)
    y = _ring(x, seed)
    torch.testing.assert_close(y[:37], x.sum(1))
    assert torch.equal(y[37:], torch.zeros(3))


def test_a_wrong_parity_deadlocks_and_names_the_wait() -> None:
    with pytest.raises(emulate.EmulationError, match=r"deadlock.*_ring_loader.*test_emulate.py"):
        _ring(torch.randn(32, 32), FLIP=1)


def test_too_few_expected_bytes_deadlock() -> None:
    """The barrier's phase completes only when its transaction bytes are all accounted for: 4
    bytes expected too few leave it at -4 and the summer waiting."""
    with pytest.raises(emulate.EmulationError, match=r"deadlock.*-4 bytes pending"):
        _ring(torch.randn(32, 32), SHORT=4)


def test_arrivals_past_the_count_raise() -> None:
    with pytest.raises(emulate.EmulationError, match="more arrivals than its count"):
        _ring(torch.randn(32, 32), EXTRA=1)


def test_a_consumer_that_does_not_wait_reads_garbage() -> None:
    """Shared memory starts as 0xFF bytes (NaN) and copies land when the scheduler lets them: a
    summer that does not wait reads a stage before its copy landed (NaN sums), or runs ahead of
    the loader's phases (a deadlock or an arrival too many); never the right sums here."""
    x = torch.randn(40, 32)
    for seed in range(4):
        try:
            y = _ring(x, seed, WAIT=0)
        except emulate.EmulationError:
            continue
        assert y.isnan().any() or not torch.allclose(y, x.sum(1))


def test_wgmma_after_stores_needs_the_proxy_fence() -> None:
    """Shared memory stored to by the generic proxy and read by wgmma (the async proxy) without
    fence_async_shared between them raises; with the fence, the product."""
    a = torch.randn(64, 16).to(torch.bfloat16)
    b = torch.randn(16, 16).to(torch.bfloat16)
    y = torch.empty(64, 16)
    with emulate.gluon():
        with pytest.raises(emulate.EmulationError, match="no fence_async_shared"):
            _mma_kernel[(1,)](a, b, y, FENCE=0)
        _mma_kernel[(1,)](a, b, y, FENCE=1)
    torch.testing.assert_close(y, a.float() @ b.float())


def test_an_out_of_bounds_load_raises() -> None:
    x, y = torch.zeros(32), torch.zeros(64)
    with pytest.raises(emulate.EmulationError, match=r"out-of-bounds access of x_ptr.*\[32, 33"):
        with emulate.gluon():
            _overrun_kernel[(1,)](x, y)


def test_a_static_range_or_arange_over_a_runtime_argument_raises() -> None:
    """Bounds from constexprs unroll; a static_range bound or an arange end computed from an
    argument not declared constexpr is rejected, as Triton's compiler rejects it (the emulator
    used to run it)."""
    y = torch.zeros(32, dtype=torch.int32)
    with emulate.gluon():
        _unrolled_kernel[(1,)](y, 10, N=4, RUNTIME=0, num_warps=1)
    assert y[0] == 10 + 0 + 1 + 2 + 3
    with pytest.raises(
        emulate.EmulationError, match=r"static_range bound runtime 3 depends .*_unr"
    ):
        with emulate.gluon():
            _unrolled_kernel[(1,)](y, 7, N=4, RUNTIME=1, num_warps=1)
    with pytest.raises(emulate.EmulationError, match=r"arange end runtime 32 depends .*_unrolled"):
        with emulate.gluon():
            _unrolled_kernel[(1,)](y, 7, N=4, RUNTIME=2, num_warps=1)


@gluon.jit
def _reinterpreted_kernel(y_ptr, G: gl.constexpr):
    """y[0:32] = 7 through a shared [2 G, 32] int32 buffer viewed as [2, G, 32] (w12_tc's scale
    words' view): a G that is not a power of 2 is rejected by the compiler's memdesc rule."""
    flat: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    row: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, 1], [1, 0])
    buf = gl.allocate_shared_memory(gl.int32, [2 * G, 32], flat)
    view = buf._reinterpret(gl.int32, [2, G, 32], flat)  # (as w12_tc._meta's)
    view.index(1).slice(G - 1, 1).store(gl.full([1, 32], 7, gl.int32, row))
    offs = gl.arange(0, 32, layout=gl.SliceLayout(0, row))
    gl.store(y_ptr + offs[None, :], buf.slice(2 * G - 1, 1).load(row))


def _compile_outcomes(kernel: str, types: dict, cases: dict) -> dict:
    """{str(case): "compiled" or the compiler's error} for this module's `kernel` compiled for
    sm_90a with each case's constants (in a child process, as compiled_json runs it)."""
    code = "import json; from specpilot.kernels import aot; from tests.test_emulate import "
    code += f"{kernel}\nout = {{}}\nfor key, consts in {cases!r}.items():\n  try:\n"
    code += f"    aot.compile_kernel({kernel}, {types!r}, consts)\n    out[key] = 'compiled'\n"
    code += "  except Exception as e:\n    out[key] = repr(e)\nprint(json.dumps(out))"
    return compiled_json(code)


def test_a_shared_view_of_a_shape_not_in_powers_of_2_raises() -> None:
    """A shared buffer viewed (`_reinterpret`) with a dimension that is not a power of 2 is
    rejected, as Triton rejects it (w12_tc's scale words at MAX_BLOCKS 24 once ran here)."""
    y = torch.zeros(32, dtype=torch.int32)
    with emulate.gluon():
        _reinterpreted_kernel[(1,)](y, G=4, num_warps=1)
    assert torch.equal(y, torch.full((32,), 7, dtype=torch.int32))
    with pytest.raises(emulate.EmulationError, match=r"reinterpret as \[2, 6, 32\]: every"):
        with emulate.gluon():
            _reinterpreted_kernel[(1,)](y, G=6, num_warps=1)
    cases = {g: dict(G=g, num_warps=1) for g in (4, 6)}
    out = _compile_outcomes("_reinterpreted_kernel", dict(y_ptr="*i32"), cases)
    assert out["4"] == "compiled" and out["6"] != "compiled"


def test_triton_rejects_the_same_static_range_and_arange() -> None:
    """The emulator's rule is the compiler's: for sm_90a, N unrolls; n // 2 and n + 25 fail."""
    cases = {r: dict(N=4, RUNTIME=r, num_warps=1) for r in (0, 1, 2)}
    out = _compile_outcomes("_unrolled_kernel", dict(y_ptr="*i32", n="i32"), cases)
    assert out["0"] == "compiled"
    assert "static_range" in out["1"] and "not a constexpr" in out["1"]
    assert "arange" in out["2"] and out["2"] != "compiled"


MMA_WARPS = gl.constexpr(2)
MMA_LANES = gl.constexpr(gl.BlockedLayout([1, 1], [1, 32], [2, 1], [1, 0]))  # a warp a row


@gluon.jit
def _f32(ptr):
    return gl.load(ptr).to(gl.float32, bitcast=True)


@gluon.jit
def _mma_probe_kernel(frag_ptr, d_ptr):
    """D = A B + C by one mma.sync a warp: frag_ptr [10, warps, 32] int32 holds each lane's A
    (4 registers), B (2) and C (4, fp32 bits); d_ptr [4, warps, 32] fp32 gets its D."""
    lanes = (gl.arange(0, MMA_WARPS, layout=gl.SliceLayout(1, MMA_LANES))[:, None] * 32
             + gl.arange(0, 32, layout=gl.SliceLayout(0, MMA_LANES))[None, :])  # fmt: skip
    step = MMA_WARPS * 32
    a = frag_ptr + lanes
    d0, d1, d2, d3 = _mma_sync(
        gl.load(a), gl.load(a + step), gl.load(a + 2 * step), gl.load(a + 3 * step),
        gl.load(a + 4 * step), gl.load(a + 5 * step), _f32(a + 6 * step), _f32(a + 7 * step),
        _f32(a + 8 * step), _f32(a + 9 * step),
    )  # fmt: skip
    gl.store(d_ptr + lanes, d0)
    gl.store(d_ptr + step + lanes, d1)
    gl.store(d_ptr + 2 * step + lanes, d2)
    gl.store(d_ptr + 3 * step + lanes, d3)


def _fragments(a: torch.Tensor, b: torch.Tensor, acc: torch.Tensor) -> torch.Tensor:
    """Per warp A [16, 16] bf16, B [16, 8] bf16, C [16, 8] fp32 as PTX's m16n8k16 fragments
    (the PTX ISA's figures for .bf16 with an .f32 accumulator), lane l = 4 g + c, written out
    element by element: [10, warps, 32] int32."""
    warps = a.shape[0]
    out = torch.zeros(10, warps, 32, dtype=torch.int32)

    def pair(lo: torch.Tensor, hi: torch.Tensor) -> int:
        bits = torch.stack([lo, hi]).to(torch.bfloat16).view(torch.int16).to(torch.int32) & 0xFFFF
        return int(bits[0] | (bits[1] << 16))

    for w in range(warps):
        for lane in range(32):
            g, c = lane // 4, lane % 4
            for i, (row, k) in enumerate([(g, 2 * c), (g + 8, 2 * c), (g, 2 * c + 8),
                                          (g + 8, 2 * c + 8)]):  # fmt: skip
                out[i, w, lane] = pair(a[w, row, k], a[w, row, k + 1])
            for i, k in enumerate([2 * c, 2 * c + 8]):
                out[4 + i, w, lane] = pair(b[w, k, g], b[w, k + 1, g])
            for i, (row, col) in enumerate([(g, 2 * c), (g, 2 * c + 1), (g + 8, 2 * c),
                                            (g + 8, 2 * c + 1)]):  # fmt: skip
                out[6 + i, w, lane] = acc[w, row, col].view(torch.int32)
    return out


@pytest.mark.parametrize("where", ["cuda", "emulated"])
def test_mma_sync_takes_the_fragments_as_ptx_lays_them_out(where: str) -> None:
    """The emulator's mma.sync m16n8k16 (inline PTX on [warps, 32] tensors, a lane an element;
    kernels/w12_row's own `_mma_sync`, the MMA tiles' PTX):
    each warp's D = A B + C, A, B and C packed here from the PTX ISA's fragment figures, on the
    emulator and on a Hopper GPU (the same packing: the GPU checks the figures were read right);
    D's fragments unpacked the same way; other layouts refused."""
    if where == "cuda" and not torch.cuda.is_available():
        pytest.skip("CUDA only")
    gen = torch.Generator().manual_seed(5)
    warps = MMA_WARPS.value
    a = torch.randn(warps, 16, 16, generator=gen).to(torch.bfloat16).float()
    b = torch.randn(warps, 16, 8, generator=gen).to(torch.bfloat16).float()
    acc = torch.randn(warps, 16, 8, generator=gen)
    frags = _fragments(a, b, acc)
    d = torch.empty(4, warps, 32)
    if where == "cuda":
        frags_dev, d_dev = frags.cuda(), d.cuda()
        _mma_probe_kernel[(1,)](frags_dev, d_dev, num_warps=warps)
        d = d_dev.cpu()
    else:
        with emulate.gluon():
            _mma_probe_kernel[(1,)](frags, d, num_warps=warps)
    want = _fragments(a, b, acc + a @ b)[6:].view(torch.float32)
    torch.testing.assert_close(d, want, rtol=1e-5, atol=1e-5)
    bad = emulate.Tensor(
        torch.zeros(4, 32, dtype=torch.int32), gl.BlockedLayout([1, 2], [2, 16], [1, 1], [1, 0])
    )
    with pytest.raises(emulate.EmulationError, match="mma.sync"):
        emulate._mma_sync(*[bad] * 10)


def test_the_mma_probe_compiles_for_sm90() -> None:
    """The probe's inline mma.sync is PTX that ptxas takes for sm_90a."""
    types = dict(frag_ptr="*i32", d_ptr="*fp32")
    code = "import json; from specpilot.kernels import aot; from tests.test_emulate import "
    code += f"_mma_probe_kernel; k = aot.compile_kernel(_mma_probe_kernel, {types!r}, "
    code += "dict(num_warps=2)); print(json.dumps(aot.usage(k)))"
    assert compiled_json(code)["spill_stores"] == 0


def test_launches_outside_the_context_are_untouched() -> None:
    """The context restores Gluon's launch and launch._sm_count, and counts its launches."""
    from specpilot.kernels import launch

    before = launch._sm_count
    with emulate.gluon(sms=7) as state:
        assert launch._sm_count(0) == 7 and emulate.active()
        _overrun_kernel[(1,)](torch.zeros(64), torch.zeros(64))
    assert state["launches"] == 1 and state["steps"] == 0
    assert launch._sm_count is before and not emulate.active()


def test_the_ring_kernel_compiles_for_sm90() -> None:
    """What the emulator ran is Gluon that Triton compiles for Hopper."""
    layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=2)
    types = dict(desc=f"tensordesc<fp32[{ROWS.value}, 32],{layout!r}>", y_ptr="*fp32", tiles="i32")
    code = "import json; from specpilot.kernels import aot; from tests.test_emulate import "
    code += "_ring_kernel; from triton.experimental.gluon.language import NVMMASharedLayout; "
    code += f"k = aot.compile_kernel(_ring_kernel, {types!r}, dict(FLIP=0, SHORT=0, WAIT=1, "
    code += "EXTRA=0, num_warps=4)); print(json.dumps(aot.usage(k)))"
    usage = compiled_json(code)
    assert usage["spill_stores"] == 0 and usage["warps"] >= 5


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_w12_prototypes_under_other_schedules(seed: int) -> None:
    """w12_row (with PDL's branches), w12_tc and w12_ws, a tile each whose rings and slots are
    reused across tiles, right under schedules other than the tests' seed 0 (copies landing and
    partitions going on in other orders)."""
    from unittest import mock

    from specpilot.formats import w12
    from specpilot.kernels import launch, w12_row, w12_tc, w12_ws
    from specpilot.kernels.w12_linear import w12_linear_reference
    from tests.test_w12_kernels import close_columns, weight_with_escapes

    packed = w12.encode(weight_with_escapes(200, 1152, torch.Generator().manual_seed(seed)))
    x = torch.randn(16, 1152, generator=torch.Generator().manual_seed(seed)).to(torch.bfloat16)
    pdl = mock.patch.object(launch, "pdl", lambda *a, **k: dict(PDL=True, launch_pdl=True))
    with emulate.gluon(sms=2, seed=seed), pdl:
        row = w12_row.w12_row_linear(x[:1], packed, dict(STAGES=2))
        tc = w12_tc.w12_tc_linear(x, packed, dict(STAGES=2))
        ws = w12_ws.w12_ws_linear(x, packed, dict(STAGES=2, PERSISTENT=1))
    close_columns(row.float(), w12_linear_reference(x[:1], packed).float(), 4)
    ref = w12_linear_reference(x, packed).float()
    close_columns(tc.float(), ref, 4)
    close_columns(ws.float(), ref, 4)
