"""Where a forward's time goes, launch by launch, from a kernel timeline (bench/timeline.py's
JSON): each kernel's (and multiply shape's) median time from the exit of the launch before it to
its own exit, and their sum over the forward, per variant.

Exit to exit charges a kernel with everything between the previous kernel's end and its own:
its launch, its wait, its first loads landing and its run. Kernels whose "go" marks mean
different things (w12_row's: PDL's wait passed; w12_tc's: its first stage landed) compare
fairly this way, and the sums add up to the forward's span.

    python3 bench/exit_spacing.py timeline-variants-1024-qwen3-8b.json --forward verify
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from cost_model import read_report


def spacing(launches: list[dict]) -> dict[str, dict]:
    """{kernel or "kernel NxK": {"launches", "median_us", "sum_us"}} in first-launch order:
    each launch's time from the exit of the one before (the first launch: its run). A split
    sum is named for the multiply before it ("split_sum<4096x12288")."""
    rows: dict[str, dict] = {}
    for i, launch in enumerate(launches):
        key = launch["kernel"]
        if key == "split_sum" and i:
            key += f"<{launches[i - 1].get('n', 0)}x{launches[i - 1].get('k', 0)}"
        elif "n" in launch:
            key += f" {launch['n']}x{launch.get('k', 0)}"
        since = launch["exit"] - launches[i - 1]["exit"] if i else launch["run"]
        rows.setdefault(key, {"ns": []})["ns"].append(since)
    return {
        key: {
            "launches": len(r["ns"]),
            "median_us": statistics.median(r["ns"]) / 1e3,
            "sum_us": sum(r["ns"]) / 1e3,
        }
        for key, r in rows.items()
    }


def arm_names(arms) -> list[str]:
    """Short names of a timeline's arms ("<weights> <variant>"): the variant alone, or, where the
    run has several weights (bf16 and W12), the weights' kind before it ("w12 rb2")."""
    several = len({arm.split()[0] for arm in arms}) > 1
    return [f"{arm.split()[0].split(':')[0]} {arm.split()[-1]}" if several else arm.split()[-1]
            for arm in arms]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("timeline", type=Path, help="bench/timeline.py's JSON (or .json.gz)")
    parser.add_argument("--forward", default="verify", choices=["decode", "verify", "draft"])
    args = parser.parse_args(argv)
    arms = read_report(str(args.timeline))["arms"]
    table = {arm: spacing(forwards[args.forward]["launches"]) for arm, forwards in arms.items()}
    keys = list(dict.fromkeys(k for rows in table.values() for k in rows))
    names = arm_names(table)
    print(f"{args.forward}: median us from the last exit (sum over the forward, us)")
    print(f"{'kernel':30s}" + "".join(f"{n:>18s}" for n in names))
    for key in keys:
        cells = []
        for rows in table.values():
            r = rows.get(key)
            cells.append(f"{r['median_us']:7.2f} ({r['sum_us']:7.1f})" if r else f"{'-':>16s}")
        print(f"{key:30s}" + "".join(f"{c:>18s}" for c in cells))
    totals = [sum(r["sum_us"] for r in rows.values()) for rows in table.values()]
    print(f"{'span':30s}" + "".join(f"{t:18.1f}" for t in totals))
    print(json.dumps({"bench": "exit_spacing", "forward": args.forward, "arms": table}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
