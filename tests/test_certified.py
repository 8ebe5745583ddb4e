"""The certified LM head (formats/certified.py, EngineConfig.target_head "certified"): the bound
holds for every logit, the argmax over the candidates is the argmax over all rows (ties, zeros,
negative logits, near-ties included), the kernel's tokens and packed verify blocks are the exact
head's, and generation gives the exact head's tokens and passes token forcing."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from hypothesis import given, settings
from hypothesis import strategies as st

from specpilot.config import EngineConfig
from specpilot.engine.generator import Generator
from specpilot.errors import ConfigError
from specpilot.formats.certified import (
    CertifiedHead,
    bounds,
    certified_argmax_reference,
    certify,
    order_keys,
)
from specpilot.kernels import certified, tokens
from specpilot.kernels.certified import widen_int8
from specpilot.kernels.linear import CERTIFIED_TILES, Handoff, certified_argmax, skinny_linear
from tests.test_kernels import (  # conftest sets TRITON_INTERPRET=1 without CUDA
    BF16,
    CUDA,
    DEVICE,
    SPEC_TOKENS,
    _sequences,
    _tiny_pair,
    assert_forced,
)

# the engine's generations and forwards: attention merged in blocks in the interpreter
pytestmark = pytest.mark.block_merge


def _head(rows: int, cols: int, seed: int, spread: float = 0.0, ties: int = 0) -> torch.Tensor:
    """A bf16 head: normal rows scaled by up to 2^spread, its first `ties` rows repeated at
    the end (exact ties in every logit)."""
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(rows, cols, generator=gen) * 0.05
    w *= 2.0 ** (spread * torch.rand(rows, 1, generator=gen))
    if ties:
        w[-ties:] = w[:ties]
    return w.to(BF16)


def _argmax_first(values: torch.Tensor) -> torch.Tensor:
    """torch.argmax's order by the keys (each row's first largest)."""
    keys = order_keys(values)
    best = keys.max(dim=1, keepdim=True).values
    index = torch.arange(values.shape[1]).expand_as(keys)
    return torch.where(keys == best, index, values.shape[1]).min(dim=1).values


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 40),
    cols=st.integers(1, 70),
    spread=st.sampled_from([0.0, 4.0, 30.0]),
    seed=st.integers(0, 2**16),
    zeros=st.booleans(),
)
def test_every_logit_lies_within_its_bound(rows, cols, spread, seed, zeros) -> None:
    """|approx_n - a . W_n| <= ||a|| radius_n, the sums in float32 (as the kernel) against the
    exact dot product in float64, for heads of rows at very different scales and zero rows."""
    w = _head(rows, cols, seed, spread)
    if zeros:
        w[::3] = 0
    head = certify(w)
    assert (head.weight.abs() <= 127).all() and (head.scale > 0).all()
    gen = torch.Generator().manual_seed(seed + 1)
    a = torch.randn(5, cols, generator=gen) * 2.0 ** (8 * torch.rand(5, 1, generator=gen))
    a = a.to(BF16)
    approx = (a.float() @ head.weight.float().T) * head.scale
    exact = a.double() @ w.double().T
    reach = a.double().norm(dim=1, keepdim=True) * head.radius.double()
    assert ((approx.double() - exact).abs() <= reach).all()
    # the int8 copy is close: the radius is a small part of the row's norm
    norms = w.double().norm(dim=1)
    assert (head.radius.double() <= 0.02 * norms + 1e-30).all()


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 40),
    cols=st.integers(1, 70),
    seed=st.integers(0, 2**16),
    kind=st.sampled_from(["tiny", "large", "mixed", "past fp16"]),
)
def test_fp16_sums_stay_within_their_bound(rows, cols, seed, kind) -> None:
    """The F16 tiles' bound (formats/certified.py): the int8 sums of the inputs rounded to fp16
    lie within the widened reach of the exact dot product, for inputs under fp16's normal range
    (rounded, some to 0), near its top, both at once; an input past it makes every row a
    candidate."""
    w = _head(rows, cols, seed, 4.0)
    head = certify(w)
    gen = torch.Generator().manual_seed(seed + 3)
    a = torch.randn(5, cols, generator=gen)
    scale = {"tiny": 2.0**-18, "large": 2.0**11, "mixed": 1.0, "past fp16": 1.0}[kind]
    a = a * scale
    if kind == "mixed":
        a[:, ::2] *= 2.0**-20
    if kind == "past fp16":
        a[1:, 0] = 70000.0
    a = a.to(BF16)
    approx, reach, sure = bounds(a, head, f16=True)
    exact = a.double() @ w.double().T
    held = (approx.double() - exact).abs() <= reach.double()
    assert held[sure.squeeze(1)].all()
    if kind == "past fp16":
        assert sure.squeeze(1).tolist() == [True, False, False, False, False]
    else:
        assert sure.all()
    if kind in ("tiny", "mixed"):  # some inputs changed, and the bound widened for them
        assert (a.float() != a.half().float()).any()
        plain = bounds(a, head)[1]
        assert (reach >= plain).all() and (reach > plain).any()


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(2, 60),
    cols=st.integers(1, 50),
    ties=st.integers(0, 1),
    seed=st.integers(0, 2**16),
    kind=st.sampled_from(["random", "zero input", "negative", "near ties"]),
)
def test_candidates_hold_the_argmax(rows, cols, ties, seed, kind) -> None:
    """The procedure's token is torch.argmax's over every exact logit (rounded to bf16): with
    repeated rows (first index), an input of zeros (every logit 0), all-negative logits, and
    rows one bf16 step apart."""
    w = _head(rows, cols, seed, ties=ties * min(rows // 2, 3))
    gen = torch.Generator().manual_seed(seed + 7)
    a = torch.randn(4, cols, generator=gen).to(BF16)
    if kind == "zero input":
        a[1:3] = 0
    if kind == "negative":
        a = a.abs()
        w = -w.abs()
    if kind == "near ties":
        w[1::2] = (w[0::2][: w[1::2].shape[0]].float() * (1 + 2**-7)).to(BF16)
    head = certify(w)
    found, candidates = certified_argmax_reference(a, head)
    exact = (a.float() @ w.float().T).to(BF16)
    assert torch.equal(found, _argmax_first(exact))
    assert candidates[torch.arange(4), found].all()
    if kind == "zero input":
        assert (found[1:3] == 0).all()


def test_certified_reference_reads_few_rows_at_a_real_width() -> None:
    """Random normal weights 16,384 x 1,024: few candidates a row (module doc's claim)."""
    w = _head(16384, 1024, 3)
    head = certify(w)
    a = torch.randn(4, 1024, generator=torch.Generator().manual_seed(4)).to(BF16)
    found, candidates = certified_argmax_reference(a, head)
    assert torch.equal(found, _argmax_first((a.float() @ w.float().T).to(BF16)))
    assert candidates.sum(dim=1).max() < 200


def test_non_finite_inputs_make_every_row_a_candidate() -> None:
    w = _head(30, 8, 1)
    a = torch.randn(2, 8).to(BF16)
    a[1, 3] = float("inf")
    _, candidates = certified_argmax_reference(a, certify(w))
    assert candidates[1].all() and not candidates[0].all()


def test_certify_checks_its_input() -> None:
    with pytest.raises(ValueError, match="finite"):
        certify(torch.tensor([[1.0, float("nan")]], dtype=BF16))
    with pytest.raises(ValueError, match="bf16/fp16"):
        certify(torch.ones(2, 2))
    head = certify(_head(4, 8, 0))
    with pytest.raises(ValueError, match="int8"):
        CertifiedHead(head.exact, head.weight.float(), head.scale, head.radius)
    with pytest.raises(ConfigError, match="target_head"):
        EngineConfig(target_head="int8")


@triton.jit
def _widen_kernel(w_ptr, out_ptr, FP32: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    wide = widen_int8(tl.load(w_ptr + offs), out_ptr.dtype.element_ty, FP32)
    tl.store(out_ptr + offs, wide.to(out_ptr.dtype.element_ty))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_widen_int8_is_exact_for_every_byte(dtype) -> None:
    """kernels/certified.widen_int8 (the int8 head's weights widened without Triton's I2F): every
    byte value, in shuffled order (each lane of a packed register sees every value), equal to
    torch's conversion. On the GPU this is the inline assembly; in the interpreter, Triton's
    conversion."""
    gen = torch.Generator().manual_seed(1)
    w = torch.arange(-128, 128, dtype=torch.int8).repeat(8)[torch.randperm(2048, generator=gen)]
    out = torch.empty(2048, dtype=dtype, device=DEVICE)
    _widen_kernel[(1,)](w.to(DEVICE), out, FP32=dtype == torch.float32, BLOCK=2048)
    assert torch.equal(out.cpu(), w.to(dtype))


def _tile(m: int, dot: bool | str, block_k: int = 32) -> dict:
    """A test tile: element-wise (dot False), tensor cores (True), or fp16 ones ("f16")."""
    f16 = dict(F16=True) if dot == "f16" else {}
    return dict(BLOCK_M=16 if dot else 1, BLOCK_N=32, BLOCK_K=block_k, USE_DOT=bool(dot),
                num_warps=4, num_stages=1) | f16  # fmt: skip


@pytest.mark.parametrize("f16", [False, True])
def test_row_stats_sum_each_rows_squares_and_changes(f16: bool) -> None:
    """certified.row_stats (ROW_STATS: the rows' sums summed before the multiply): each row's
    sum of squares and of (a - fp16(a))^2 against torch's, over ordinary rows, rows under fp16's
    normal range (changed by rounding) and a row past its range (its change infinite); with
    X16 the rows rounded to fp16 too."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(5, 2500, generator=gen)
    x[1] *= 2.0**-20
    x[2, 7] = 9.0e4
    x = x.to(BF16)
    found, rounded = certified.row_stats(x.to(DEVICE), f16, x16=True)
    found = found.cpu()
    a = x.float()
    change = a - a.half().float()
    want = torch.stack([(a * a).sum(1), (change * change).sum(1) if f16 else torch.zeros(5)], 1)
    assert torch.allclose(found, want, rtol=1e-5, atol=0)
    if f16:  # and the rows rounded to fp16 (X16), as torch rounds them
        assert found[1, 1] > 0 and found[2, 1] == float("inf") and found[0, 1] == 0
        assert torch.equal(rounded.cpu(), x.half())
    else:
        assert rounded is None


# the exact pass in the multiply's launch (0) or in a second one against the final floors (1)
TWO_PASS = pytest.mark.parametrize("two_pass", [0, 1])
# and the rows' sums of squares (and changes) in the multiply (ROW_STATS 0) or summed by a
# launch before it (2: at one row too), for launches without a norm prologue; (1, 2) as the
# engine's defaults take them from 2 rows (TWO_PASS, ROW_STATS 1), here at one row too; row_stats
# 3: ROW_STATS 2 with X16 (the multiply's input rounded to fp16 by row_stats)
MODES = pytest.mark.parametrize("two_pass,row_stats", [(0, 0), (1, 0), (0, 2), (1, 2), (1, 3)])


def _modes(monkeypatch, two_pass: int, row_stats: int) -> None:
    monkeypatch.setattr(certified, "TWO_PASS", two_pass)
    monkeypatch.setattr(certified, "TWO_PASS_MIN_ROWS", 1)  # at one row too
    monkeypatch.setattr(certified, "ROW_STATS", min(row_stats, 2))
    monkeypatch.setattr(certified, "X16", int(row_stats == 3))


@pytest.mark.parametrize(
    "m,dot", [(1, False), (1, True), (5, True), (20, True), (1, "f16"), (20, "f16")]
)
@pytest.mark.parametrize("logits", ["random", "negative"])
@TWO_PASS
def test_kernel_gives_the_exact_heads_argmax(
    m: int, dot: bool | str, logits: str, two_pass: int, monkeypatch
) -> None:
    """certified_argmax (RMSNorm prologue) against the argmax of skinny_linear's logits on the
    same tile (the same sums, so the same bits in the interpreter): repeated rows (first index
    wins), all-negative logits; a second launch on other inputs starts clean. F16 tiles sum
    the int8 copy on fp16 tensor cores; the exact pass stays bf16's."""
    _modes(monkeypatch, two_pass, 0)
    w = _head(300, 96, 2, ties=20).to(DEVICE)
    gen = torch.Generator().manual_seed(m)
    x = torch.randn(2, m, 96, generator=gen).to(DEVICE, BF16)
    nw = (torch.rand(96, generator=gen) + 0.5).to(DEVICE, BF16)
    if logits == "negative":
        x, w = x.abs(), -w.abs()
    head = certify(w)
    for rows in x:  # two launches: the floors and keys are left as found
        found, packed = certified_argmax(rows, head, norm_weight=nw, config=_tile(m, dot))
        plain = _tile(m, dot)
        plain.pop("F16", None)
        logit_rows = skinny_linear(rows, w, norm_weight=nw, config=plain)
        assert packed is None
        if CUDA:  # other sums' order: equal but for near-ties
            assert (found == logit_rows.argmax(-1)).float().mean() >= 0.9
        else:
            assert torch.equal(found, logit_rows.argmax(-1))


@pytest.mark.parametrize("m,dot", [(1, False), (1, True), (5, True), (1, "f16")])
@MODES
def test_int8_sums_choose_the_candidates(
    m: int, dot: bool | str, two_pass: int, row_stats: int, monkeypatch
) -> None:
    """The candidates come from the int8 sums: with the radius zeroed and the exact rows swapped
    for unrelated ones, the candidates are rows at the top of some input row's int8 sums (ties
    after rounding to bf16, a floor still rising, COMPACT's union over the input rows), so each
    token is among the top 8 of some row's int8 sums, and not the swapped rows' argmax over all
    (int8 sums of ~0, as the interpreter's bf16 conversion once gave, would leave every row a
    candidate). On the GPU, whose programs run at once (run 239 found a token outside the top 8
    at 5 rows), each token is the top of its own tile of 32 for some row; with TWO_PASS, whose
    second launch compares against the final floors, the top 8 there too."""
    _modes(monkeypatch, two_pass, row_stats)
    w = _head(300, 96, 3).to(DEVICE)
    head = certify(w)
    gen = torch.Generator().manual_seed(m + 10)
    other = (torch.randn(300, 96, generator=gen) * 0.05).to(DEVICE, BF16)
    lying = CertifiedHead(other, head.weight, head.scale, torch.zeros_like(head.radius))
    x = torch.randn(m, 96, generator=gen).to(DEVICE, BF16)
    found, _ = certified_argmax(x, lying, config=_tile(m, dot))
    approx = x.float() @ (head.weight.float() * head.scale[:, None]).T
    top = approx.topk(8, dim=-1).indices.unique()
    if CUDA and not two_pass:  # programs run at once: a floor may hold only its own tile, so a
        # candidate is (within bf16 rounding) the top of its own tile of 32 for some row
        n = approx.shape[1]
        tiles = torch.nn.functional.pad(approx, (0, -n % 32), value=float("-inf")).view(m, -1, 32)
        best = tiles.amax(dim=2, keepdim=True)
        near = (tiles >= best - best.abs() * 2.0**-7).view(m, -1)[:, :n]
        top = near.any(dim=0).nonzero().squeeze(1)
    assert torch.isin(found.cpu(), top.cpu()).all()
    assert not torch.equal(found, (x.float() @ other.float().T).argmax(-1))


@pytest.mark.parametrize("m", [1, 20])
@MODES
def test_f16_tiles_take_inputs_past_and_under_fp16(
    m: int, two_pass: int, row_stats: int, monkeypatch
) -> None:
    """F16 tiles on inputs that fp16 cannot hold: rows with an element past its range (every
    head row a candidate), rows of elements under its normal range (rounded, some to 0): the
    exact head's argmax all the same."""
    _modes(monkeypatch, two_pass, row_stats)
    w = _head(300, 96, 6, ties=10).to(DEVICE)
    head = certify(w)
    gen = torch.Generator().manual_seed(m + 20)
    x = torch.randn(m, 96, generator=gen)
    x[::2] *= 2.0**-20
    x[1::2, 5] = 9.0e4
    x = x.to(DEVICE, BF16)
    found, _ = certified_argmax(x, head, config=_tile(m, "f16"))
    logit_rows = skinny_linear(x, w, config=_tile(m, True))
    want, _ = certified_argmax_reference(x.cpu(), certify(w.cpu()), f16=True)
    for other in (logit_rows.argmax(-1).cpu(), want):
        if CUDA:  # other sums' order: equal but for near-ties
            assert (found.cpu() == other).float().mean() >= 0.9
        else:
            assert torch.equal(found.cpu(), other)


@pytest.mark.parametrize("x16", [0, 1])
def test_the_multiply_reads_the_row_sums_it_is_handed(x16: int, monkeypatch) -> None:
    """STATS_IN: the bounds come from row_stats' sums. With the head's exact rows swapped for
    unrelated ones and every radius huge, the true sums make every row a candidate (the token is
    the unrelated rows' argmax); sums of zero, handed instead, shrink every bound to the int8
    sums themselves (the token is then among their top rows, not the unrelated argmax)."""
    _modes(monkeypatch, 1, 3 if x16 else 2)
    w = _head(300, 96, 13).to(DEVICE)
    head = certify(w)
    gen = torch.Generator().manual_seed(14)
    other = (torch.randn(300, 96, generator=gen) * 0.05).to(DEVICE, BF16)
    lying = CertifiedHead(other, head.weight, head.scale, torch.full_like(head.radius, 1e3))
    x = torch.randn(4, 96, generator=gen).to(DEVICE, BF16)
    unrelated = skinny_linear(x, other, config=_tile(4, True)).argmax(-1)
    found, _ = certified_argmax(x, lying, config=_tile(4, "f16"))
    if CUDA:  # other sums' order: equal but for near-ties
        assert (found == unrelated).float().mean() >= 0.75
    else:
        assert torch.equal(found, unrelated)
    true_stats = certified.row_stats

    def zero_sums(rows: torch.Tensor, f16: bool, x16: bool = False):
        sums, rounded = true_stats(rows, f16, x16)
        return torch.zeros_like(sums), rounded

    monkeypatch.setattr(certified, "row_stats", zero_sums)
    found, _ = certified_argmax(x, lying, config=_tile(4, "f16"))
    approx = x.float() @ (head.weight.float() * head.scale[:, None]).T
    assert torch.isin(found.cpu(), approx.topk(8, dim=-1).indices.unique().cpu()).all()
    assert not torch.equal(found, unrelated)


@pytest.mark.parametrize("slots,step", [(4, 32), (32, 64)])
def test_second_launch_gathers_in_other_rounds(slots: int, step: int, monkeypatch) -> None:
    """TWO_PASS's second launch with other gathering: EXACT_SLOTS head rows a round (4: several
    rounds a program), EXACT_STEP columns a step (64: the last step past K, masked): the exact
    head's argmax."""
    _modes(monkeypatch, 1, 1)
    monkeypatch.setattr(certified, "EXACT_SLOTS", slots)
    monkeypatch.setattr(certified, "EXACT_STEP", step)
    w = _head(300, 96, 12, ties=10).to(DEVICE)
    head = certify(w)
    x = torch.randn(20, 96, generator=torch.Generator().manual_seed(12)).to(DEVICE, BF16)
    found, _ = certified_argmax(x, head, config=_tile(20, "f16"))
    want = skinny_linear(x, w, config=_tile(20, True)).argmax(-1)
    if CUDA:  # other sums' order: equal but for near-ties
        assert (found == want).float().mean() >= 0.9
    else:
        assert torch.equal(found, want)


@MODES
def test_kernel_takes_a_handed_norm_and_packs_verify_blocks(
    two_pass: int, row_stats: int, monkeypatch
) -> None:
    """The head after a norm hand-off (x = u, the sums scaled by 1 / RMS): the handed
    multiply's argmax; with verify blocks' ids, tokens.argmax_accept's packed rows."""
    _modes(monkeypatch, two_pass, row_stats)
    w = _head(300, 64, 5, ties=10).to(DEVICE)
    head = certify(w)
    gen = torch.Generator().manual_seed(9)
    u = torch.randn(32, 64, generator=gen).to(DEVICE, BF16)
    squares = (torch.rand(32, 3, generator=gen) * 40).to(DEVICE)
    handed = Handoff(torch.ones(64, device=DEVICE, dtype=BF16), 1e-6, u, squares)
    logit_rows = skinny_linear(u, w, handed=handed, config=_tile(32, True))
    ids = torch.randint(0, 300, (2, 16), generator=gen).to(DEVICE)
    ids[0, 1:6] = logit_rows.argmax(-1)[:5]  # the first block's first 5 drafts accepted
    found, packed = certified_argmax(u, head, handed=handed, ids=ids, config=_tile(32, True))
    want, want_packed = tokens.argmax_accept(logit_rows.view(2, 16, -1), ids)
    if not CUDA:
        assert torch.equal(found.view(2, 16), want) and torch.equal(packed, want_packed)
    assert packed[0, -1] >= 5 and torch.equal(packed[:, :16], ids)


@pytest.mark.parametrize("dot", [True, "f16"])
@MODES
def test_one_row_after_a_handed_norm_on_a_taller_tile(
    dot: bool | str, two_pass: int, row_stats: int, monkeypatch
) -> None:
    """The engine's one-row head (linear.CERTIFIED_TILES: a 16-row F16 tile): x = u after a norm
    hand-off, its one row's squares (STAT_ROWS 1) and sums scaled by 1 / RMS: the handed
    multiply's argmax, over several inputs (the buffers left clean between launches)."""
    _modes(monkeypatch, two_pass, row_stats)
    w = _head(300, 64, 7, ties=10).to(DEVICE)
    head = certify(w)
    gen = torch.Generator().manual_seed(11)
    same = []
    for _ in range(5):
        u = (torch.randn(1, 64, generator=gen) * 3).to(DEVICE, BF16)
        squares = (torch.rand(1, 3, generator=gen) * 40).to(DEVICE)
        handed = Handoff(torch.ones(64, device=DEVICE, dtype=BF16), 1e-6, u, squares)
        logit_rows = skinny_linear(u, w, handed=handed, config=_tile(1, True))
        found, _ = certified_argmax(u, head, handed=handed, config=_tile(1, dot))
        same.append(torch.equal(found, logit_rows.argmax(-1)))
    # on the GPU other sums' order: equal but for near-ties
    assert sum(same) >= 4 if CUDA else all(same)


def test_kernel_checks_its_arguments() -> None:
    head = certify(_head(40, 32, 0).to(DEVICE))
    x = torch.randn(2, 32).to(DEVICE, BF16)
    with pytest.raises(ValueError, match="rows"):
        certified_argmax(torch.randn(65, 32).to(DEVICE, BF16), head)
    with pytest.raises(ValueError, match="dtype"):
        certified_argmax(x.half(), head)
    with pytest.raises(ValueError, match="B \\* W"):
        certified_argmax(x, head, ids=torch.zeros(1, 3, dtype=torch.long, device=DEVICE))
    with pytest.raises(ValueError, match="SPLIT_K"):
        certified_argmax(x, head, config=_tile(2, True) | dict(SPLIT_K=2))


def _head_generators(tmp_path, target_head: str) -> tuple:
    """The tiny untied pair's generators with the exact head and with `target_head`, the
    reference, and the list the latter's certified launches append to (True: one-token)."""
    target, drafter, reference = _tiny_pair(tmp_path, tied=False)
    exact = Generator(target, drafter, EngineConfig(kernels="triton"), DEVICE, BF16)
    gen = Generator(target, drafter, EngineConfig(kernels="triton", target_head=target_head),
                    DEVICE, BF16)  # fmt: skip
    assert gen.fused_target.certified is not None and exact.fused_target.certified is None
    calls: list[bool] = []
    inner = gen.fused_target._certified_tokens
    gen.fused_target._certified_tokens = lambda *a: calls.append(a[2] is None) or inner(*a)
    return exact, gen, reference, calls


def _block_and_token(g: Generator, seed: int) -> tuple:
    """A verify block of 16 tokens, then a one-token forward: (block tokens, accepted, token)."""
    ids = torch.randint(0, 263, (1, 17), generator=torch.Generator().manual_seed(seed)).to(DEVICE)
    g._buffers_for("target", 1, 64)
    block = g._verify_fn(ids[:, :16], torch.arange(16, device=DEVICE)[None], 16, ())
    one = g._verify_fn(ids[:, 16:], torch.full((1, 1), 16, device=DEVICE), 17, ())
    return block.tokens, block.accepted, one.tokens


@MODES
def test_certified_head_generation_is_the_exact_heads(
    tmp_path, two_pass: int, row_stats: int, monkeypatch
) -> None:
    """The fused engine with target_head "certified" (an untied head): its int8 copy made; a
    verify block and a one-token forward give the exact head's tokens and accept count, and AR
    and speculative generation give the exact head's outputs and pass token forcing; with the
    exact pass in its own launch too (TWO_PASS)."""
    _modes(monkeypatch, two_pass, row_stats)
    exact, gen, reference, calls = _head_generators(tmp_path, "certified")
    want, found = _block_and_token(exact, 3), _block_and_token(gen, 3)
    assert found[0].shape == (1, 16) and found[2].shape == (1, 1)
    assert set(calls) == {True, False}  # the verify block and the one-token forward took it
    if not CUDA:
        assert all(map(torch.equal, found, want))
    calls.clear()
    outputs = {}
    for speculative in (False, True):
        seqs = _sequences(gen.target.config.vocab_size, SPEC_TOKENS)
        gen.run(seqs, speculative=speculative)
        outputs[speculative] = [s.output_ids for s in seqs]
        assert_forced(reference, seqs)
    assert set(calls) == {True, False}  # AR's one-token forwards and verify blocks took it
    assert outputs[True] == outputs[False]


def test_a_head_handed_no_norm_norms_its_rows_as_the_exact_head(tmp_path, monkeypatch) -> None:
    """A W12 down multiply hands no norm on (fused.NORM_HANDOFF_W12): the certified head then
    norms its rows as the exact head does (fused.normed_linear): one row in the multiply's
    prologue (this K is within PROLOGUE_MAX_K), a verify block by an rmsnorm launch first (run
    253: at K 4096 the prologue in every program cost the W12 engine's decode 0.47 ms); the
    exact head's tokens and accept count either way."""
    from specpilot.formats.w12_engine import convert_model
    from specpilot.models import fused

    target, drafter, _ = _tiny_pair(tmp_path, tied=False)
    convert_model(target, group_size=32, use_kernel=True, matrices=frozenset({"down"}))
    exact = Generator(target, drafter, EngineConfig(kernels="triton"), DEVICE, BF16)
    gen = Generator(target, drafter, EngineConfig(kernels="triton", target_head="certified"),
                    DEVICE, BF16)  # fmt: skip
    normed: list[tuple[int, bool]] = []  # (rows, the norm left to the multiply's prologue)
    inner = fused.certified_argmax
    monkeypatch.setattr(fused, "certified_argmax", lambda x, head, **kw: normed.append(
        (x.shape[0], kw.get("norm_weight") is not None)) or inner(x, head, **kw))  # fmt: skip
    want, found = _block_and_token(exact, 5), _block_and_token(gen, 5)
    assert normed == [(16, False), (1, True)]
    if not CUDA:
        assert all(map(torch.equal, found, want))
    else:  # other sums' order than the exact head's: equal but for near-ties
        assert (found[0] == want[0]).float().mean() >= 0.9


def test_certified_decode_takes_one_row_forwards_only(tmp_path) -> None:
    """target_head "certified-decode": a one-token forward's tokens from the certified head, a
    verify block's from the exact head (its argmax-and-accept launch), both the exact head's."""
    exact, gen, _, calls = _head_generators(tmp_path, "certified-decode")
    assert gen.fused_target.certified_rows == 1
    want, found = _block_and_token(exact, 4), _block_and_token(gen, 4)
    assert calls == [True]  # the one-token forward only
    if not CUDA:
        assert all(map(torch.equal, found, want))


def test_auto_target_head_certifies_decode_where_a_tile_was_measured(monkeypatch) -> None:
    """certified_rows: "auto" is forwards of up to 16 rows on a GPU whose head shape has a
    measured 16-row certified tile (Qwen3-8B's, Llama-3.1-8B's), one-row forwards where it has
    a one-row one only, else none (another shape, the CPU);
    "certified" every fused forward; "exact" none."""
    from specpilot.engine import generator
    from specpilot.kernels.linear import MAX_ROWS

    def target(rows: int) -> tuple[int, int]:  # the head's shape
        return rows, 4096

    cpu, gpu = torch.device("cpu"), torch.device("cuda", 0)
    assert generator.certified_rows("auto", target(151936), cpu) == 0
    monkeypatch.setattr(generator, "kernels_usable", lambda device: device.type == "cuda")
    assert generator.certified_rows("auto", target(151936), gpu) == 16  # Qwen3-8B's verify
    assert generator.certified_rows("auto", target(128256), gpu) == 16  # Llama-3.1-8B's
    monkeypatch.delitem(CERTIFIED_TILES, (16, 128256, 4096))
    assert generator.certified_rows("auto", target(128256), gpu) == 1  # a one-row tile only
    assert generator.certified_rows("auto", target(49152), gpu) == 0  # SmolLM2's: not measured
    assert generator.certified_rows("certified", target(128256), cpu) == MAX_ROWS
    assert generator.certified_rows("certified-decode", target(128256), cpu) == 1
    assert generator.certified_rows("exact", target(151936), gpu) == 0


@pytest.mark.parametrize("defer,compact", [(-1, 1), (0, 1), (-1, 0)])
def test_deferred_tiles_hand_their_check_over(monkeypatch, defer, compact) -> None:
    """The first tiles' checks taken by the last ones (DEFER_TILES -1: half the tiles here),
    by themselves when their checker swapped first (the flags found at 2: both then check), or
    not deferred at all (0); the exact pass on gathered rows or on the tile's rows masked: the
    exact head's argmax each time, and the flags left at 0. One-row launches defer none
    (DEFER_MIN_ROWS). Deferral is one launch's: TWO_PASS off."""
    from specpilot.kernels import certified

    monkeypatch.setattr(certified, "TWO_PASS", 0)
    monkeypatch.setattr(certified, "DEFER_TILES", defer)
    monkeypatch.setattr(certified, "COMPACT", compact)  # gathered candidates, or masked rows
    w = _head(300, 64, 8, ties=15).to(DEVICE)
    head = certify(w)
    x = torch.randn(3, 64, generator=torch.Generator().manual_seed(2)).to(DEVICE, BF16)
    nw = torch.ones(64, device=DEVICE, dtype=BF16)
    want = skinny_linear(x, w, norm_weight=nw, config=_tile(3, True)).argmax(-1)
    for early_checker in (False, True):
        found, _ = certified_argmax(x, head, norm_weight=nw, config=_tile(3, True))
        if defer == -1 and early_checker is False:
            flags = certified._HELD[x.device]["flags"]
            assert not flags.any()
            flags[:5] = 2  # the next launch: the first five tiles' checkers "came first"
        if not CUDA:
            assert torch.equal(found, want)
    if defer == -1:
        assert not certified._HELD[x.device]["flags"].any()
    assert certified.deferred_tiles(x.device, 10, 3) == (0 if defer == 0 else 5)
    assert certified.deferred_tiles(x.device, 10, 1) == 0  # one row: DEFER_MIN_ROWS
    monkeypatch.setattr(certified, "DEFER_MIN_ROWS", 1)
    assert certified.deferred_tiles(x.device, 10, 1) == (0 if defer == 0 else 5)
