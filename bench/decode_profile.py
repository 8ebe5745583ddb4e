"""Where one decode forward's time goes: torch.profiler over graphed-off decode forwards of the
synthetic Qwen3-8B shape with bf16 and with W12 weights (prologues in the multiplies or from the
norm / SwiGLU kernels: bf16, bf16-noglu, bf16-noprologue, w12 (none), w12-fused (both); w12-nN:
N weight rows a program), CUDA time per kernel name, top rows.
Prints two tables; the last line is one JSON object.

    python bench/decode_profile.py --out bench/results/DATE-decode-profile.json
"""

from __future__ import annotations

import argparse

import torch
from engine_speed import build, preset_hf  # bench/ is on sys.path when run as a script
from report import finish

from specpilot.config import EngineConfig
from specpilot.engine.generator import Generator
from specpilot.formats.w12_engine import convert_model


def profile(gen: Generator, context: int, reps: int) -> list[dict]:
    dev = gen.device
    gen._buffers_for("target", 1, context + 64)
    ids = torch.ones(1, 1, dtype=torch.long, device=dev)
    pos = torch.full((1, 1), context, device=dev)
    for _ in range(3):
        gen._verify_fn(ids, pos, context + 1, ())
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(reps):
            gen._verify_fn(ids, pos, context + 1, ())
        torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        cuda_us = getattr(e, "device_time_total", 0.0) or getattr(e, "cuda_time_total", 0.0)
        if cuda_us > 0:
            rows.append({"name": e.key[:70], "calls": e.count // reps, "us": cuda_us / reps})
    return sorted(rows, key=lambda r: -r["us"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--context", type=int, default=1024)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument(
        "--arms",
        default="bf16,bf16-prologue,bf16-noprologue,w12,w12-fused",
        help="bf16, bf16-prologue, bf16-noglu, bf16-noprologue, w12, w12-fused",
    )
    parser.add_argument("--w12-block-n", default="", help="more W12 arms: M = 1 rows a program")
    parser.add_argument("--out")
    args = parser.parse_args()
    hf = preset_hf("qwen3-8b")
    report: dict = {"bench": "decode_profile", "context": args.context, "arms": {}}
    from specpilot.kernels import w12_linear
    from specpilot.models import fused

    default_tiles = w12_linear.tile_config
    defaults = dict(fused.PROLOGUE_ROWS), dict(fused.W12_PROLOGUE_ROWS), fused.PROLOGUE_MAX_K
    arms = args.arms.split(",")
    if args.w12_block_n:  # extra W12 arms: M = 1 tiles with these rows a program
        arms += [f"w12-n{n}" for n in args.w12_block_n.split(",")]
    for weights in arms:
        target = build(hf, "target", 0)
        w12_linear.tile_config = default_tiles
        fused.PROLOGUE_ROWS.update(defaults[0])
        fused.W12_PROLOGUE_ROWS.update(defaults[1])
        fused.PROLOGUE_MAX_K = defaults[2]
        if weights.startswith("w12"):
            convert_model(target)
        if weights == "w12-fused":  # the norm / SwiGLU prologue inside the W12 multiply
            fused.W12_PROLOGUE_ROWS.update(norm=4, glu=4)
        if weights == "bf16-noglu":  # the down projection's SwiGLU from its own kernel
            fused.PROLOGUE_ROWS.update(glu=0)
        if weights == "bf16-noprologue":
            fused.PROLOGUE_ROWS.update(norm=0, glu=0)
        if weights == "bf16-prologue":  # the earlier default: prologues up to 4 rows, any width
            fused.PROLOGUE_ROWS.update(norm=4, glu=4)
            fused.PROLOGUE_MAX_K = 1 << 30
        if weights.startswith("w12-n"):
            block_n = int(weights.removeprefix("w12-n"))

            def tiles(m: int, n: int, k: int, block_n: int = block_n) -> dict:
                cfg = default_tiles(m, n, k)
                return cfg | {"BLOCK_N": block_n} if not cfg["USE_DOT"] else cfg

            w12_linear.tile_config = tiles
        gen = Generator(target, None, EngineConfig(), torch.device("cuda"), torch.bfloat16)
        rows = profile(gen, args.context, args.reps)
        report["arms"][weights] = {"total_us": sum(r["us"] for r in rows), "kernels": rows[:15]}
        print(f"{weights}: {sum(r['us'] for r in rows):.0f} us of kernels per decode forward")
        for r in rows[:12]:
            print(f"  {r['us']:8.1f} us  x{r['calls']:<4} {r['name']}")
        del gen, target
        torch.cuda.empty_cache()
    finish(report, args.out)


if __name__ == "__main__":
    main()
