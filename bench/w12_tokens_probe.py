"""Where kernels/w12_tokens.py's outputs go wrong on a GPU, when they do (run 344, H100: one
output column of 4096 off at 16 tokens in tests/test_w12_tokens.py's data; the emulator gives
every output exact on the same data, at 132 programs and with PDL's branches).

For each of a few seeds (the test's first) and both tiles, with PDL as the GPU's launches say
and with it off: RUNS runs of the kernel against w12_linear_reference, the runs compared bit for
bit (a race shows as runs that differ). For each output column off, its error over the 16 tokens
is fitted to a single input column c (error ~ dw * x[:, c]): a fit that leaves little over names
the one weight that was multiplied wrong, whether it is one of the row's escapes (added by the
meta warp) or a plane weight (decoded by the multiplying warps), and its k-step place (stage,
block, half, word). A column no single weight explains is named as such. The last line is one
JSON object.

    python bench/w12_tokens_probe.py --seeds 3 --runs 5 --out probe.json
"""

from __future__ import annotations

import argparse
import contextlib
from unittest import mock

import torch
from report import finish
from tests.test_kernels import order_floor
from tests.test_w12_kernels import weight_with_escapes

from specpilot.formats import w12
from specpilot.formats.w12 import BLOCK
from specpilot.kernels import launch, w12_tokens
from specpilot.kernels.w12_linear import w12_linear_reference

DEVICE = "cuda"  # (kernels/emulate.py's runs on the CPU set "cpu")


def single_weight_fit(err: torch.Tensor, x: torch.Tensor) -> dict:
    """The input column c whose x[:, c] best explains err [M] as dw * x[:, c] (least squares):
    c, dw and the share of err's energy left over (0: one weight explains it all)."""
    xx = x.double()
    e = err.double()
    dw = (xx * e[:, None]).sum(0) / (xx * xx).sum(0).clamp_min(1e-30)
    left = ((e[:, None] - dw * xx) ** 2).sum(0) / (e * e).sum().clamp_min(1e-30)
    c = int(left.argmin())
    return dict(column=c, dw=float(dw[c]), left=float(left[c]))


def escapes_of(packed, row: int) -> list[int]:
    start, end = int(packed.row_ptr[row]), int(packed.row_ptr[row + 1])
    return packed.esc_col[start:end].tolist()


def place(c: int) -> dict:
    """Column c's place in w12_tokens' k-steps: its stage of 4 blocks, the block (the warp), the
    half block and position in it (pair order is ignored: c is x's natural column)."""
    block = c // BLOCK
    return dict(stage=block // 4, warp=block % 4, half=(c % BLOCK) // (BLOCK // 2))


def probe(seed: int, n: int, k: int, m: int, runs: int, pdl_off: bool) -> list[dict]:
    gen = torch.Generator().manual_seed(seed)
    w = weight_with_escapes(n, k, gen)
    x = (3 * torch.randn(m, k, generator=gen)).to(torch.bfloat16)
    floor = order_floor(x, w).to(DEVICE)
    packed = w12.encode(w.to(DEVICE))
    x = x.to(DEVICE)
    ref = w12_linear_reference(x, packed).float()
    wd = w.float().to(DEVICE)
    rows = []
    no_pdl = dict(PDL=False, launch_pdl=False)
    settings = mock.patch.object(launch, "pdl", lambda *a, **kw: no_pdl)
    with settings if pdl_off else contextlib.nullcontext():
        for name, tile in (("t2", dict(STAGES=2)), ("t4", dict(STAGES=4, SLOTS=4, ESC_BATCH=0))):
            if w12_tokens.geometry(w12_tokens.TILE | tile, k)["shared"] > w12_tokens.SHARED_LIMIT:
                continue
            ys = [w12_tokens.w12_tokens_linear(x, packed, tile).float() for _ in range(runs)]
            differ = sorted({int(c) for y in ys[1:] for c in (y != ys[0]).any(0).nonzero()})
            before = len(rows)
            for r, y in enumerate(ys):
                off = ((y - ref).abs() > ref.abs() * 2**-5 + floor).any(0).nonzero().flatten()
                for col in off.tolist():
                    fit = single_weight_fit((y - ref)[:, col].cpu(), x.float().cpu())
                    c = fit["column"]
                    rows.append(dict(seed=seed, m=m, tile=name, pdl_off=pdl_off, run=r,
                                     row=col, tile16=col // 16, lane_row=col % 16,
                                     tokens_off=int(((y - ref).abs()[:, col] > ref.abs()[:, col]
                                                     * 2**-5 + floor[:, col]).sum()),
                                     max_err=float((y - ref)[:, col].abs().max()), **fit,
                                     weight=float(wd[col, c]), escape=c in escapes_of(packed, col),
                                     **place(c), runs_differ=differ[:20]))  # fmt: skip
            if len(rows) == before:
                rows.append(dict(seed=seed, m=m, tile=name, pdl_off=pdl_off, runs=runs,
                                 clean=True, runs_differ=differ[:20]))  # fmt: skip
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=3, help="seeds: the test's (k + m), then more")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tokens", default="16,9")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    n = k = 4096
    found = []
    for m in (int(t) for t in args.tokens.split(",")):
        for s in range(args.seeds):
            for pdl_off in (False, True):
                found += probe(k + m + 1000 * s, n, k, m, args.runs, pdl_off)
    print(f"{'seed':>6} {'m':>3} {'tile':>4} {'pdl':>4} {'run':>3} {'row':>5} {'tile16':>6} "
          f"{'off':>3} {'err':>7} {'col':>5} {'dw':>9} {'left':>6} {'weight':>9} esc stage warp "
          "half differ")  # fmt: skip
    for f in found:
        pdl = "off" if f["pdl_off"] else "on"
        if f.get("clean"):
            print(f"{f['seed']:>6} {f['m']:>3} {f['tile']:>4} {pdl:>4}   clean in "
                  f"{f['runs']} runs; differ {f['runs_differ']}")  # fmt: skip
            continue
        print(f"{f['seed']:>6} {f['m']:>3} {f['tile']:>4} {pdl:>4} {f['run']:>3} {f['row']:>5} "
              f"{f['tile16']:>6} {f['tokens_off']:>3} {f['max_err']:>7.3f} {f['column']:>5} "
              f"{f['dw']:>9.4f} {f['left']:>6.3f} {f['weight']:>9.4f} {int(f['escape']):>3} "
              f"{f['stage']:>5} {f['warp']:>4} {f['half']:>4} {f['runs_differ'][:6]}")  # fmt: skip
    card = torch.cuda.get_device_name() if DEVICE == "cuda" else DEVICE
    off = sum(1 for f in found if not f.get("clean"))
    finish(dict(bench="w12_tokens_probe", device=card, found=found, off=off), args.out)


if __name__ == "__main__":
    main()
