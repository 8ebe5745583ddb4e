"""Where a speculative run of the embedded pair spends its time, and why one output failed forcing.

Two checks, one process (H200 run 35, docs/LOG.md):

1. Per-run phases of each loop variant on the first N prompts of a set: the drafter's prompt
   prefill (`Generator._draft_prefill`), the decode loop, CUDA graph captures, Python garbage
   collection, each timed with a device synchronisation around it, and how long a pipelined
   loop's host waited for the device (near zero: the host is the bottleneck). Run 32 found that
   ~70% of pipelined speculative runs paid a one-off 40-85 ms on top of ~1.25 ms a step.
2. Token forcing of one prompt's output under several loops (`--forcing-ids`), against the float32
   reference and against the target as loaded (bf16): a failure in every loop that computes the
   same tokens is the arithmetic of the verify width; one that follows pipelining or graphs alone
   is a bug.

Variants: `ar` / `arp` (plain / pipelined AR), `b16`, `b8p`, ... as in embedded_acceptance, and a
`g` suffix for no CUDA graphs (`b8g`). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import gc
import re
import time

from engine_speed import sync  # bench/ is on sys.path when run as a script
from report import finish
from torch.nn.attention import SDPBackend

from specpilot.config import EngineConfig
from specpilot.engine import generator as generator_module
from specpilot.engine import graphs as graphs_module
from specpilot.engine.llm import LLM
from specpilot.layers import attention
from specpilot.measure.datasets import load_problems
from specpilot.models.embedded import default_drafter, default_target

SDPA_NAMES = {
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "flash": SDPBackend.FLASH_ATTENTION,
    "math": SDPBackend.MATH,
}


def parse_variant(name: str) -> tuple[bool, EngineConfig]:
    """-> (speculative, engine config): `ar`, `arp`, `b8`, `b16p`, `b8g`, `b8pg`."""
    match = re.fullmatch(r"(ar|b(\d+))(p?)(g?)", name)
    if match is None:
        raise SystemExit(f"bad variant {name!r}: ar[p][g] or b<block>[p][g]")
    block = int(match.group(2) or 16)
    config = EngineConfig(
        block_size=block, pipeline=bool(match.group(3)), cuda_graphs=not match.group(4)
    )
    return match.group(1) != "ar", config


class Phases:
    """Seconds in the drafter prefill, graph captures and GC during the current run."""

    def __init__(self) -> None:
        self.reset()
        self._gc_start = 0.0
        gc.callbacks.append(self._on_gc)
        draft_prefill = generator_module.Generator._draft_prefill
        capture_call = graphs_module.CapturedForward.__call__
        book = generator_module.Generator._book
        phases = self

        def timed_prefill(gen, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
            sync()
            t0 = time.perf_counter()
            out = draft_prefill(gen, *args, **kwargs)
            sync()
            phases.draft_prefill_s += time.perf_counter() - t0
            return out

        def counted_call(forward, **inputs):  # noqa: ANN001, ANN003, ANN202
            if forward.graph is None:
                phases.captures += 1
                t0 = time.perf_counter()
                out = capture_call(forward, **inputs)
                sync()
                phases.capture_s += time.perf_counter() - t0
                return out
            return capture_call(forward, **inputs)

        def timed_book(seqs, buffer, done, take):  # noqa: ANN001, ANN202
            if done is not None:
                t0 = time.perf_counter()
                done.synchronize()
                phases.book_wait_s += time.perf_counter() - t0
            return book(seqs, buffer, None, take)

        generator_module.Generator._draft_prefill = timed_prefill
        generator_module.Generator._book = staticmethod(timed_book)
        graphs_module.CapturedForward.__call__ = counted_call

    def reset(self) -> None:
        self.draft_prefill_s = self.capture_s = self.gc_s = self.book_wait_s = 0.0
        self.captures = self.collections = 0

    def _on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
        else:
            self.gc_s += time.perf_counter() - self._gc_start
            self.collections += 1

    def snapshot(self) -> dict:
        return {
            "draft_prefill_ms": self.draft_prefill_s * 1e3,
            "captures": self.captures,
            "capture_ms": self.capture_s * 1e3,
            "gc_collections": self.collections,
            "gc_ms": self.gc_s * 1e3,
            "pipelined_wait_ms": self.book_wait_s * 1e3,
        }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", help="default: the embedded SmolLM2 (a .gguf or a dir)")
    parser.add_argument("--draft", help="default: the shipped drafter")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--dataset", default="humaneval")
    parser.add_argument("--num-prompts", type=int, default=12)
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--timing-variants", default="arp,b16p,b16")
    parser.add_argument("--forcing-ids", default="HumanEval/47")
    parser.add_argument("--forcing-variants", default="ar,arp,b8,b8p,b8g,b16p")
    parser.add_argument(
        "--sdpa",
        default="",
        help="SDPA backends in order for the eager forwards, e.g. "
        "efficient,math (the engine's), or default (PyTorch's choice)",
    )
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.sdpa:
        choice = None if args.sdpa == "default" else args.sdpa.split(",")
        attention.CUDA_SDPA_BACKENDS = choice and [SDPA_NAMES[n] for n in choice]
    target = args.target or default_target()
    drafter = str(args.draft or default_drafter())
    llms: dict[tuple, LLM] = {}

    def llm_for(config: EngineConfig) -> LLM:
        key = (config.block_size, config.pipeline, config.cuda_graphs)
        if key not in llms:
            llms[key] = LLM(
                target, draft=drafter, device=args.device, dtype=args.dtype, engine=config
            )
        return llms[key]

    phases = Phases()
    problems = load_problems(args.dataset, None)
    first = next(iter(llms.values()), None) or llm_for(parse_variant("b16")[1])
    encoded = {p.problem_id: first.encode(p.prompt, chat=True) for p in problems}
    report: dict = {
        "bench": "embedded_diag",
        "sdpa": args.sdpa or "engine",
        "dataset": args.dataset,
        "timing": {},
        "forcing": {},
    }

    timing_ids = [p.problem_id for p in problems[: args.num_prompts]]
    longest = max((encoded[i] for i in timing_ids), key=len)
    for name in args.timing_variants.split(","):
        speculative, config = parse_variant(name)
        llm = llm_for(config)
        llm.generate(longest, max_new_tokens=args.max_new_tokens, speculative=speculative)
        rows = []
        for pid in timing_ids:
            phases.reset()
            sync()
            t0 = time.perf_counter()
            out = llm.generate(
                encoded[pid], max_new_tokens=args.max_new_tokens, speculative=speculative
            )[0]
            wall = time.perf_counter() - t0
            row = {
                "id": pid,
                "steps": out.num_steps,
                "tokens": len(out.output_ids),
                "decode_ms": out.decode_time_s * 1e3,
                "wall_ms": wall * 1e3,
                **phases.snapshot(),
            }
            row["loop_ms_per_step"] = (row["decode_ms"] - row["draft_prefill_ms"]) / max(
                out.num_steps, 1
            )
            rows.append(row)
            print(
                f"{name:<5} {pid:<14} steps {out.num_steps:>4} decode {row['decode_ms']:7.1f} ms"
                f" (draft prefill {row['draft_prefill_ms']:5.1f}, loop/step"
                f" {row['loop_ms_per_step']:.3f}) captures {row['captures']}"
                f" ({row['capture_ms']:.1f} ms) gc {row['gc_collections']} ({row['gc_ms']:.1f} ms)"
                f" waits {row['pipelined_wait_ms']:.1f} ms",
                flush=True,
            )
        report["timing"][name] = rows

    for pid in args.forcing_ids.split(",") if args.forcing_ids else []:
        ids = encoded[pid]
        results = {}
        reference_out = None
        for name in args.forcing_variants.split(","):
            speculative, config = parse_variant(name)
            llm = llm_for(config)
            out = llm.generate(ids, max_new_tokens=args.max_new_tokens, speculative=speculative)[0]
            if reference_out is None:
                reference_out = out.output_ids
            first_diff = next(
                (i for i, (a, b) in enumerate(zip(out.output_ids, reference_out)) if a != b), None
            )
            checks = {}
            for ref in ("float32", None):
                check = llm.validate(out.prompt_ids, out.output_ids, reference_dtype=ref)
                checks[ref or "as-loaded"] = {
                    "passed": check.passed,
                    "failures": [(f.index, round(f.margin, 4)) for f in check.failures],
                    "near_ties": [(t.index, round(t.margin, 4)) for t in check.near_ties],
                }
            results[name] = {
                "tokens": len(out.output_ids),
                "first_diff_vs_first_variant": first_diff,
                "output_ids": out.output_ids,
                "forcing": checks,
            }
            print(
                f"{pid} {name:<5} tokens {len(out.output_ids)} first diff {first_diff} "
                + " ".join(
                    f"{ref}: {'PASS' if c['passed'] else 'FAIL'} {c['failures']} ties "
                    f"{c['near_ties']}"
                    for ref, c in checks.items()
                ),
                flush=True,
            )
        report["forcing"][pid] = results
    finish(report, args.out)


if __name__ == "__main__":
    main()
