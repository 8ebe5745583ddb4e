"""W12 kernel speed at Qwen3-8B's layer shapes, against the bf16 skinny_linear and cuBLAS (H200).

For each (M, N, K) it times, inside a CUDA graph of 20 back-to-back calls (bench/kernel_sweep.py's
`graph_time`): F.linear (cuBLAS, bf16), skinny_linear (bf16, its default tiles), w12_linear with
its default tiles and with each tile of a small sweep. Weights are random normal (std 0.02), so
the escape rate is that of normal weights (~1e-4). Bandwidth is reported two ways: the bytes each
kernel actually reads (bf16: 2 per weight; W12: its arrays, ~1.51 per weight), and "bf16-equivalent"
(2 bytes per weight / time: the speed-up over a bf16 kernel at the same fraction of HBM). Before
timing, each W12 output is checked against the reference (decode, then F.linear). Prints a table;
the last line is one JSON object.

With --e2e CONTEXT (default 1024), it then runs the engine end to end at the Qwen3-8B shape with
a DFlash-b16-shaped drafter, first with bf16 weights and then with the same weights converted to
W12 (target and drafter): AR tok/s and speculative tok/s at replayed tau = 6.55 (drafter forward
real, proposals replayed), each against its bandwidth floor (bytes read / measured copy
bandwidth), and token forcing of the W12 outputs against the bf16 target.
"""

from __future__ import annotations

import argparse
import json

import torch
import torch.nn.functional as F

# run as a script from the repository root: bench/ is on sys.path
from engine_speed import build, copy_bandwidth, linear_bytes, measure_context  # noqa: E402
from kernel_sweep import SHAPES, candidates, fastest, graph_time  # noqa: E402

from specpilot.config import EngineConfig
from specpilot.engine.generator import Generator
from specpilot.formats import w12
from specpilot.formats.w12_engine import convert_model
from specpilot.kernels.linear import skinny_linear, tile_config
from specpilot.kernels.w12_linear import w12_linear, w12_linear_reference
from specpilot.models.synth import TARGET_PRESETS, draft_hf_config

# a small tile sweep around the default (the decode adds registers per weight)
W12_ELEMENTWISE_GRID = ((4, 8, 16), (256, 512, 1024), (4, 8), (2, 3))
W12_DOT_GRID = ((32, 64, 128), (128, 256), (4, 8), (3, 4))


def bench_shape(m: int, name: str, n: int, k: int, sweep: bool) -> dict:
    w = (torch.randn(n, k, device="cuda") * 0.02).to(torch.bfloat16)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    packed = w12.encode(w)
    s = w12.stats(packed)
    ref = w12_linear_reference(x, packed)
    err = (w12_linear(x, packed).float() - ref.float()).abs().max().item()
    scale = ref.float().abs().max().item()
    if not err <= 2**-6 * scale:
        raise AssertionError(f"{name} M={m}: W12 kernel off by {err} (scale {scale})")
    bf16_bytes = 2 * n * k
    t_cublas = graph_time(lambda: F.linear(x, w))
    t_skinny = graph_time(lambda: skinny_linear(x, w))
    t_w12 = graph_time(lambda: w12_linear(x, packed))
    best, best_t = tile_config(m, n, k), t_w12
    if sweep:
        configs = candidates(m, W12_ELEMENTWISE_GRID, W12_DOT_GRID)
        best, best_t = fastest(lambda c: w12_linear(x, packed, config=c), configs, best, best_t)
    return dict(
        m=m,
        shape=name,
        n=n,
        k=k,
        w12_bits_per_weight=s.bits_per_weight,
        escape_rate=s.escape_rate,
        us=dict(
            cublas=t_cublas * 1e6, skinny=t_skinny * 1e6, w12=t_w12 * 1e6, w12_best=best_t * 1e6
        ),
        tb_s=dict(  # bytes actually read / time
            cublas=bf16_bytes / t_cublas / 1e12,
            skinny=bf16_bytes / t_skinny / 1e12,
            w12=s.nbytes / t_w12 / 1e12,
            w12_best=s.nbytes / best_t / 1e12,
        ),
        bf16_equivalent_tb_s=dict(
            w12=bf16_bytes / t_w12 / 1e12, w12_best=bf16_bytes / best_t / 1e12
        ),
        speedup_vs_cublas=t_cublas / best_t,
        speedup_vs_skinny=t_skinny / best_t,
        default=tile_config(m, n, k),
        best=best,
    )


def end_to_end(context: int, new_tokens: int) -> dict:
    """AR and spec@6.55 (replay) with bf16 weights, then with the same weights in W12."""
    bw = copy_bandwidth()
    hf = dict(TARGET_PRESETS["qwen3-8b"], eos_token_id=None, architectures=["Qwen3ForCausalLM"])
    draft_hf = draft_hf_config("dflash-b16", hf)
    bf16_target = build(hf, "target", 0)
    out: dict = {"context": context, "copy_bandwidth_tb_s": bw / 1e12, "arms": {}}
    for weights in ("bf16", "w12"):
        target = bf16_target if weights == "bf16" else build(hf, "target", 0)  # same seed
        drafter = build(draft_hf, "draft", 1)
        if weights == "w12":
            reports = [convert_model(m) for m in (target, drafter)]
            out["w12_convert"] = [
                dict(bits_per_weight=8 * r.w12_bytes / r.num_weights, escape_rate=r.escape_rate)
                for r in reports
            ]
        gen = Generator(
            target, drafter, EngineConfig(cuda_graphs=True), torch.device("cuda"), torch.bfloat16
        )
        r = measure_context(gen, context, new_tokens, bw, reference=bf16_target, taus=(6.55,))
        r["weight_bytes"] = linear_bytes(target)
        out["arms"][weights] = r
        spec = r["speculative"]["6.55"]
        print(
            f"e2e {weights}: weights {r['weight_bytes'] / 1e9:.2f} GB, AR {r['ar']['tok_s']:.1f} "
            f"tok/s ({r['ar']['fraction_of_floor']:.0%} of floor), spec@6.55 (replay) "
            f"{spec['tok_s']:.0f} tok/s (step {spec['step_ms']:.2f} ms, floor "
            f"{spec['step_floor_ms']:.2f}), forcing vs bf16 AR/spec "
            f"{r['ar']['token_forcing']['passed']}/{spec['token_forcing']['passed']}",
            flush=True,
        )
        del gen, drafter
        if weights == "w12":
            del target
        torch.cuda.empty_cache()
    a, b = out["arms"]["bf16"], out["arms"]["w12"]
    out["w12_over_bf16"] = {
        "ar": a["ar"]["step_ms"] / b["ar"]["step_ms"],
        "spec_6.55": b["speculative"]["6.55"]["tok_s"] / a["speculative"]["6.55"]["tok_s"],
    }
    print(
        f"e2e W12/bf16: AR {out['w12_over_bf16']['ar']:.3f}x, spec@6.55 "
        f"{out['w12_over_bf16']['spec_6.55']:.3f}x"
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", default="1,16")
    parser.add_argument("--no-sweep", action="store_true", help="default tiles only")
    parser.add_argument("--e2e", type=int, default=1024, help="context; 0 skips end to end")
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    results = []
    print(
        f"{'M':>3} {'shape':<8} {'cuBLAS':>7} {'skinny':>7} {'W12':>7} {'W12best':>8} TB/s read   "
        f"{'W12 bf16-eq':>11}  speed-up vs cuBLAS / skinny   best tile"
    )
    for m in [int(r) for r in args.rows.split(",")]:
        for name, (n, k) in SHAPES.items():
            r = bench_shape(m, name, n, k, not args.no_sweep)
            results.append(r)
            t = r["tb_s"]
            print(
                f"{m:>3} {name:<8} {t['cublas']:7.2f} {t['skinny']:7.2f} {t['w12']:7.2f} "
                f"{t['w12_best']:8.2f}             {r['bf16_equivalent_tb_s']['w12_best']:11.2f}  "
                f"{r['speedup_vs_cublas']:6.2f}x / {r['speedup_vs_skinny']:.2f}x          "
                f"{r['best']}",
                flush=True,
            )
    report = {"bench": "w12_speed", "gpu": torch.cuda.get_device_name(), "results": results}
    if args.out:  # the kernel table survives a failure end to end
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)
    if args.e2e:
        report["end_to_end"] = end_to_end(args.e2e, args.new_tokens)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
