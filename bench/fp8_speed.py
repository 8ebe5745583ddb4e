"""The drafter's multiplies with FP8 weights against bf16 (kernels/linear.skinny_linear), per
tile, on the GPU: for each shape (the draft head, and with --shapes drafter the drafter's own
projections), the time of one [rows, K] x [N, K]^T multiply and its bandwidth on the bytes it
reads, so that the FP8 tiles (linear.FP8_TILES) can be chosen from measurements.

Each variant is timed as the median of --repeats replays of a CUDA graph of LAUNCHES launches
(CUDA events around each replay), after --warmup launches. Each launch reads the next of as many
copies of the weight as make COLD_BYTES, more than L2 holds, so every launch reads its weight
from HBM as in a forward. (Run 178 timed plain launches: the host's launch time, ~55-100 us,
hid every multiply but the head's.) The random head's argmax with FP8 weights is compared with
bf16's per row (a check that the scales are applied; acceptance on a real pair:
bench/draft_head_acceptance.py). (Runs 176-177 swept the head alone, as bench/fp8_head.py.)
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import itertools

import torch
from kernel_sweep import graph_time  # bench/ is on sys.path when run as a script
from report import finish

from specpilot.config import DraftConfig
from specpilot.formats import fp8
from specpilot.kernels import tiles as tiles_files
from specpilot.kernels.linear import skinny_linear, tile_config, tile_rows
from specpilot.models.synth import TARGET_PRESETS, draft_hf_config

# the head's grid (run 177: 48 tiles) and the drafter's projections' (smaller N, 4 warps there)
GRID = dict(
    W_LEFT=(True, False),
    BLOCK_N=(64, 128, 256),
    BLOCK_K=(128, 256),
    num_warps=(4, 8),
    num_stages=(3, 4),
)
# run 179's drafter grid (BLOCK_N 16-128, BLOCK_K 128-256, 3-4 stages) found 256 columns, 4
# stages and few rows best, at 1.7-2.4 TB/s on the small shapes: now wider steps and K splits
DRAFTER_GRID = dict(
    W_LEFT=(True, False), BLOCK_N=(16, 32, 64), BLOCK_K=(256, 512), SPLIT_K=(1, 2, 4),
    num_stages=(4,),
)  # fmt: skip
COLD_BYTES = 256 << 20
# launches a timed graph holds
LAUNCHES = 12


def time_us(fn, warmup: int, repeats: int) -> float:
    """Device time of one fn() launch: LAUNCHES of them captured in a CUDA graph, the median of
    `repeats` replays over LAUNCHES (a Triton launch costs the host more than a small multiply
    takes on the device, so plain launches would time the host)."""
    return graph_time(fn, LAUNCHES, repeats, warmup=warmup, settle=True) * 1e6


def shapes(model: str, which: str) -> dict[str, tuple[int, int]]:
    """(N, K) of the multiplies to sweep, by name: the draft head, and the drafter's own."""
    hf = TARGET_PRESETS[model]
    out = {"head": (hf["vocab_size"], hf["hidden_size"])}
    if which == "drafter":
        d = DraftConfig.from_hf(draft_hf_config("dflash-b16", hf))
        h, q, kv = d.hidden_size, d.num_heads * d.head_dim, d.num_kv_heads * d.head_dim
        out |= {
            "q|k|v": (q + 2 * kv, h),
            "k|v": (2 * kv, h),
            # every layer's k|v at once: the new context's (models/fused.DRAFT_CONTEXT_ONCE)
            "k|v layers": (d.num_layers * 2 * kv, h),
            "o": (h, q),
            "gate|up": (2 * d.intermediate_size, h),
            "down": (h, d.intermediate_size),
            "fc": (h, len(d.target_layer_ids) * h),
        }
    return out


def sweep(name: str, n: int, k: int, args: argparse.Namespace) -> list[dict]:
    """bf16 on its tile, then FP8 on the bf16 tile and on the grid: rows of the report."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    w = (torch.randn(n, k, device="cuda", generator=gen) * 0.02).to(torch.bfloat16)
    x = torch.randn(args.rows, k, device="cuda", generator=gen).to(torch.bfloat16)
    copies = max(1, -(-COLD_BYTES // w.nbytes))
    bf16 = [w] + [w.clone() for _ in range(copies - 1)]
    q = fp8.quantize(w)  # once; the cold copies are clones of its arrays
    fp8_weights = [q] + [
        fp8.Fp8Weight(q.weight.clone(), q.scale.clone()) for _ in range(copies - 1)
    ]
    bf16_bytes, fp8_bytes = w.nbytes, fp8_weights[0].nbytes()
    base_cfg = tile_config(args.rows, n, k)
    turn = itertools.count()

    def run(weights, config=None):
        return skinny_linear(x, weights[next(turn) % copies], config=config)

    base_us = time_us(lambda: run(bf16), args.warmup, args.repeats)
    rows = [{"shape": name, "n": n, "k": k, "weights": "bf16", "tile": base_cfg, "us": base_us,
             "tb_s": bf16_bytes / base_us / 1e6}]  # fmt: skip
    grid = GRID if name == "head" else DRAFTER_GRID
    candidates = [dict(base_cfg)]
    if args.grid == "full":
        for values in itertools.product(*grid.values()):
            tile = dict(base_cfg) | dict(zip(grid, values, strict=True))
            if tile not in candidates:
                candidates.append(tile)
    for tile in candidates:
        row = {"shape": name, "n": n, "k": k, "weights": "fp8", "tile": tile}
        try:
            us = time_us(lambda t=tile: run(fp8_weights, t), args.warmup, args.repeats)
        except Exception as exc:  # noqa: BLE001 - a tile that does not compile or fit: reported
            rows.append(row | {"error": f"{type(exc).__name__}"})
            continue
        rows.append(row | {"us": us, "tb_s": fp8_bytes / us / 1e6, "vs_bf16": base_us / us})
    if name == "head":
        q = fp8_weights[0]
        same = (skinny_linear(x, q).argmax(-1) == skinny_linear(x, w).argmax(-1)).float().mean()
        rows[0]["argmax_agreement_random"] = float(same)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="qwen3-8b", choices=sorted(TARGET_PRESETS))
    p.add_argument("--shapes", default="head", choices=("head", "drafter"))
    p.add_argument("--only", default="", help="comma-separated shape names (default: all)")
    p.add_argument("--rows", type=int, default=15, help="a b16 draft's block - 1")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--grid", default="full", choices=("full", "none"))
    p.add_argument("--tiles-out", help="a tiles file (EngineConfig.tiles) of the best FP8 tiles")
    p.add_argument("--out")
    args = p.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("fp8_speed.py times the GPU kernels: no CUDA here")
    rows, best, table = [], {}, {}
    chosen = shapes(args.model, args.shapes)
    only = [name for name in args.only.split(",") if name]
    if unknown := sorted(set(only) - set(chosen)):
        p.error(f"--only: no shape {unknown} with --shapes {args.shapes} (has {sorted(chosen)})")
    for name, (n, k) in chosen.items():
        if only and name not in only:
            continue
        found = sweep(name, n, k, args)
        rows += found
        base = found[0]
        timed = [r for r in found[1:] if "us" in r]
        best[name] = min(timed, key=lambda r: r["us"])
        on_base = found[1].get("us", float("nan"))  # FP8 on the bf16 tile
        t = best[name]["tile"]
        left = "left" if t.get("W_LEFT") else "right"
        print(f"{name:<8} {n:>6} x {k:<5} bf16 {base['us']:7.1f} us ({base['tb_s']:.2f} TB/s); "
              f"fp8 on its tile {on_base:7.1f}, best {best[name]['us']:7.1f} us "
              f"({best[name]['tb_s']:.2f} TB/s, {base['us'] / best[name]['us']:.2f}x): {left} "
              f"N{t['BLOCK_N']} K{t['BLOCK_K']} w{t.get('num_warps', 4)} "
              f"s{t.get('num_stages', 3)}", flush=True)  # fmt: skip
        keep = {key: v for key, v in t.items() if key in tiles_files.TILE_KEYS["fp8"]}
        table[tile_rows(args.rows), n, k] = keep
    if args.tiles_out:
        tiles_files.write(args.tiles_out, {"fp8": table})
    report = {
        "bench": "fp8_speed",
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "model": args.model,
        "rows": args.rows,
        "best_fp8": best,
        "variants": rows,
    }
    finish(report, args.out)


if __name__ == "__main__":
    main()
