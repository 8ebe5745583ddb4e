"""Where a certified LM head's time goes (kernels/linear.certified_argmax), one process on a GPU.

At a head shape (default Qwen3-8B's 151,936 x 4,096, random normal weights, std 0.02) and 1 and
16 input rows (random normal, the RMSNorm prologue; `--prologue none`: none, as a handed norm's
one-row head sums its one row's squares), each launch timed alone with CUDA events
(warm-up, then `--iters` launches, the median): the exact head (skinny_linear, then the argmax
launch), the FP8 head of the same shape (8-bit weights: the bandwidth an 8-bit multiply reaches
here), and the certified head on each tile of `--tiles` (tiles files' "certified" entries;
"compiled": the compiled-in ones), with its deferral and its gathered exact pass (COMPACT) on
and off, and with its radius scaled: x1 (the real head), x0 (about one candidate a program)
and x -1e30 (every row dropped: the int8 multiply and the epilogue without an exact pass).
Scaled radii give wrong tokens: timing only.
Prints a table; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
from report import finish  # bench/ is on sys.path when run as a script

from specpilot.formats import fp8
from specpilot.formats.certified import CertifiedHead, certify
from specpilot.kernels import certified, tiles, tokens
from specpilot.kernels.linear import certified_argmax, skinny_linear


def timed(fn, iters: int) -> float:
    """Median microseconds of fn() over `iters` launches, each between two events (on a CPU,
    the interpreter's wall time: a dry run of the script, not a measurement)."""
    for _ in range(3):
        fn()
    if not torch.cuda.is_available():
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e6
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=151936)
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--rows", default="1,16")
    parser.add_argument(
        "--tiles", default="compiled", help="tiles files, comma-separated; compiled: built-in"
    )
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--prologue", default="norm", choices=("norm", "none"))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gen = torch.Generator(device=dev).manual_seed(0)
    w = (torch.randn(args.n, args.k, device=dev, generator=gen) * 0.02).to(torch.bfloat16)
    head = certify(w)
    q = fp8.quantize(w)
    nw = torch.ones(args.k, device=dev, dtype=torch.bfloat16) if args.prologue == "norm" else None
    bandwidth_bytes = {"bf16": w.numel() * 2, "int8": head.weight.numel()}
    rows_out = []
    for m in (int(r) for r in args.rows.split(",")):
        x = torch.randn(m, args.k, device=dev, generator=gen).to(torch.bfloat16)
        ids = torch.zeros(1, m, device=dev, dtype=torch.long) if m > 1 else None

        def exact(x=x, ids=ids, m=m) -> None:
            logits = skinny_linear(x, w, norm_weight=nw)
            if ids is None:
                tokens.argmax_rows(logits)
            else:
                tokens.argmax_accept(logits.view(1, m, -1), ids)

        measured = {"exact head + argmax": timed(exact, args.iters)}
        measured["fp8 head, no argmax"] = timed(lambda x=x: skinny_linear(x, q, norm_weight=nw),
                                                 args.iters)  # fmt: skip
        want = skinny_linear(x, w, norm_weight=nw).argmax(-1)
        for path in args.tiles.split(","):
            before = tiles.install(tiles.read(path)) if path != "compiled" else None
            name = "compiled" if path == "compiled" else Path(path).stem
            for compact, defer in ((1, -1), (1, 0), (0, -1), (0, 0)):
                certified.DEFER_TILES, certified.COMPACT = defer, compact
                for factor in (1.0, 0.0, -1e30):
                    scaled = CertifiedHead(head.exact, head.weight, head.scale,
                                           head.radius * factor)  # fmt: skip
                    label = f"certified {name} compact={compact} defer={defer} radius x{factor:g}"

                    def run(scaled=scaled, x=x, ids=ids) -> None:
                        certified_argmax(x, scaled, norm_weight=nw, ids=ids)

                    measured[label] = timed(run, args.iters)
                    if factor == 1.0:
                        found, _ = certified_argmax(x, scaled, norm_weight=nw, ids=ids)
                        same = (found == want).float().mean().item()
                        measured[label + " (tokens = exact argmax)"] = same
            certified.DEFER_TILES, certified.COMPACT = -1, 1
            if before is not None:
                tiles.restore(before)
        for label, value in measured.items():
            if label.endswith("argmax)"):
                print(f"rows {m:>2}  {label:<68} {value:.3f}")
                continue
            kind = "bf16" if label.startswith("exact") else "int8"  # the FP8 head: 8 bits too
            tb_s = bandwidth_bytes[kind] / (value * 1e-6) / 1e12
            print(f"rows {m:>2}  {label:<68} {value:8.1f} us  {tb_s:5.2f} TB/s on {kind} bytes")
        rows_out.append({"rows": m, "us_or_fraction": measured})
    gpu = torch.cuda.get_device_name() if dev.type == "cuda" else "cpu (dry run)"
    report = {"bench": "certified_speed", "gpu": gpu, "n": args.n, "k": args.k,
              "prologue": args.prologue, "results": rows_out}  # fmt: skip
    finish(report, args.out)


if __name__ == "__main__":
    main()
