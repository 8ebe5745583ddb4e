"""The draft head's multiply with FP8 weights against bf16 (kernels/linear.skinny_linear), per
tile, on the GPU: the time of one [rows, hidden] x [vocab, hidden]^T multiply and its bandwidth
on the bytes it reads, so that formats/fp8's tile can be chosen from measurements.

Each variant is timed as the median of --repeats rounds of LAUNCHES launches back to back (CUDA
events around each round), after --warmup launches; the head (0.6-1.2 GB) is larger than L2, so
each launch reads it from HBM. The random head's argmax with FP8 weights is compared with bf16's
per row (a check that the scales are applied; acceptance on a real pair:
bench/draft_head_acceptance.py). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import itertools

import torch
from report import finish  # bench/ is on sys.path when run as a script

from specpilot.formats import fp8
from specpilot.kernels import tiles as tiles_files
from specpilot.kernels.linear import skinny_linear, tile_config, tile_rows
from specpilot.models.synth import TARGET_PRESETS

GRID = dict(
    W_LEFT=(True, False),
    BLOCK_N=(64, 128, 256),
    BLOCK_K=(128, 256),
    num_warps=(4, 8),
    num_stages=(3, 4),
)
# launches between two events: one launch's host time (~20-40 us for a Triton launch) would
# otherwise count whenever it exceeds the kernel's
LAUNCHES = 10


def time_us(fn, warmup: int, repeats: int) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(LAUNCHES):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / LAUNCHES)
    return sorted(times)[len(times) // 2]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="qwen3-8b", choices=sorted(TARGET_PRESETS))
    p.add_argument("--rows", type=int, default=15, help="a b16 draft's block - 1")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--grid", default="full", choices=("full", "none"))
    p.add_argument("--tiles-out", help="a tiles file (EngineConfig.tiles) with the best FP8 tile")
    p.add_argument("--out")
    args = p.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("fp8_head.py times the GPU kernels: no CUDA here")
    hf = TARGET_PRESETS[args.model]
    vocab, hidden = hf["vocab_size"], hf["hidden_size"]
    gen = torch.Generator(device="cuda").manual_seed(0)
    w = (torch.randn(vocab, hidden, device="cuda", generator=gen) * 0.02).to(torch.bfloat16)
    x = torch.randn(args.rows, hidden, device="cuda", generator=gen).to(torch.bfloat16)
    q = fp8.quantize(w)
    bf16_bytes, fp8_bytes = w.numel() * 2, q.nbytes()
    base_cfg = tile_config(args.rows, vocab, hidden)
    rows = []
    base_us = time_us(lambda: skinny_linear(x, w), args.warmup, args.repeats)
    rows.append({"weights": "bf16", "tile": base_cfg, "us": base_us,
                 "tb_s": bf16_bytes / base_us / 1e6})  # fmt: skip
    same = (skinny_linear(x, q).argmax(-1) == skinny_linear(x, w).argmax(-1)).float().mean()
    candidates = [dict(base_cfg)]
    if args.grid == "full":
        for values in itertools.product(*GRID.values()):
            tile = dict(base_cfg) | dict(zip(GRID, values, strict=True))
            if tile not in candidates:
                candidates.append(tile)
    for tile in candidates:
        try:
            us = time_us(lambda t=tile: skinny_linear(x, q, config=t), args.warmup, args.repeats)
        except Exception as exc:  # noqa: BLE001 - a tile that does not compile or fit: reported
            rows.append({"weights": "fp8", "tile": tile, "error": f"{type(exc).__name__}"})
            continue
        rows.append({"weights": "fp8", "tile": tile, "us": us, "tb_s": fp8_bytes / us / 1e6,
                     "vs_bf16": base_us / us})  # fmt: skip
    timed = [r for r in rows if "us" in r]
    best = min((r for r in timed if r["weights"] == "fp8"), key=lambda r: r["us"])
    for r in sorted(timed, key=lambda r: r["us"])[:12]:
        t = r["tile"]
        left = "left " if t.get("W_LEFT") else "right"
        print(f"{r['weights']:<5} {left} N{t['BLOCK_N']:<4} K{t['BLOCK_K']:<4} "
              f"w{t.get('num_warps', 4)} "
              f"s{t.get('num_stages', 3)}  {r['us']:8.1f} us  {r['tb_s']:.2f} TB/s")  # fmt: skip
    default = rows[1].get("us", float("nan"))  # the fp8 weights on the bf16 head's tile
    print(f"bf16 {base_us:.1f} us; fp8 on its tile {default:.1f} us, best {best['us']:.1f} us "
          f"({base_us / best['us']:.2f}x); argmax agreement {same:.4f}")  # fmt: skip
    if args.tiles_out:
        keep = {k: v for k, v in best["tile"].items() if k in tiles_files.TILE_KEYS["fp8"]}
        tiles_files.write(args.tiles_out, {"fp8": {(tile_rows(args.rows), vocab, hidden): keep}})
    report = {
        "bench": "fp8_head",
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "model": args.model,
        "rows": args.rows,
        "shape": [vocab, hidden],
        "bytes": {"bf16": bf16_bytes, "fp8": fp8_bytes},
        "argmax_agreement_random": float(same),
        "best_fp8": best,
        "variants": rows,
    }
    finish(report, args.out)


if __name__ == "__main__":
    main()
