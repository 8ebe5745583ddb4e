"""Skinny-linear tile sweep at Qwen3-8B's layer shapes, against cuBLAS, on one GPU.

For each (M, N, K) it times every candidate tile configuration of kernels/linear.py and
F.linear (cuBLAS) inside a CUDA graph of 20 back-to-back calls (no launch gaps), and reports
effective bandwidth = weight bytes / time. Prints a table; the last line is one JSON object.

The weights are read from HBM as in a forward, where each layer's weights are read once: the
calls cycle through enough copies of the weight to exceed the L2 several times (`cold`; the
H200's L2 is 50 MB, which held the 32 MB o_proj and flattered it in runs 7-8). --l2 warm
repeats one copy, as before run 54.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import multiprocessing
import time

import torch
import torch.nn.functional as F
from engine_speed import add_launch_arguments  # bench/ is on sys.path when run as a script
from report import finish

from specpilot.kernels import launch
from specpilot.kernels import tiles as tiles_files
from specpilot.kernels.linear import skinny_linear, tile_config, tile_rows
from specpilot.models.synth import TARGET_PRESETS


def layer_shapes(preset: str) -> dict[str, tuple[int, int]]:
    """The (N, K) of each multiply of a decoder layer (fused q|k|v and gate|up) and of the LM
    head, for a models/synth.py target preset."""
    c = TARGET_PRESETS[preset]
    hidden, heads, kv, dim = (c[key] for key in ("hidden_size", "num_attention_heads",
                                                 "num_key_value_heads", "head_dim"))  # fmt: skip
    return {
        "qkv": ((heads + 2 * kv) * dim, hidden),
        "o": (hidden, heads * dim),
        "gate_up": (2 * c["intermediate_size"], hidden),
        "down": (hidden, c["intermediate_size"]),
        "lm_head": (c["vocab_size"], hidden),
    }


SHAPES = layer_shapes("qwen3-8b")  # q|k|v 6144 x 4096 ... LM head 151936 x 4096
MODELS = ("qwen3-8b", "llama3.1-8b")  # --model


L2_CLEAR_BYTES = 256 * 2**20  # what the copies of one weight add up to: 5x the H200's L2


def cycled(weight, cold: bool = True):
    """A function returning the weight (a tensor or a W12Weight) to use in the next call: with
    `cold`, one of several copies in turn, together at least L2_CLEAR_BYTES, so that no call
    finds its weight in the L2 (copies of a large weight: just the one)."""
    if isinstance(weight, torch.Tensor):
        nbytes, clone = weight.numel() * weight.element_size(), weight.clone
    else:
        nbytes = sum(t.numel() * t.element_size() for t in weight.tensors().values())

        def clone():
            return dataclasses.replace(
                weight, **{k: t.clone() for k, t in weight.tensors().items()}
            )

    count = -(-L2_CLEAR_BYTES // nbytes) if cold else 1
    copies = itertools.cycle([weight] + [clone() for _ in range(count - 1)])
    return lambda: next(copies)


def add_l2_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--l2",
        default="cold",
        choices=["cold", "warm"],
        help="cold: each call reads its weight from HBM (copies in turn); warm: one copy",
    )


def graph_time(
    fn, reps: int = 20, replays: int = 5, warmup: int = 2, settle: bool = False
) -> float:
    """Seconds per call: `reps` calls captured in one graph (after `warmup` plain calls),
    replayed `replays` times (after one untimed replay with `settle`), median."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(reps):
            fn()
    if settle:
        graph.replay()
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / reps)
    return sorted(times)[replays // 2]


# tile grids: (BLOCK_N, BLOCK_K, num_warps, num_stages) without tensor cores, the same and
# SPLIT_K with them; --grid quick takes the neighbourhood of the defaults (kernels/linear.py's
# tile_config). The dot grids take 16 weight rows and 2 warps too: the W12 multiply's 16-row
# tiles were fastest with 32 rows on 2 warps (runs 67-68; mma.sync, less shared memory, more
# programs an SM), not yet tried for bf16
ELEMENTWISE_GRID = ((4, 8, 16, 32), (128, 256, 512, 1024), (4, 8), (2, 3, 4))
DOT_GRID = ((16, 32, 64, 128), (64, 128, 256), (2, 4, 8), (2, 3, 4), (1, 2, 4))
QUICK_ELEMENTWISE_GRID = ((4, 8, 16), (512, 1024), (4, 8), (2, 3, 4))
QUICK_DOT_GRID = ((16, 32, 64), (128, 256), (2, 4), (2, 3, 4), (1, 2, 4))
# --grid loop (one row): element-wise tiles whose loop pipelines its loads through shared memory
# (kernels/linear.py's LOOP_STAGES): (BLOCK_N, BLOCK_K, num_warps, LOOP_STAGES)
LOOP_GRID = ((4, 8, 16), (256, 512, 1024), (4,), (2, 3, 4))
# --grid tma (one row): the same with the weight tiles fetched by bulk copies (kernels/linear.py's
# TMA; a copy's box is at most 256 columns), deeper pipelines: (BLOCK_N, BLOCK_K, num_warps,
# LOOP_STAGES)
TMA_GRID = ((8, 16, 32), (128, 256), (4,), (3, 4, 6, 8))

# --grid left: tensor-core tiles (one row: on 16-row tiles, masked) with the weights as the
# MMA's left operand (kernels/linear.py's W_LEFT: wgmma on the H200, where the 16-row tiles
# otherwise run mma.sync; it won the FP8 drafter's o and k|v in run 180): (BLOCK_N, BLOCK_K,
# num_warps, num_stages, SPLIT_K)
LEFT_GRID = ((32, 64, 128), (64, 128, 256), (4, 8), (3, 4), (1, 2, 4))

GRIDS = {"full": (), "quick": (QUICK_ELEMENTWISE_GRID, QUICK_DOT_GRID)}  # candidates' grids


def candidates(
    m: int, elementwise_grid: tuple = ELEMENTWISE_GRID, dot_grid: tuple = DOT_GRID
) -> list[dict]:
    """Tile configurations for M rows: element-wise products up to 4 rows, tl.dot above."""
    use_dot = m > 4
    if use_dot:
        block_m = 16 if m <= 16 else (32 if m <= 32 else 64)
    else:
        block_m = 1 if m == 1 else (2 if m == 2 else 4)
    out = []
    for bn, bk, warps, stages, *split in itertools.product(
        *(dot_grid if use_dot else elementwise_grid)
    ):
        # the element-wise accumulator lives in registers: at most 64 fp32 per thread
        if not use_dot and block_m * bn * bk > 64 * 32 * warps:
            continue
        cfg = dict(
            BLOCK_M=block_m,
            BLOCK_N=bn,
            BLOCK_K=bk,
            USE_DOT=use_dot,
            num_warps=warps,
            num_stages=stages,
        )
        if split and split[0] > 1:
            cfg["SPLIT_K"] = split[0]
        out.append(cfg)
    return out


def grid_candidates(m: int, grid: str) -> list[dict]:
    """--grid's tiles for M rows: GRIDS' through `candidates`, "left" (LEFT_GRID's, W_LEFT) or
    "loop" / "tma" (one row: LOOP_GRID / TMA_GRID)."""
    if grid == "left":  # one row too, on 16-row tiles (masked), as today's one-row gate|up
        return [cfg | {"W_LEFT": True} for cfg in candidates(max(m, 16), dot_grid=LEFT_GRID)]
    if grid not in ("loop", "tma"):
        return candidates(m, *GRIDS[grid])
    if m != 1:
        raise ValueError(f"--grid {grid} is for one row")
    extra = {"TMA": True} if grid == "tma" else {}
    return [
        dict(BLOCK_M=1, BLOCK_N=bn, BLOCK_K=bk, USE_DOT=False, num_warps=warps, num_stages=3,
             LOOP_STAGES=stages, **extra)
        for bn, bk, warps, stages in itertools.product(*(TMA_GRID if extra else LOOP_GRID))
        if bn * bk <= 64 * 32 * warps  # the accumulator: at most 64 fp32 per thread
    ]  # fmt: skip


def fastest(
    launch,
    configs: list[dict],
    best: dict | None = None,
    best_t: float = float("inf"),
    timings: list | None = None,
) -> tuple[dict | None, float]:
    """The configuration whose `launch(config)` takes least time (and that time), starting from
    `best` / `best_t`; configurations that do not compile or fit are reported and skipped.
    timings: each timed configuration appended as {"tile", "us"} (the sweep's whole table)."""
    for cfg in configs:
        try:
            t = graph_time(lambda c=cfg: launch(c))
        except Exception as exc:  # noqa: BLE001 - a configuration that does not compile or fit
            print(f"skip {cfg}: {type(exc).__name__}")
            continue
        if timings is not None:
            timings.append({"tile": cfg, "us": t * 1e6})
        if t < best_t:
            best, best_t = cfg, t
    return best, best_t


def _compile_skinny(m: int, configs: list[dict]) -> int:
    """Launch each tile once at a small shape with the layers' launch specialisations (N, K and
    the strides multiples of 16): Triton's disk cache then holds its kernel."""
    x = torch.randn(m, 12288, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(256, 12288, device="cuda", dtype=torch.bfloat16)
    return compile_each(lambda cfg: skinny_linear(x, w, config=cfg), configs)


def compile_each(launch_one, configs: list[dict]) -> int:
    """Call `launch_one(config)` for each configuration; how many compiled and ran."""
    done = 0
    for cfg in configs:
        try:
            launch_one(cfg)
            done += 1
        except Exception:  # noqa: BLE001 - the sweep reports tiles that do not compile or fit
            pass
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return done


def precompile(worker, m: int, configs: list[dict], workers: int = 16) -> None:  # noqa: ANN001
    """Compile `configs` for M rows in `workers` processes at once, `worker(m, chunk)` each (a
    module-level function; compiling takes seconds a tile), so that the sweep finds them in
    Triton's cache."""
    start = time.perf_counter()
    chunks = [(m, configs[i::workers]) for i in range(workers)]
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        done = sum(pool.starmap(worker, chunks))
    print(f"precompiled {done} of {len(configs)} tiles ({time.perf_counter() - start:.0f} s)")


def sweep_shape(m: int, name: str, n: int, k: int, cold: bool = True, grid: str = "full") -> dict:
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    nbytes = w.numel() * 2
    ws = cycled(w, cold)
    t_cublas = graph_time(lambda: F.linear(x, ws()))
    t_default = graph_time(lambda: skinny_linear(x, ws()))
    configs = grid_candidates(m, grid)
    timings: list = []
    best, best_t = fastest(lambda c: skinny_linear(x, ws(), config=c), configs, timings=timings)
    return dict(
        m=m,
        shape=name,
        n=n,
        k=k,
        cublas_tb_s=nbytes / t_cublas / 1e12,
        default_tb_s=nbytes / t_default / 1e12,
        default=tile_config(m, n, k),
        best_tb_s=nbytes / best_t / 1e12,
        best=best,
        tiles=sorted(timings, key=lambda r: r["us"]),  # every tile timed, fastest first
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", default="1,16")
    parser.add_argument("--grid", default="full", choices=[*GRIDS, "left", "loop", "tma"])
    parser.add_argument(
        "--tiles-out", help="a tiles file (EngineConfig.tiles) of each shape's fastest tile"
    )
    parser.add_argument("--model", default="qwen3-8b", choices=MODELS)
    add_l2_argument(parser)
    add_launch_arguments(parser)  # our kernel's
    parser.add_argument("--out")
    args = parser.parse_args()
    # NOTE: back-to-back calls of one multiply in a graph: with PDL each overlaps the tail of
    # the one before, as consecutive layers' multiplies would
    # "auto" as for the Qwen3-8B target whose layers these are
    launch.configure(launch.resolve_pdl(args.pdl, 15 << 30), args.weight_prefetch, args.l2_ahead)
    torch.manual_seed(0)
    results = []
    for m in [int(r) for r in args.rows.split(",")]:
        precompile(_compile_skinny, m, grid_candidates(m, args.grid))
        for name, (n, k) in layer_shapes(args.model).items():
            with launch.forward_rows(m):  # as in a target forward of m tokens (--pdl decode)
                row = sweep_shape(m, name, n, k, args.l2 == "cold", args.grid)
            results.append(row)
            print(
                f"M={m:<3} {name:<8} cuBLAS {row['cublas_tb_s']:.2f} TB/s  ours(default) "
                f"{row['default_tb_s']:.2f}  ours(best) {row['best_tb_s']:.2f} {row['best']}",
                flush=True,
            )
    if args.tiles_out:
        table = {(tile_rows(r["m"]), r["n"], r["k"]): r["best"] for r in results if r["best"]}
        tiles_files.write(args.tiles_out, {"bf16": table})
    report = {
        "bench": "kernel_sweep",
        "gpu": torch.cuda.get_device_name(),
        "launch": launch.settings(),
        "l2": args.l2,
        "model": args.model,
        "results": results,
    }
    finish(report, args.out)


if __name__ == "__main__":
    main()
