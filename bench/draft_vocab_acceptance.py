"""What a draft vocabulary costs in acceptance, measured on a real pair (default: the embedded
SmolLM2-135M-Instruct target and the DFlash drafter we trained for it), and that it changes no
output.

Frequencies come from a corpus that holds out the evaluation sets (e.g. the drafter's training
prompts) plus the target's own greedy answers to its first --generate prompts. For each size the
N most frequent ids (and the special tokens) form the draft vocabulary; the bench then decodes
the first --num-prompts prompts of each dataset AR, speculatively with the whole vocabulary, and
with each subset, and reports per dataset the mean acceptance length (tokens a step) and whether
every output equals AR's. Real drafter, real acceptance (no replay). Speed is not measured here:
on the CPU the LM head is a small part of a SmolLM2 draft; the H200 numbers at the Qwen3-8B shape
come from bench/engine_speed.py --draft-vocab. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from report import finish  # bench/ is on sys.path when run as a script

from specpilot.config import EngineConfig
from specpilot.engine.llm import LLM
from specpilot.measure.datasets import load_problems
from specpilot.models.embedded import resolve_pair
from specpilot.spec import draft_vocab


def generate(llm: LLM, prompts: list[str], batch: int = 8, **kw) -> list:
    """llm.generate over the prompts, `batch` at a time (a batch's cache is its longest)."""
    return [
        o for i in range(0, len(prompts), batch) for o in llm.generate(prompts[i : i + batch], **kw)
    ]


def mean_acceptance(outs: list) -> float:
    steps = [a for o in outs for a in o.acceptance_lengths]
    return sum(steps) / len(steps) if steps else 0.0


def pair_arguments(description: str) -> argparse.ArgumentParser:
    """The options of a real-pair acceptance bench: the pair, the datasets and prompts, where."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--target", help="default: the embedded SmolLM2 target")
    p.add_argument("--draft", help="default: the embedded drafter")
    p.add_argument("--datasets", default="humaneval,mt-bench")
    p.add_argument("--num-prompts", type=int, default=30)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--device", default="cpu")
    p.add_argument("--out")
    return p


def main() -> None:
    p = pair_arguments(__doc__.splitlines()[0])
    p.add_argument("--corpus", required=True, action="append", help="frequency corpus (JSONL)")
    p.add_argument("--generate", type=int, default=200, help="target answers to count")
    p.add_argument("--sizes", default="4096,8192,16384")
    args = p.parse_args()

    target, draft, defaults = resolve_pair(args.target, args.draft, args.device)
    base = dict(block_size=int(defaults["block_size"]), draft_head="target")
    llm = LLM(target, draft=draft, device=args.device, engine=EngineConfig(**base))
    t0 = time.perf_counter()
    paths = [Path(c) for c in args.corpus]
    counts, texts, generated = draft_vocab.corpus_counts(llm, paths, args.generate, 256)
    print(f"counted {int(counts.sum())} tokens ({texts} texts, {generated} generated) in "
          f"{time.perf_counter() - t0:.0f} s", flush=True)  # fmt: skip
    vocab_size = llm.target.config.vocab_size
    sizes = [int(s) for s in args.sizes.split(",")]
    prompts = {
        name: [pr.prompt for pr in load_problems(name, args.num_prompts)]
        for name in args.datasets.split(",")
    }
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        arms: list[tuple[str, LLM, float]] = [("full", llm, 1.0)]
        for size in sizes:
            ids = draft_vocab.select_ids(counts, size, draft_vocab.special_ids(llm))
            path = Path(tmp) / f"v{size}.safetensors"
            draft_vocab.save_ids(path, ids, vocab_size, f"top {size}")
            cfg = EngineConfig(**base, draft_vocab=str(path))
            arm = LLM(target, draft=draft, device=args.device, engine=cfg)
            arms.append((str(size), arm, counts[ids].sum().item() / counts.sum().item()))
        for name, texts_ in prompts.items():
            kw = dict(max_new_tokens=args.max_new_tokens, chat=True)
            ar = [o.output_ids for o in generate(llm, texts_, speculative=False, **kw)]
            for label, arm, coverage in arms:
                outs = generate(arm, texts_, **kw)
                row = dict(
                    dataset=name,
                    draft_vocab=label,
                    corpus_coverage=coverage,
                    acceptance_length=mean_acceptance(outs),
                    identical_to_ar=[o.output_ids for o in outs] == ar,
                    prompts=len(texts_),
                    tokens=sum(len(o.output_ids) for o in outs),
                )
                rows.append(row)
                print(f"{name:<10} vocab {label:>6}  coverage {coverage:6.2%}  "
                      f"tau {row['acceptance_length']:.3f}  identical {row['identical_to_ar']}",
                      flush=True)  # fmt: skip
    report = {
        "bench": "draft_vocab_acceptance",
        "target": str(target),
        "draft": str(draft),
        "device": args.device,
        "vocab_size": vocab_size,
        "corpus": [str(p) for p in paths],
        "generated_tokens": generated,
        "acceptance": "real drafter, real acceptance",
        "results": rows,
    }
    finish(report, args.out)


if __name__ == "__main__":
    main()
