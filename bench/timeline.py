"""Where a forward's time goes inside its CUDA graph: the kernel timeline (kernels/trace.py) of
the engine's decode (1 token), verify (16 tokens) and draft forwards.

For each arm (`--arms "bf16;w12:auto"`: bf16 weights, or W12 for those matrices,
EngineConfig.w12_matrices' values) one process builds the synthetic target and DFlash-b16
drafter (engine_speed's), runs one AR generation at the context (caches filled, graphs
captured), times each forward's graph replay with CUDA events, then captures it again with
tracing on and replays it `--replays` times. Each launch's entry, PDL pass and last exit are
taken relative to the forward's first entry, as medians over the replays. Printed per forward:
its span against the replay's time untraced and traced (what tracing costs), each synchronised
(as engine_speed times a forward: the host's launch latency included) and back to back (the
device's time), each kernel kind's sum of runs (a
launch's PDL pass to its last exit) and of gaps (the previous launch's last exit to this
launch's PDL pass: launch and hand-over latency, and operations that are not our kernels), each
multiply shape's in-graph time and TB/s of its bytes, and the largest gaps. The last line is one
JSON object with every launch.

`--variants "name|options;..."` (engine_speed's --paired arms: its engine options and module
switches, e.g. a tiles file or an attention switch) measures each weight arm once per variant,
each variant its own Generator on the same models, one after another in one process; the
report's arms are then named "<weights> <variant>".
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

import engine_speed
import torch
from engine_speed import build, copy_bandwidth, fresh_runs, preset_hf, sync, timed
from report import finish, save

from specpilot.config import PDL_MODES
from specpilot.engine.generator import Generator, certifies_verify_heads
from specpilot.formats.w12_engine import convert_model, parse_matrices
from specpilot.kernels import trace
from specpilot.models.synth import draft_hf_config

# the multiplies, accounted by shape (kernels/w12_row.py's one-row kernels traced since session
# 57, kernels/w12_tc.py's since session 61)
MULTIPLIES = ("linear", "w12_linear", "certified_head", "w12_row", "bf16_row", "w12_tc")


def forwards(gen: Generator, context: int) -> dict[str, Callable[[], object]]:
    """The engine's three forwards at positions right after a `context`-token prompt: decode (1
    token), verify (a block) and draft (one block, a one-block context), through its graphs
    when it uses them."""
    dev, k = gen.device, gen.block_size
    width = len(gen.drafter.config.target_layer_ids) * gen.drafter.config.hidden_size
    hidden = torch.randn(1, k, width, device=dev, dtype=gen.dtype)
    ctx_pos = context - k + torch.arange(k, device=dev)[None]
    block_pos = context + torch.arange(k, device=dev)[None]
    ones = torch.ones(1, k, dtype=torch.long, device=dev)
    anchors = torch.ones(1, dtype=torch.long, device=dev)
    return {
        "decode": lambda: gen._target_forward(ones[:, :1], block_pos[:, :1], context + 1, ()),
        "verify": lambda: gen._target_forward(ones, block_pos, context + k, ()),
        "draft": lambda: gen._draft_forward(hidden, ctx_pos, anchors, block_pos, context + k),
    }


def trace_runs(
    gen: Generator, name: str, fn: Callable[[], object], replays: int, time_traced: bool = False
) -> tuple[list, dict]:
    """`fn`'s traced launches, once per replay (Timeline.read lists), and with `time_traced`
    and graphs the traced graph's replay times (synchronised and back to back, ms: what tracing
    costs against the untraced ones). With CUDA graphs the generator's graphs are dropped, so
    that the first call runs the graph's eager warm-ups (traced, so that the traced kernels
    compile outside the capture) and captures it with the trace arguments; then `replays`
    replays, the buffer reset before each, each read for the captured launches only, then the
    timings on the same graph; the graphs are dropped again after. Without graphs: `replays`
    eager runs on CUDA, one in the interpreter, and no timings."""
    if not gen.use_graphs:  # eager (the interpreter, or graphs off): each run its own rows
        runs = []
        for _ in range(replays if gen.device.type == "cuda" else 1):
            with trace.tracing(gen.device, eager=True) as timeline:
                timeline.section = name
                fn()
                runs.append(timeline.read(name))
        return runs, {}
    gen.graphs.clear()
    runs, times = [], {}
    try:
        with trace.tracing(gen.device, eager=True) as timeline:
            timeline.section = name
            fn()  # the graph's eager warm-up runs (their traced kernels compile), its capture
            for _ in range(replays):
                timeline.reset()
                fn()
                sync()
                runs.append([r for r in timeline.read(name) if r["captured"]])
            if time_traced:
                times = {
                    "traced_ms": timed(fn) * 1e3,
                    "traced_back_to_back_ms": back_to_back_ms(fn),
                }
    finally:
        gen.graphs.clear()
    return runs, times


def back_to_back_ms(fn: Callable[[], object], calls: int = 50) -> float:
    """Mean milliseconds of `fn` (a graph replay) over `calls` calls queued back to back
    between two CUDA events: the device's time, without the host's launch latency that a
    synchronised call (engine_speed.timed) also counts. Without CUDA, one call's wall clock."""
    if not torch.cuda.is_available():  # the CPU smoke run: one call
        return timed(fn, reps=1) * 1e3
    fn()
    sync()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / calls


def median_launches(runs: list[list[dict]]) -> list[dict]:
    """Each launch's entry, go and exit as medians over the runs, each run's times taken from
    its first entry; `exited` must agree."""
    starts = [run[0]["entry"] for run in runs]
    out = []
    for i, launch in enumerate(runs[0]):
        rows = [run[i] for run in runs]
        if len({r["exited"] for r in rows}) != 1:
            raise ValueError(f"launch {i} ({launch['kernel']}): programs differ between replays")
        out.append(
            launch
            | {
                key: statistics.median(r[key] - s for r, s in zip(rows, starts, strict=True))
                for key in ("entry", "go", "exit")
            }
        )
    return out


def timer_step(runs: list[list[dict]]) -> float:
    """The smallest nonzero difference between two timestamps of one run: the timer's step or
    less."""
    steps = []
    for run in runs:
        times = sorted({r[key] for r in run for key in ("entry", "go", "exit")})
        steps += [b - a for a, b in zip(times, times[1:], strict=False) if b > a]
    return min(steps) if steps else 0.0


def account(launches: list[dict], kv_bytes_per_layer: int, bandwidth: float) -> dict:
    """trace.summary of one forward's median launches, in microseconds, with the attention's
    bytes (the keys and values it reads), each multiply shape's sums and TB/s, and the 8
    largest gaps with the launches on either side."""
    s = trace.summary(launches)
    us = 1e-3  # the timer counts nanoseconds
    kinds = {}
    for kind, k in s["kinds"].items():
        nbytes = k["bytes"] or (kv_bytes_per_layer * k["launches"] if kind == "attention" else 0)
        kinds[kind] = {
            "launches": k["launches"],
            "run_us": k["run"] * us,
            "gap_us": k["gap"] * us,
            "bytes": nbytes,
            "tb_s": nbytes / (k["run"] * 1e-9) / 1e12 if nbytes and k["run"] > 0 else None,
        }
    shapes: dict = {}
    for r in s["launches"]:
        if r["kernel"] in MULTIPLIES:
            key = f"{r['kernel']} {r['rows']}x{r['n']}x{r['k']}"
            sh = shapes.setdefault(key, {"launches": 0, "run_us": 0.0, "gap_us": 0.0, "bytes": 0})
            sh["launches"] += 1
            sh["run_us"] += r["run"] * us
            sh["gap_us"] += r["gap"] * us
            sh["bytes"] += r["bytes"]
    for sh in shapes.values():
        sh["run_us_each"] = sh["run_us"] / sh["launches"]
        sh["tb_s"] = sh["bytes"] / (sh["run_us"] * 1e-6) / 1e12 if sh["run_us"] > 0 else None
        sh["bound_us_each"] = sh["bytes"] / sh["launches"] / bandwidth * 1e6
    rows = s["launches"]
    order = sorted(range(len(rows)), key=lambda i: -rows[i]["gap"])[:8]
    gaps = [
        {
            "index": i,
            "gap_us": rows[i]["gap"] * us,
            "after": rows[i - 1]["kernel"] if i else None,
            "before": rows[i]["kernel"],
        }
        for i in order
    ]
    return {
        "span_us": s["span"] * us,
        "run_us": sum(r["run"] for r in rows) * us,
        "gap_us": sum(r["gap"] for r in rows) * us,
        "kinds": kinds,
        "shapes": shapes,
        "largest_gaps": gaps,
        "launches": [{k: v for k, v in r.items() if k != "section"} for r in rows],
    }


def print_account(label: str, a: dict) -> None:
    print(
        f"{label}: span {a['span_us'] / 1e3:.3f} ms (replays, synchronised / back to back: "
        f"untraced {a['untraced_ms']:.3f} / {a['untraced_back_to_back_ms']:.3f}, traced "
        f"{a['traced_ms']:.3f} / {a['traced_back_to_back_ms']:.3f}); runs "
        f"{a['run_us'] / 1e3:.3f} ms + gaps "
        f"{a['gap_us'] / 1e3:.3f} ms; timer step {a['timer_step_ns']:.0f} ns",
        flush=True,
    )
    print(f"  {'kind':<12} {'launches':>8} {'run us':>9} {'gap us':>8} {'TB/s':>6}")
    for kind, k in sorted(a["kinds"].items(), key=lambda kv: -kv[1]["run_us"]):
        tb = f"{k['tb_s']:.2f}" if k["tb_s"] else "-"
        print(f"  {kind:<12} {k['launches']:>8} {k['run_us']:>9.1f} {k['gap_us']:>8.1f} {tb:>6}")
    for key, sh in sorted(a["shapes"].items()):
        print(
            f"  {key:<28} x{sh['launches']:<3} {sh['run_us_each']:7.2f} us each (bound "
            f"{sh['bound_us_each']:.2f}), gap {sh['gap_us'] / sh['launches']:.2f}, "
            f"{sh['tb_s'] or 0:.2f} TB/s"
        )
    gaps = ", ".join(f"#{g['index']} {g['after']}->{g['before']} {g['gap_us']:.1f}" for g in
                     a["largest_gaps"][:5])  # fmt: skip
    print(f"  largest gaps (us): {gaps}", flush=True)


def measure_arm(gen: Generator, context: int, new_tokens: int, replays: int, bw: float) -> dict:
    """One generator's three forwards (CUDA graphs on): untraced and traced replay times, and
    their accounts."""
    cfg = gen.target.config
    gen.run(fresh_runs(context, cfg.vocab_size, new_tokens)(), speculative=False)
    gen._buffers_for("draft", 1, context + new_tokens + 2 * gen.block_size + 1)  # AR has none
    kv_per_layer = 2 * cfg.num_kv_heads * cfg.head_dim * 2 * (context + 1)
    out = {}
    for name, fn in forwards(gen, context).items():
        untraced, untraced_b2b = timed(fn) * 1e3, back_to_back_ms(fn)
        runs, traced = trace_runs(gen, name, fn, replays, time_traced=True)
        a = account(median_launches(runs), kv_per_layer, bw)
        a |= {
            "untraced_ms": untraced,
            "untraced_back_to_back_ms": untraced_b2b,
            **traced,
            "timer_step_ns": timer_step(runs),
        }
        out[name] = a
    return out


def variant_options(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    es_parser: argparse.ArgumentParser,
) -> dict:
    """--variants as engine_speed arms (name -> its options, parsed by engine_speed's
    `es_parser`), or one arm of --tiles and --pdl."""
    if args.variants:
        if args.tiles or args.pdl != "auto":
            parser.error("with --variants, --tiles and --pdl belong in the variants")
        return engine_speed.paired_arms(
            args.variants, es_parser, es_parser.parse_args([]), least=1, option="--variants"
        )
    own = ["--pdl", args.pdl] + (["--tiles", args.tiles] if args.tiles else [])
    return {"default": es_parser.parse_args(own)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="qwen3-8b", help="models/synth.TARGET_PRESETS name")
    parser.add_argument("--context", type=int, default=1024)
    parser.add_argument("--new-tokens", type=int, default=32, help="the warm-up AR generation's")
    parser.add_argument("--arms", default="bf16;w12:auto", help='"bf16" or "w12:<matrices>"')
    parser.add_argument("--replays", type=int, default=30)
    parser.add_argument("--tiles", default="", help="EngineConfig.tiles: a tiles file")
    parser.add_argument("--pdl", default="auto", choices=PDL_MODES, help="EngineConfig.pdl")
    parser.add_argument(
        "--variants",
        default="",
        help="'name|options;...': engine_speed --paired arms, each weight arm measured with each "
        "(instead of --tiles and --pdl, which then belong in the variants)",
    )
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    arms = [a for a in args.arms.split(";") if a]
    for arm in arms:
        if arm != "bf16":
            kind, _, matrices = arm.partition(":")
            if kind != "w12":
                parser.error(f'--arms: "bf16" or "w12:<matrices>", got {arm!r}')
            parse_matrices(matrices or "all")
    es_parser = engine_speed.build_parser()
    variants = variant_options(args, parser, es_parser)
    bw = copy_bandwidth()
    hf = preset_hf(args.model)
    report: dict = {
        "bench": "timeline",
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "model": args.model,
        "context": args.context,
        "replays": args.replays,
        "tiles": args.tiles or "compiled-in",
        "pdl": args.pdl,
        "variants": {n: engine_speed.arm_summary(v) for n, v in variants.items()},
        "copy_bandwidth_tb_s": bw / 1e12,
        "arms": {},
    }
    prepare, restore = engine_speed.arm_preparers(variants, es_parser)
    for arm in arms:
        target = build(hf, "target", 0)
        drafter = build(draft_hf_config("dflash-b16", hf), "draft", 1)
        if arm != "bf16":  # "auto" as the engine resolves it under target_head "auto"
            head = target.lm_head.weight
            certified = certifies_verify_heads("auto", tuple(head.shape), head.device)
            matrices = parse_matrices(arm.partition(":")[2] or "all", certified)
            for model in (target, drafter):
                convert_model(model, matrices=matrices)
        for variant, options in variants.items():
            prepare(variant)
            config = engine_speed.engine_config(options, hf["vocab_size"])
            gen = Generator(target, drafter, config, torch.device("cuda"), torch.bfloat16)
            name = arm if args.variants == "" else f"{arm} {variant}"
            report.setdefault("pdl_resolved", {})[name] = gen.pdl
            report["arms"][name] = r = measure_arm(
                gen, args.context, args.new_tokens, args.replays, bw
            )
            for forward, a in r.items():
                print_account(f"{name} {forward}", a)
            save(report, args.out)
            del gen
            restore()
        del target, drafter
        torch.cuda.empty_cache()
    width = max(14, *(len(arm) for arm in report["arms"]))
    print(f"{'arm':<{width}} {'forward':<7} {'span ms':>8} {'b2b ms':>7} {'traced':>7} "
          f"{'runs':>7} {'gaps':>7}")  # fmt: skip
    for arm, r in report["arms"].items():
        for name, a in r.items():
            print(
                f"{arm:<{width}} {name:<7} {a['span_us'] / 1e3:>8.3f} "
                f"{a['untraced_back_to_back_ms']:>7.3f} {a['traced_back_to_back_ms']:>7.3f} "
                f"{a['run_us'] / 1e3:>7.3f} {a['gap_us'] / 1e3:>7.3f}"
            )
    print_components(report["arms"])
    finish(report, args.out)


def print_components(arms: dict) -> None:
    """One line an arm's forward: each kernel kind's runs (us, in the graph) and each multiply
    shape's run (us each), so that variants compare kernel by kernel."""
    for arm, r in arms.items():
        for name, a in r.items():
            kinds = " ".join(f"{k} {v['run_us']:.1f}" for k, v in sorted(a["kinds"].items()))
            shapes = " ".join(
                f"{key.split()[-1]} {sh['run_us_each']:.2f}"
                for key, sh in sorted(a["shapes"].items())
            )
            print(f"{arm} {name}: {kinds} | each: {shapes}")


if __name__ == "__main__":
    main()
