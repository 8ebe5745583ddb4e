"""The embedded pair (SmolLM2-135M-Instruct + our trained DFlash drafter) on held-out prompts.

For the first N HumanEval prompts and MT-Bench first turns (never seen in training), greedy, chat
template: speculative decoding with the shipped drafter and AR decoding with the same engine,
mean acceptance length (tau), tokens/s of both, output identity and token forcing of every
speculative output. Runs on CPU or CUDA. Prints a table; the last line is one JSON object.

--variants measures several engine configurations of the same pair in one process: `b16` (the
drafter's block), `b8`, `b4` (narrower blocks: cheaper verify and draft, acceptance capped at the
width), a `p` suffix for EngineConfig.pipeline (`b16p`), then optionally `f` and a mean
acceptance length for EngineConfig.min_acceptance (`b16pf2.2`: AR takes over where the first 8
steps averaged less; "tau" then counts the AR steps too). AR runs once per prompt for each loop
kind: a pipelined variant is compared with pipelined AR decoding, the others with plain AR. With
a CUDA device each unpipelined variant also reports a per-step breakdown (CUDA events) of its
second prompt.
"""

from __future__ import annotations

import argparse
import platform
import re

import torch
from report import finish, save  # bench/ is on sys.path when run as a script

from specpilot.config import EngineConfig
from specpilot.engine.llm import LLM
from specpilot.measure.datasets import load_problems
from specpilot.models.embedded import default_drafter, default_target


def variant_config(name: str, cuda_graphs: bool) -> EngineConfig:
    """`b16`, `b8p`, `b16pf2.2`, ...: block size, `p` for the pipelined loop, `f` and the
    fallback limit (EngineConfig.min_acceptance)."""
    match = re.fullmatch(r"b(\d+)(p?)(?:f(\d+(?:\.\d+)?))?", name)
    if match is None:
        raise SystemExit(
            f"bad variant {name!r}: give b<block size>[p][f<tau>], e.g. b16, b8p or b16pf2.2"
        )
    block, pipelined = int(match.group(1)), bool(match.group(2))
    return EngineConfig(
        block_size=block,
        cuda_graphs=cuda_graphs,
        pipeline=pipelined,
        min_acceptance=float(match.group(3) or 0),
    )


def summary(rows: list[dict]) -> dict:
    tokens = sum(r["tokens"] - 1 for r in rows)
    steps = sum(r["steps"] for r in rows)
    spec_s = sum(r["spec_decode_s"] for r in rows)
    ar_s = sum(r["ar_decode_s"] for r in rows)
    return {
        "prompts": len(rows),
        "tau": sum(r["tau"] * r["steps"] for r in rows) / max(steps, 1),
        "spec_tok_s": tokens / spec_s,
        "ar_tok_s": tokens / ar_s,
        "speedup": ar_s / spec_s,
        "identical": sum(r["identical_to_ar"] for r in rows),
        "token_forcing_passed": sum(r["token_forcing_passed"] for r in rows),
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", default="humaneval,mt-bench")
    parser.add_argument("--num-prompts", type=int, default=8, help="per dataset; 0: all")
    parser.add_argument("--target", help="default: the embedded SmolLM2 (a .gguf or a dir)")
    parser.add_argument("--draft", help="default: the shipped drafter")
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--cuda-graphs", action="store_true")
    parser.add_argument("--variants", default="b16", help="engine variants, e.g. b16,b8,b16p")
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.manual_seed(0)
    target = args.target or default_target()
    drafter = args.draft or default_drafter()
    names = args.variants.split(",")
    llms = {}
    for name in names:
        engine = variant_config(name, args.cuda_graphs)
        llms[name] = LLM(
            target, draft=str(drafter), device=args.device, dtype=args.dtype, engine=engine
        )
    ar_llm = llms[names[0]]
    # AR through the same loop as each variant: pipelined variants against pipelined AR
    # (EngineConfig.pipeline runs both one step ahead of the host), the others against plain AR
    ar_llms = {}
    for name in names:
        ar_llms.setdefault(llms[name].generator.config.pipeline, llms[name])
    # warm-up on the longest prompt of each set, every variant and AR, untimed: Triton compiles
    # kernel variants per shape on first use (on the H200 the first HumanEval prompt took ~1 s
    # more per variant without this, run 22), and a longer prompt than any before grows the
    # KV cache, which recaptures every CUDA graph (run 23's outliers)
    # each set's problems with their chat-templated prompt ids, tokenized once
    sets = {
        name: [
            (p, ar_llm.encode(p.prompt, chat=True))
            for p in load_problems(name, args.num_prompts or None)
        ]
        for name in args.datasets.split(",")
    }
    for problems in sets.values():
        longest = max((ids for _, ids in problems), key=len)
        for llm in ar_llms.values():
            llm.generate(longest, max_new_tokens=args.max_new_tokens, speculative=False)
        for llm in llms.values():
            llm.generate(longest, max_new_tokens=args.max_new_tokens)
    report: dict = {
        "bench": "embedded_acceptance",
        "device": str(ar_llm.device),
        "dtype": str(ar_llm.dtype).removeprefix("torch."),
        "machine": platform.processor() or platform.machine(),
        "max_new_tokens": args.max_new_tokens,
        "drafter": str(drafter),
        "variants": names,
        "datasets": {},
    }
    cuda = ar_llm.device.type == "cuda"
    for name, problems in sets.items():
        rows: dict[str, list[dict]] = {v: [] for v in names}
        report["datasets"][name] = {}
        for i, (problem, ids) in enumerate(problems):
            ars = {
                pipe: llm.generate(ids, max_new_tokens=args.max_new_tokens, speculative=False)[0]
                for pipe, llm in ar_llms.items()
            }
            # NOTE: the variants take turns going first: a cost paid once per new prompt shape
            # lands on whichever runs first (run 30's unpipelined b16 paid PyTorch's cuDNN
            # attention plans for b16p, docs/LOG.md run 35)
            turn = i % len(names)
            for variant in names[turn:] + names[:turn]:
                spec = llms[variant]
                gen = spec.generator
                a = ars[gen.config.pipeline]
                gen.profile_steps = cuda and i == 1
                s = spec.generate(ids, max_new_tokens=args.max_new_tokens)[0]
                gen.profile_steps = False
                check = spec.validate(s.prompt_ids, s.output_ids)
                row = {
                    "id": problem.problem_id,
                    "tokens": len(s.output_ids),
                    "steps": s.num_steps,
                    "tau": s.mean_acceptance_length,
                    "ar_from_step": s.ar_from_step,
                    "spec_decode_s": s.decode_time_s,
                    "ar_decode_s": a.decode_time_s,
                    "identical_to_ar": s.output_ids == a.output_ids,
                    "token_forcing_passed": check.passed,
                    "forcing": {
                        "reference": check.reference,
                        "threshold": check.threshold,
                        "near_ties": len(check.near_ties),
                        "failures": [(f.index, round(f.margin, 4)) for f in check.failures],
                        "max_margin": max(
                            (t.margin for t in check.near_ties + check.failures), default=0.0
                        ),
                    },
                }
                if cuda and i == 1 and not gen.config.pipeline:
                    row["step_breakdown_ms"] = gen.step_breakdown()
                rows[variant].append(row)
                print(
                    f"{name} {problem.problem_id} {variant}: tau {s.mean_acceptance_length:.2f}, "
                    f"spec {s.tokens_per_s:.1f} tok/s, AR {a.tokens_per_s:.1f} tok/s, identical "
                    f"{s.output_ids == a.output_ids}, forcing {'PASS' if check.passed else 'FAIL'}",
                    flush=True,
                )
                report["datasets"][name][variant] = summary(rows[variant])
            save(report, args.out)  # partial results survive a timeout
    print(
        f"{'dataset':<10} {'variant':<8} {'n':>3} {'tau':>6} {'spec tok/s':>11} {'AR tok/s':>9} "
        f"{'speedup':>8}"
    )
    for name, by_variant in report["datasets"].items():
        for variant, d in by_variant.items():
            print(
                f"{name:<10} {variant:<8} {d['prompts']:>3} {d['tau']:>6.2f} "
                f"{d['spec_tok_s']:>11.1f} {d['ar_tok_s']:>9.1f} {d['speedup']:>7.2f}x  "
                f"identical {d['identical']}/{d['prompts']}, forcing passed "
                f"{d['token_forcing_passed']}/{d['prompts']}"
            )
    finish(report, args.out)


if __name__ == "__main__":
    main()
