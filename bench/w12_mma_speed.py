"""kernels/w12_mma.py against the W12 and bf16 multiplies it would replace (H200, one process).

At each multiply of the target's layer (--model; 1-16 token rows, --rows), with weights read from
HBM (kernel_sweep's cycled copies) inside a CUDA graph of 20 calls (graph_time): bf16
skinny_linear (default tiles), w12_linear (default tiles), and w12_mma_linear with its default
tile and each tile of the sweep (WARPS_N x WARPS_K warps, TILES row tiles a warp). Every W12
output is first checked against the reference (decode, then multiply); a wrong one stops the
bench. Bandwidth is of each kernel's own bytes (bf16: 2 a weight; W12: its arrays) against the
measured copy bandwidth. Prints a table; the last line is one JSON object.
"""

from __future__ import annotations

import argparse

import torch

# run as a script from the repository root: bench/ is on sys.path
from engine_speed import copy_bandwidth  # noqa: E402
from kernel_sweep import MODELS, cycled, graph_time, layer_shapes  # noqa: E402
from report import finish  # noqa: E402

from specpilot.formats import w12
from specpilot.kernels import w12_mma
from specpilot.kernels.linear import skinny_linear
from specpilot.kernels.w12_linear import w12_linear, w12_linear_reference

SWEEP = [
    dict(WARPS_N=wn, WARPS_K=wk, TILES=tiles)
    for wn, wk, tiles in [(1, 2, 1), (1, 4, 1), (1, 8, 1), (2, 2, 1), (2, 4, 1), (4, 1, 1),
                          (2, 1, 1), (2, 1, 2), (1, 4, 2)]
]  # fmt: skip


def check(y: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    """Within 2 half-ulps of the reference where entries are at least a tenth of the largest
    (tests/test_kernels.close's rule)."""
    a, e = y.float(), expected.float()
    tol = 2 * 2**-8 * e.abs().clamp(min=e.abs().max().item() / 10)
    bad = int((~((a - e).abs() <= tol)).sum())
    if bad:
        raise SystemExit(f"{what}: {bad} of {e.numel()} outputs off the reference")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="qwen3-8b", choices=MODELS)
    parser.add_argument("--rows", default="1", help="token rows, comma-separated (1-16)")
    parser.add_argument("--shapes", default="qkv,o,gate_up,down")
    parser.add_argument("--no-sweep", action="store_true", help="default mma tiles only")
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.manual_seed(0)
    bandwidth = copy_bandwidth()
    shapes = layer_shapes(args.model)
    rows_list = [int(r) for r in args.rows.split(",")]
    table = []
    print(f"{torch.cuda.get_device_name()}, copy bandwidth {bandwidth / 1e12:.2f} TB/s")
    for name in args.shapes.split(","):
        n, k = shapes[name]
        w = (torch.randn(n, k, device="cuda") * 0.02).to(torch.bfloat16)
        packed = w12.encode(w, 128)
        w12_bytes, bf16_bytes = packed.nbytes(), 2 * n * k
        next_w, next_p = cycled(w), cycled(packed)
        for m in rows_list:
            x = torch.randn(m, k, device="cuda").to(torch.bfloat16)
            expected = w12_linear_reference(x, packed)
            check(w12_linear(x, packed), expected, f"w12_linear {name} {m}")
            arms = {
                "bf16": (lambda x=x, f=next_w: skinny_linear(x, f()), bf16_bytes),
                "w12": (lambda x=x, f=next_p: w12_linear(x, f()), w12_bytes),
            }
            for cfg in [None] + ([] if args.no_sweep else SWEEP):
                if cfg is not None and (k // w12.BLOCK) % cfg["WARPS_K"]:
                    continue
                label = (
                    "mma"
                    if cfg is None
                    else "mma " + "x".join(str(cfg[key]) for key in ("WARPS_N", "WARPS_K", "TILES"))
                )
                try:  # a tile may not fit (shared memory) or take these rows: reported, skipped
                    y = w12_mma.w12_mma_linear(x, packed, config=cfg)
                except Exception as exc:  # noqa: BLE001
                    print(f"{name:8} {m:2} {label:14} skipped: {type(exc).__name__}")
                    continue
                check(y, expected, f"{label} {name} {m}")
                arms[label] = (
                    lambda x=x, f=next_p, c=cfg: w12_mma.w12_mma_linear(x, f(), config=c),
                    w12_bytes,
                )
            for label, (fn, nbytes) in arms.items():
                t = graph_time(fn)
                row = dict(shape=name, n=n, k=k, rows=m, kernel=label, us=t * 1e6,
                           tb_s=nbytes / t / 1e12, of_copy=nbytes / t / bandwidth)  # fmt: skip
                table.append(row)
                print(f"{name:8} {m:2} {label:14} {t * 1e6:8.2f} us {row['tb_s']:6.2f} TB/s "
                      f"{row['of_copy']:6.1%}")  # fmt: skip
    best = {}
    for row in table:
        key = (row["shape"], row["rows"])
        if row["kernel"].startswith("mma") and row["us"] < best.get(key, {"us": 1e9})["us"]:
            best[key] = row
    print("shape    rows   bf16 us   w12 us   mma us  best mma (tile)  best/w12  TB/s (W12 bytes)")
    for (name, m), row in best.items():
        ref = {r["kernel"]: r for r in table if (r["shape"], r["rows"]) == (name, m)}
        print(f"{name:8} {m:4} {ref['bf16']['us']:9.2f} {ref['w12']['us']:8.2f} "
              f"{ref['mma']['us']:8.2f} {row['us']:8.2f} ({row['kernel'][4:] or 'default'}) "
              f"{ref['w12']['us'] / row['us']:8.2f}x {row['tb_s']:6.2f}")  # fmt: skip
    report = dict(bench="w12_mma_speed", gpu=torch.cuda.get_device_name(), model=args.model,
                  copy_bandwidth_tb_s=bandwidth / 1e12, l2="cold", table=table)  # fmt: skip
    finish(report, args.out)


if __name__ == "__main__":
    main()
