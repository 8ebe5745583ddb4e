"""kernels/w12_tokens.py (16-row mma.sync tiles, the tokens in B's columns, no K split) beside
kernels/w12_tc.py (the verify's W12 kernel: 64-row wgmma units, o and the down split in K with a
split-sum launch after) at a target's K-4096 shapes, 1-16 tokens, on the GPU; at one token
beside kernels/w12_row.py's one-row tile too (ONE_ROW_TILE's: the decode's multiply).

Why: run 339's verify graph (H200) spent 9.44 + 2.51 us a layer on o and its split sum against
a 5.96 bound, where the one-row o takes 7.81. Each kernel is checked against the reference
(w12_speed.check), then timed in CUDA graphs with the weights cycled from HBM (cold L2): o with
the residual as the verify runs it, q|k|v and gate|up plain (their norm and SwiGLU left out on
both sides). At one token w12_tokens reads its planes conflict-free where w12_row's MMA tiles
(run 343) did not: whether the mma decode beats the FFMA tile there. The bound: the W12 bytes at
the copy bandwidth measured in the same process. The down (K past max_k) runs with x streamed
(STREAM_TILES: x's ring and round sizes). Prints a table (us, and the bound over the
time); the last line is one JSON object.

    python bench/w12_tokens_speed.py --model qwen3-8b --tokens 16,8,1 --out tokens.json
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from engine_speed import copy_bandwidth  # bench/ is on sys.path as a script
from kernel_sweep import cycled, layer_shapes
from report import finish, save
from w12_join import micros, timed_entry
from w12_speed import check

from specpilot.formats import w12
from specpilot.kernels import w12_row, w12_tc, w12_tokens
from specpilot.kernels.w12_linear import w12_linear_reference
from specpilot.kernels.w12_ws import pair_order

TILES = {"t2": dict(STAGES=2), "t2s4": dict(STAGES=2, SLOTS=4)}
# past max_k (the down): x streamed (w12_tokens' TILE keys XS, TILES)
STREAM_TILES = {"x2t2": dict(XS=2, TILES=2), "s4x2t2": dict(STAGES=4, XS=2, TILES=2),
                "s4x3t2": dict(STAGES=4, XS=3, TILES=2), "x2t1": dict(XS=2, TILES=1),
                "s4x3t1": dict(STAGES=4, XS=3, TILES=1)}  # fmt: skip


def tiles_for(k: int) -> dict:
    """The w12_tokens tiles timed at K: TILES where x fits, else STREAM_TILES."""
    return TILES if k <= w12_tokens.max_k() else STREAM_TILES


def bench_shape(name: str, n: int, k: int, m: int, bandwidth: float) -> dict:
    """One shape at m tokens: cuBLAS bf16, w12_tc (its own K split and split sum) and each of
    TILES on w12_tokens, checked, then timed cold."""
    w = (torch.randn(n, k, device="cuda") * 0.02).to(torch.bfloat16)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    packed = w12.encode(w)
    xp = pair_order(x)
    kw = {}
    if name in ("o", "down"):  # as the verify runs them
        kw["residual"] = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    ref = w12_linear_reference(x, packed, **kw)
    ws, ps = cycled(w, True), cycled(packed, True)
    nbytes = packed.nbytes_bound()
    row = dict(shape=name, m=m, n=n, k=k, w12_bytes=nbytes, bound_us=nbytes / bandwidth * 1e6,
               epilogue="residual" if kw else "plain", kernels={})  # fmt: skip
    row["kernels"]["cublas_bf16"] = {"us": micros(lambda: F.linear(x, ws()))}
    calls = {"w12_tc": lambda g: w12_tc.w12_tc_linear(xp, g, x_order="pair", **kw)}
    if m == 1:  # the one-row decode's kernel (w12_row, ONE_ROW_TILE's tile), x as it is
        one_row = w12_row.ROW_TILES[w12_row.ONE_ROW_TILE]
        calls["w12_row"] = lambda g: w12_row.w12_row_linear(x, g, one_row, **kw)
    for label, tile in tiles_for(k).items():
        calls[label] = lambda g, t=tile: w12_tokens.w12_tokens_linear(xp, g, t, x_order="pair",
                                                                      **kw)  # fmt: skip
    for label, call in calls.items():  # (w12_join.timed_entry: us and TB/s, or the error)

        def checked(c=call, what=f"{name} m{m} {label}"):
            check(c(packed), ref, what)

        row["kernels"][label] = timed_entry({}, checked, lambda c=call: c(ps()), nbytes)
    return row


def line(row: dict, labels: list[str]) -> str:
    cells = []
    for label in labels:
        entry = row["kernels"].get(label)  # (none: not run at this m)
        if entry is None or "us" not in entry:
            cells.append(f"{'-' if entry is None else 'error':>12}")
        else:
            cells.append(f"{entry['us']:7.2f} {row['bound_us'] / entry['us']:4.0%}")
    return f"{row['shape']:<8} {row['m']:>3} {row['bound_us']:6.2f} " + " ".join(cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen3-8b", choices=("qwen3-8b", "llama3.1-8b"))
    parser.add_argument("--shapes", default="o,qkv,gate_up",
                        help="comma-separated (down: x streamed, STREAM_TILES)")  # fmt: skip
    parser.add_argument("--tokens", default="16,8,1", help="comma-separated token counts, 1-16")
    parser.add_argument("--fence", type=int, default=w12_tokens.FENCE, choices=range(8),
                        help="w12_tokens.FENCE (its fences' bits, 0-7; without 4 outputs "
                        "may be wrong) for every run")  # fmt: skip
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("w12_tokens_speed needs CUDA")
    w12_tokens.FENCE = args.fence
    shapes = layer_shapes(args.model)
    names = args.shapes.split(",")
    bad = [s for s in names if s not in shapes or s == "lm_head"]
    if bad:
        raise SystemExit(f"--shapes: {bad} unknown (qkv, o, gate_up, down)")
    bandwidth = copy_bandwidth()
    labels = ["cublas_bf16", "w12_tc", "w12_row"]
    labels += list(dict.fromkeys(t for s in names for t in tiles_for(shapes[s][1])))
    print(f"copy bandwidth {bandwidth / 1e12:.3f} TB/s; us, and the W12 bytes' bound over it")
    print(f"{'shape':<8} {'m':>3} {'bound':>6} " + " ".join(f"{lb:>12}" for lb in labels))
    rows = []
    for name in names:
        for m in (int(t) for t in args.tokens.split(",")):
            rows.append(bench_shape(name, *shapes[name], m, bandwidth))
            print(line(rows[-1], labels), flush=True)
            save(dict(model=args.model, rows=rows, partial=True), args.out)
    finish(dict(bench="w12_tokens_speed", model=args.model, gpu=torch.cuda.get_device_name(),
                fence=args.fence, copy_bandwidth_tb_s=bandwidth / 1e12, rows=rows),
           args.out)  # fmt: skip


if __name__ == "__main__":
    main()
