"""Two multiplies back to back, launched with and without programmatic dependent launch, on one
GPU (no model): where does PDL on a multiply's launch lose?

Run 102 found a one-row multiply launched with PDL right after a multiply slower than one
launched plainly, and runs 50-52 the 16-row multiplies slower with PDL in every forward; run
103 tied the first to PDL on the multiplies' launches ("kernels" launches them plainly). The
guess to test (docs/LOG.md, session 23): a grid launched early by PDL is placed on the SMs that
the kernel before it has already left, several programs an SM where they fit, so a grid of
about one wave (the 16-row o and down: 128 programs) starts unbalanced and keeps it; between
two multiplies every SM frees at about the same time, a small kernel in between frees them all
before the next grid arrives.

For each pair of Qwen3-8B layer shapes (in layer order), each row count, with nothing or an
RMSNorm kernel between them, and each PDL mode (launch.configure: "off" everything plain,
"kernels" the multiplies plain and the norm with PDL, "chain" as "all" at one row but a
multiply right after a multiply plain, "waves" as "all" but a multiply right after a multiply
or with a grid under two programs an SM plain, "all" everything with PDL), PAIRS_A_GRAPH
pairs are captured in one CUDA graph (weights cycled through copies so that none is read from
L2, as in kernel_sweep) and replayed: microseconds a pair, median of the replays; the second
multiply with its default tile and with half its weight rows a program (twice the programs).
Each multiply's programs (grid size) and waves over the SMs are reported with it. Prints a
table; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable

import torch
from engine_speed import copy_bandwidth  # bench/ is on sys.path when run as a script
from kernel_sweep import SHAPES, cycled, graph_time
from report import finish, save

from specpilot.kernels import launch
from specpilot.kernels.elementwise import rmsnorm
from specpilot.kernels.linear import skinny_linear, tile_config

# consecutive multiplies of a layer (and into the next one), as (first, second)
PAIRS = (("o", "gate_up"), ("gate_up", "down"), ("down", "qkv"), ("qkv", "o"))
MODES = ("off", "kernels", "chain", "waves", "all")
BETWEEN = ("none", "norm")
PAIRS_A_GRAPH = 12
REPLAYS = 7
# the second multiply's tile: the default, or "half" its weight rows a program (twice the
# programs: more waves, for the guess above)
VARIANTS = ("default", "half")


def second_tile(rows: int, n: int, k: int, variant: str) -> dict:
    """The second multiply's tile: tile_config's, or with half its BLOCK_N (at least 4)."""
    cfg = tile_config(rows, n, k)
    if variant == "half":
        cfg["BLOCK_N"] = max(4, cfg["BLOCK_N"] // 2)
    return cfg


def programs(rows: int, n: int, k: int, variant: str = "default") -> int:
    """The skinny multiply's grid size for these shapes and tile variant."""
    cfg = second_tile(rows, n, k, variant)
    return -(-n // cfg["BLOCK_N"]) * -(-rows // cfg["BLOCK_M"]) * cfg.get("SPLIT_K", 1)


def pair_launcher(
    first: str, second: str, between: str, rows: int, device: torch.device, variant: str
) -> tuple[Callable[[], None], int]:
    """A function launching one pair (first multiply, the kernel between, second multiply, with
    the `variant` tile) on fresh weight copies each call, and the bytes of weights one pair
    reads."""
    (n1, k1), (n2, k2) = SHAPES[first], SHAPES[second]
    dtype = torch.bfloat16
    w1 = torch.randn(n1, k1, device=device, dtype=dtype) * 0.02
    w2 = torch.randn(n2, k2, device=device, dtype=dtype) * 0.02
    cold = device.type == "cuda"
    next1, next2 = cycled(w1, cold), cycled(w2, cold)
    x1 = torch.randn(rows, k1, device=device, dtype=dtype)
    x2 = torch.randn(rows, k2, device=device, dtype=dtype)
    norm = torch.ones(k2, device=device, dtype=dtype)
    tile = second_tile(rows, n2, k2, variant)

    def one_pair() -> None:
        skinny_linear(x1, next1())
        x = rmsnorm(x2, norm, 1e-6) if between == "norm" else x2
        skinny_linear(x, next2(), config=tile)

    return one_pair, (n1 * k1 + n2 * k2) * w1.element_size()


def time_pairs(
    one_pair: Callable[[], None], device: torch.device, pairs: int = PAIRS_A_GRAPH
) -> float:
    """Seconds a pair: on CUDA `pairs` pairs in one graph, replayed REPLAYS times (median); on
    the CPU (tests: the interpreter) the wall time of plain calls."""
    if device.type != "cuda":
        start = time.perf_counter()
        for _ in range(pairs):
            one_pair()
        return (time.perf_counter() - start) / pairs
    return graph_time(one_pair, pairs, REPLAYS)


def measure(
    rows_list: list[int],
    pairs: tuple = PAIRS,
    modes: tuple = MODES,
    between: tuple = BETWEEN,
    device: torch.device | None = None,
    pairs_a_graph: int = PAIRS_A_GRAPH,
    variants: tuple = VARIANTS,
    bandwidth: float = 0.0,
) -> list[dict]:
    """One row a (rows, pair, between, second tile variant): microseconds a pair in each mode,
    its weights' floor at `bandwidth` (bytes/s; 0: none), each multiply's programs and waves
    over the SMs."""
    device = device or torch.device("cuda")
    cuda = device.type == "cuda"
    sms = torch.cuda.get_device_properties(device).multi_processor_count if cuda else 132
    out = []
    before = launch.settings()
    try:
        for rows, (first, second), mid, variant in itertools.product(
            rows_list, pairs, between, variants
        ):
            one_pair, nbytes = pair_launcher(first, second, mid, rows, device, variant)
            grids = [programs(rows, *SHAPES[first]), programs(rows, *SHAPES[second], variant)]
            row = dict(rows=rows, first=first, second=second, between=mid, variant=variant,
                       tile=second_tile(rows, *SHAPES[second], variant), programs=grids,
                       waves=[round(g / sms, 2) for g in grids], weight_bytes=nbytes,
                       floor_us=nbytes / bandwidth * 1e6 if bandwidth else None, us={})  # fmt: skip
            for mode in modes:
                launch.configure(pdl=mode, prefetch="off")
                with launch.forward_rows(rows):  # as inside a target forward of `rows` rows
                    row["us"][mode] = time_pairs(one_pair, device, pairs_a_graph) * 1e6
            out.append(row)
            del one_pair
            if cuda:
                torch.cuda.empty_cache()
    finally:
        launch.configure(pdl=before["pdl"], prefetch=before["prefetch"], ahead=before["ahead"])
    return out


def table(rows: list[dict]) -> list[str]:
    """The printed table: a line a row, each mode's microseconds and "all" against "kernels"."""
    modes = list(rows[0]["us"]) if rows else []
    lines = [
        f"{'rows':>4} {'pair':<16} {'between':<7} {'tile':<7} {'programs':>11} {'waves':>11} "
        + " ".join(f"{m + ' us':>10}" for m in modes)
        + f" {'all/kernels':>11}"
    ]
    for r in rows:
        us = r["us"]
        ratio = us["all"] / us["kernels"] if "all" in us and "kernels" in us else float("nan")
        lines.append(
            f"{r['rows']:>4} {r['first'] + '>' + r['second']:<16} {r['between']:<7} "
            f"{r['variant']:<7} "
            f"{'/'.join(map(str, r['programs'])):>11} {'/'.join(map(str, r['waves'])):>11} "
            + " ".join(f"{us[m]:>10.2f}" for m in modes)
            + f" {ratio:>11.3f}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", default="1,16", help="token rows, comma-separated")
    parser.add_argument("--out")
    args = parser.parse_args()
    report = {
        "bench": "pdl_pairs",
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "pairs_a_graph": PAIRS_A_GRAPH,
        "copy_bandwidth_tb_s": copy_bandwidth() / 1e12,
        "rows": [],
    }
    for rows in (int(r) for r in args.rows.split(",") if r):  # measured once, for every row
        report["rows"] += measure([rows], bandwidth=report["copy_bandwidth_tb_s"] * 1e12)
        save(report, args.out)  # partial results survive a timeout
    for line in table(report["rows"]):
        print(line)
    finish(report, args.out)


if __name__ == "__main__":
    main()
