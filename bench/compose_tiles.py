"""One tiles file composed from a kernel timeline's variants (bench/timeline.py --variants), each
variant a tiles file (EngineConfig.tiles): for every multiply shape of the chosen forwards (the
target's decode and verify by default, bf16 tiles; `--kind fp8 --forwards draft` for the FP8
drafter's), the tile of the variant whose launches of that shape ran fastest inside the
captured graphs, where it beats the base variant by at least --min-gain. An isolated sweep's
winner does not always win in the graph (docs/LOG.md runs 137-138, 163), and different shapes
may want different families; this takes each shape's winner from the same process and models.

The composed file then goes into a paired end-to-end run against the base (engine_speed
--paired "base|;composed|--tiles FILE"). Prints a line a shape; the last line is one JSON
object.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from cost_model import read_report  # bench/ is on sys.path when run as a script
from report import finish

from specpilot.kernels import tiles as tiles_files
from specpilot.kernels.linear import tile_rows

FORWARDS = ("decode", "verify")
# the timeline's label of each kind's launches ("linear MxNxK", ...)
LABELS = {"bf16": "linear", "fp8": "linear", "w12": "w12_linear", "certified": "certified_head"}


def shape_times(
    report: dict,
    arm: str,
    variant: str,
    forwards: tuple[str, ...] = FORWARDS,
    label: str = "linear",
) -> dict[tuple[int, int, int], float]:
    """(rows, N, K) -> us a launch of the multiply `label` ("linear MxNxK": the skinny
    multiply's) in the variant's forwards."""
    out = {}
    for forward in forwards:
        shapes = report["arms"][f"{arm} {variant}"][forward]["shapes"]
        for name, entry in shapes.items():
            kind, _, dims = name.partition(" ")
            if kind != label:
                continue
            m, n, k = (int(v) for v in dims.split("x"))
            out[m, n, k] = entry["run_us_each"]
    return out


def compose(
    report: dict,
    arm: str,
    base: str,
    min_gain: float,
    kind: str = "bf16",
    forwards: tuple[str, ...] = FORWARDS,
) -> tuple[dict, list[dict]]:
    """The composed table of the kind {(table rows, N, K): tile} and a row a shape: the base's
    time, the fastest variant offering a tile for it, its time, and whether it was taken."""
    files = {
        name: options.get("tiles")
        for name, options in report["variants"].items()
        if name != base and options.get("tiles")
    }
    label = LABELS[kind]
    base_times = shape_times(report, arm, base, forwards, label)
    offers: dict[tuple[int, int, int], list[tuple[float, str, dict]]] = {}
    for name, path in files.items():
        table = tiles_files.read(path)[kind]
        for (m, n, k), us in shape_times(report, arm, name, forwards, label).items():
            tile = table.get((tile_rows(m), n, k))
            if tile is not None:
                offers.setdefault((m, n, k), []).append((us, name, tile))
    chosen: dict[tuple[int, int, int], dict] = {}
    rows = []
    for shape, candidates in sorted(offers.items()):
        us, name, tile = min(candidates, key=lambda c: c[0])
        was = base_times.get(shape)
        take = was is not None and us <= was * (1 - min_gain)
        key = (tile_rows(shape[0]), shape[1], shape[2])
        if take and key in chosen and chosen[key] != tile:  # 2-16 rows share a table row
            take = False
        if take:
            chosen[key] = tile
        rows.append(dict(shape=list(shape), base_us=was, best=name, best_us=us, taken=take))
    return chosen, rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("timeline", help="a bench/timeline.py --variants report (.json or .json.gz)")
    p.add_argument("--arm", default="bf16", help="the timeline's weight arm")
    p.add_argument("--base", default="base", help="the variant the others must beat")
    p.add_argument("--min-gain", type=float, default=0.01, help="fraction of the base's time")
    p.add_argument(
        "--kind",
        default="bf16",
        choices=sorted(tiles_files.TILE_KEYS),
        help="the tiles' kernel (fp8: the FP8 drafter's multiplies; certified: the certified "
        "LM head's)",
    )
    p.add_argument(
        "--forwards",
        default=",".join(FORWARDS),
        help="comma-separated forwards whose launches are timed (decode, verify, draft)",
    )
    p.add_argument("--tiles-out", required=True, help="the composed tiles file")
    p.add_argument("--out")
    args = p.parse_args()
    report = read_report(args.timeline)
    if args.base not in report.get("variants", {}):
        p.error(f"{args.timeline}: no variant {args.base!r} (has {sorted(report['variants'])})")
    forwards = tuple(f for f in args.forwards.split(",") if f)
    if not forwards or set(forwards) - {"decode", "verify", "draft"}:
        p.error(f"--forwards: wants some of decode, verify, draft, got {args.forwards!r}")
    chosen, rows = compose(report, args.arm, args.base, args.min_gain, args.kind, forwards)
    for r in rows:
        m, n, k = r["shape"]
        base = f"{r['base_us']:8.2f}" if r["base_us"] is not None else "       -"
        print(f"linear {m}x{n}x{k:<6} base {base} us; {r['best']:<12} {r['best_us']:8.2f} us"
              f"{'  taken' if r['taken'] else ''}")  # fmt: skip
    tiles_files.write(args.tiles_out, {args.kind: chosen})
    print(f"{len(chosen)} tiles into {Path(args.tiles_out)}")
    finish({"bench": "compose_tiles", "timeline": args.timeline, "arm": args.arm,
            "base": args.base, "min_gain": args.min_gain, "kind": args.kind,
            "forwards": list(forwards), "shapes": rows,
            "tiles": len(chosen)}, args.out)  # fmt: skip


if __name__ == "__main__":
    main()
