"""Where kernels/w12_tokens.py's outputs go wrong on a GPU (runs 344-346, H100: at 16 tokens,
one output column of a tile off in 13-16 tokens; the emulator, which interleaves the
partitions at random, gives every output exact on the same data).

For each shape (N x K), seed and PDL on and off: runs of the default tile alternating between
two problems (so that each run's shared memory was last written on other data: a read that
comes before its data has landed then reads wrong values, where back-to-back runs of one
problem would read their own and pass), each against w12_linear_reference. Each column off is
explained by fits of its error over the tokens: one weight (dw * x[:, c]), one scale group of
the row (a * its partial sum: a scale word read wrong gives a power of 2 less 1), one block of
256 columns, the row's escape sums (-1: lost). Each configuration runs for each w12_tokens.FENCE
value asked (its bits: fences at the partitions' hand-offs, after the barriers' init, before a
ring stage is freed): a value clean where 0 is not names the ordering that was missing (run
346: 4, the proxy fence before a stage is freed, now the default). --kernel tc / row: the same
runs of w12_tc (the verify's) or w12_row's decode tile (at --tokens 1), the engine's other
kernels that free TMA-fed ring stages; --kernel bf16row: bf16_row's residual decode tile on
the bf16 weight (a zero residual), --fence its tile's FENCE (bench/sass_inflight.py finds its
ldmatrix loads in flight at a stage's free without it). Prints the columns off, then a line a
configuration; the last line is one JSON object.

    python bench/w12_tokens_probe.py --fence 4,0 --pairs 6 --seconds 120 --out probe.json
    python bench/w12_tokens_probe.py --kernel row --tokens 1 --out probe-row.json
"""

from __future__ import annotations

import argparse
import contextlib
import time
from unittest import mock

import torch
from report import finish
from tests.test_kernels import order_floor
from tests.test_w12_kernels import weight_with_escapes

from specpilot.formats import w12
from specpilot.formats.w12 import BLOCK
from specpilot.kernels import launch, w12_row, w12_tc, w12_tokens
from specpilot.kernels.w12_linear import w12_linear_reference

DEVICE = "cuda"  # (kernels/emulate.py's runs on the CPU set "cpu")


def best_fit(cols: torch.Tensor, err: torch.Tensor) -> tuple[int, float, float]:
    """The column i of cols [M, C] that best explains err [M] as a * cols[:, i] (least squares):
    i, a and the share of err's energy left over (0: that column explains it all)."""
    cols, e = cols.double(), err.double()
    a = (cols * e[:, None]).sum(0) / (cols * cols).sum(0).clamp_min(1e-30)
    left = ((e[:, None] - a * cols) ** 2).sum(0) / (e * e).sum().clamp_min(1e-30)
    i = int(left.argmin())
    return i, float(a[i]), float(left[i])


def single_weight_fit(err: torch.Tensor, x: torch.Tensor) -> dict:
    """The input column c whose x[:, c] best explains err [M] as dw * x[:, c]: c, dw and the
    share of err's energy left over (0: one weight explains it all)."""
    c, dw, left = best_fit(x, err)
    return dict(column=c, dw=dw, left=left)


def escapes_of(packed, row: int) -> list[int]:
    start, end = int(packed.row_ptr[row]), int(packed.row_ptr[row + 1])
    return packed.esc_col[start:end].tolist()


def place(c: int) -> dict:
    """Column c's place in w12_tokens' k-steps: its stage of 4 blocks, the block (the warp) and
    the half block (pair order is ignored: c is x's natural column)."""
    block = c // BLOCK
    return dict(stage=block // 4, warp=block % 4, half=(c % BLOCK) // (BLOCK // 2))


def problem(seed: int, n: int, k: int, m: int) -> dict:
    """The test's data for a seed: weight (escapes, zeros, tiny and huge weights), x, packed, the
    reference and its summation-order floor."""
    gen = torch.Generator().manual_seed(seed)
    w = weight_with_escapes(n, k, gen)
    x = (3 * torch.randn(m, k, generator=gen)).to(torch.bfloat16)
    floor = order_floor(x, w).to(DEVICE)
    packed = w12.encode(w.to(DEVICE))
    x = x.to(DEVICE)
    ref = w12_linear_reference(x, packed).float()
    return dict(seed=seed, w=w.float(), x=x, packed=packed, ref=ref, floor=floor)


def explain(err: torch.Tensor, p: dict, row: int) -> dict:
    """Fits of one output column's error [M] over the tokens: one weight (`single_weight_fit`),
    one scale group of the row (err ~ a * the group's partial sum, escapes left out: a scale
    word read wrong gives a = s' / s - 1, a power of 2 less 1), one block of 256 columns, and
    the row's escape sums (err ~ a * their total: -1 when lost, 1 when doubled)."""
    x = p["x"].float().cpu()
    escapes = escapes_of(p["packed"], row)
    w_row = p["w"][row].clone()
    esc_total = (x[:, escapes] * w_row[escapes]).sum(1)
    w_row[escapes] = 0.0
    parts = x * w_row
    g, ga, gl_ = best_fit(parts.reshape(x.shape[0], -1, BLOCK // 2).sum(-1), err)
    b, ba, bl = best_fit(parts.reshape(x.shape[0], -1, BLOCK).sum(-1), err)
    _, ea, el = best_fit(esc_total[:, None], err) if escapes else (0, 0.0, 1.0)
    return dict(**single_weight_fit(err, x), group=g, group_a=ga, group_left=gl_,
                group_place=place(g * BLOCK // 2), block=b, block_a=ba, block_left=bl,
                escapes=len(escapes), esc_a=ea, esc_left=el)  # fmt: skip


def _runs(kernel: str, probs: list[dict], pairs: int, fence: int) -> list[torch.Tensor]:
    """2 pairs runs of a kernel alternating between two problems: w12_tokens with FENCE fence,
    or the engine's other warp-specialized W12 kernels as they run (w12_tc at 2-16 tokens, the
    verify's; w12_row at one, the decode's tile; bf16row: bf16_row's with its tile's FENCE
    fence, -1 bf16's default, on)."""
    if kernel == "tokens":
        calls = [lambda p=p: w12_tokens.w12_tokens_linear(p["x"], p["packed"]) for p in probs]
    elif kernel == "tc":
        calls = [lambda p=p: w12_tc.w12_tc_linear(p["x"], p["packed"]) for p in probs]
    elif kernel == "bf16row":
        tile = w12_row.ROW_TILES[w12_row.BF16_ONE_ROW_TILE] | dict(X32=0, FENCE=fence)
        # (a zero residual: the residual tile, whose SASS has the loads in flight; y unchanged)
        zero = torch.zeros(1, probs[0]["w"].shape[0], device=DEVICE, dtype=torch.bfloat16)
        weights = [p["w"].to(DEVICE, torch.bfloat16) for p in probs]
        calls = [lambda p=p, w=w: w12_row.bf16_row_linear(p["x"], w, tile, residual=zero)
                 for p, w in zip(probs, weights, strict=True)]  # fmt: skip
    else:
        tile = w12_row.ROW_TILES[w12_row.ONE_ROW_TILE]
        calls = [lambda p=p: w12_row.w12_row_linear(p["x"], p["packed"], tile) for p in probs]
    fenced = mock.patch.object(w12_tokens, "FENCE", fence)
    with fenced if kernel == "tokens" else contextlib.nullcontext():
        return [calls[r % 2]() for r in range(2 * pairs)]


def probe(probs: list[dict], pairs: int, pdl_off: bool, fence: int = 0,
          kernel: str = "tokens") -> list[dict]:  # fmt: skip
    """2 pairs runs of the kernel (`_runs`), alternating between two problems (seeds s and
    s + 500: so that each run's shared memory was last written by a run on other data: a read
    before a write lands then reads the other problem's values, where in back-to-back runs of
    one problem it would read its own and pass); each output column off, explained. fence:
    w12_tokens.FENCE's value (its bits: fences at the partitions' hand-offs, after the
    barriers' init, before a ring stage is freed)."""
    n, m = probs[0]["w"].shape[0], probs[0]["x"].shape[0]
    found = []
    no_pdl = dict(PDL=False, launch_pdl=False)
    settings = mock.patch.object(launch, "pdl", lambda *a, **kw: no_pdl)
    with settings if pdl_off else contextlib.nullcontext():
        ys = _runs(kernel, probs, pairs, fence)
    for r, y in enumerate(ys):
        p = probs[r % 2]
        y, ref = y.float(), p["ref"]
        bad = (y - ref).abs() > ref.abs() * 2**-5 + p["floor"]
        for col in bad.any(0).nonzero().flatten().tolist():
            err = (y - ref)[:, col].cpu()
            found.append(dict(kernel=kernel, seed=p["seed"], n=n, m=m, pdl_off=pdl_off,
                              fence=fence, run=r,
                              row=col,
                              tile16=col // 16, lane_row=col % 16,
                              tokens_off=int(bad[:, col].sum()),
                              max_err=float(err.abs().max()),
                              **explain(err, p, col)))  # fmt: skip
    return [dict(kernel=kernel, seed=probs[0]["seed"], n=n, m=m, pdl_off=pdl_off, fence=fence,
                 runs=2 * pairs,
                 columns_off=len(found),
                 runs_off=len({f["run"] for f in found}))] + found  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=2, help="seeds: the test's (k + m), then more")
    ap.add_argument("--pairs", type=int, default=6, help="runs: twice this, alternating")
    ap.add_argument("--shapes", default="4096x4096,24576x4096", help="N x K, comma separated")
    ap.add_argument("--tokens", default="16")
    ap.add_argument("--fence", default="4,0",
                    help="w12_tokens.FENCE's values to run, in turn")  # fmt: skip
    ap.add_argument("--kernel", default="tokens", choices=("tokens", "tc", "row", "bf16row"),
                    help="w12_tokens; w12_tc (2-16 tokens) or w12_row (1) as the engine runs "
                    "them (--fence then ignored); bf16row: bf16_row's decode tile on the bf16 "
                    "weight (1 token; --fence its tile's FENCE: -1, 0, 1)")  # fmt: skip
    ap.add_argument("--seconds", type=float, default=0, help="no configuration started after")
    ap.add_argument("--show", type=int, default=24, help="columns off printed at most")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    if args.kernel in ("row", "bf16row") and args.tokens != "1":
        ap.error(f"--kernel {args.kernel} runs one token: --tokens 1")
    start = time.monotonic()

    def out_of_time() -> bool:
        return bool(args.seconds) and time.monotonic() - start > args.seconds

    probs, results = {}, []
    fences = args.fence.split(",") if args.kernel in ("tokens", "bf16row") else ["0"]
    for fence in (int(f) for f in fences):
        for shape in args.shapes.split(","):
            n, k = (int(v) for v in shape.split("x"))
            for m in (int(t) for t in args.tokens.split(",")):
                for s in range(args.seeds):
                    seed = k + m + 1000 * s
                    if out_of_time():
                        continue
                    if (seed, n) not in probs:
                        probs[seed, n] = [problem(seed, n, k, m), problem(seed + 500, n, k, m)]
                    for pdl_off in (False, True):
                        if out_of_time():
                            break
                        got = probe(probs[seed, n], args.pairs, pdl_off, fence, args.kernel)
                        results += got
                        pdl = "off" if pdl_off else "on"
                        print(f"({args.kernel} N {n} m {m} seed {seed} PDL {pdl} FENCE {fence}: "
                              f"{got[0]['columns_off']} columns off)", flush=True)  # fmt: skip
    print(f"{'N':>6} {'m':>3} {'seed':>6} {'pdl':>4} {'fen':>3} {'run':>3} {'row':>6} "
          f"{'tile':>5} {'lr':>3} {'off':>3} {'err':>6} | one weight: {'col':>5} {'left':>5} "
          f"| group: {'g':>3} {'a':>7} {'left':>5} st/w/h | block: {'b':>3} {'left':>5} "
          f"| escapes: n {'a':>6} {'left':>5}")  # fmt: skip
    columns = [f for f in results if "runs" not in f]
    for f in columns[: args.show]:
        pdl = "off" if f["pdl_off"] else "on"
        gp = f["group_place"]
        print(f"{f['n']:>6} {f['m']:>3} {f['seed']:>6} {pdl:>4} {f['fence']:>3} "
              f"{f['run']:>3} {f['row']:>6} "
              f"{f['tile16']:>5} {f['lane_row']:>3} {f['tokens_off']:>3} {f['max_err']:>6.3f} | "
              f"{f['column']:>17} {f['left']:>5.3f} | {f['group']:>10} {f['group_a']:>7.3f} "
              f"{f['group_left']:>5.3f} {gp['stage']}/{gp['warp']}/{gp['half']} | "
              f"{f['block']:>10} {f['block_left']:>5.3f} | {f['escapes']:>11} "
              f"{f['esc_a']:>6.2f} {f['esc_left']:>5.3f}")  # fmt: skip
    if len(columns) > args.show:
        print(f"... {len(columns) - args.show} more columns off (the JSON has them all)")
    for f in (f for f in results if "runs" in f):  # the configurations last
        pdl = "off" if f["pdl_off"] else "on"
        print(f"{f['n']:>6} {f['m']:>3} {f['seed']:>6} {pdl:>4} {f['fence']:>3}  "
              f"{f['runs']} runs: {f['runs_off']} with outputs off, {f['columns_off']} "
              "columns")  # fmt: skip
    card = torch.cuda.get_device_name() if DEVICE == "cuda" else DEVICE
    off = sum(f["columns_off"] for f in results if "runs" in f)
    finish(dict(bench="w12_tokens_probe", device=card, results=results, columns_off=off),
           args.out)  # fmt: skip


if __name__ == "__main__":
    main()
