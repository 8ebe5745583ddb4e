"""On the H200: Qwen3-8B-shaped synthetic target + DFlash-b16-shaped synthetic drafter.

Writes both checkpoints, generates 256 tokens through the CLI (AR, DFlash, replay tau=6.55), runs
`specpilot validate` on each output, and prints a table; the last line is one JSON object.
Synthetic weights: outputs are not meaningful text, and the drafter's acceptance is that of random
weights (the replay arm is labeled "replay").
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def run(cmd: list[str]) -> tuple[dict, float]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "specpilot.cli", *cmd], capture_output=True, text=True
    )
    elapsed = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path, default=Path("/tmp/specpilot-gpu"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--new-tokens", type=int, default=256)
    parser.add_argument("--target-preset", default="qwen3-8b")
    parser.add_argument("--draft-preset", default="dflash-b16")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bfloat16")
    args = parser.parse_args()
    target = args.work / f"target-{args.target_preset}"
    draft = args.work / f"draft-{args.draft_preset}"
    timings = {}
    if not (target / "model.safetensors").exists():
        _, timings["synth_target_s"] = run(
            [
                "synth",
                "--arch",
                "qwen3",
                "--preset",
                args.target_preset,
                "--out",
                str(target),
                "--device",
                args.device,
            ]
        )
    if not (draft / "model.safetensors").exists():
        _, timings["synth_draft_s"] = run(
            [
                "synth",
                "--arch",
                "dflash",
                "--preset",
                args.draft_preset,
                "--target",
                str(target),
                "--out",
                str(draft),
                "--device",
                args.device,
            ]
        )
    arms = {
        "ar": [],
        "dflash": ["--draft", str(draft)],
        "replay-6.55": ["--draft", "replay:6.55"],
        "dflash+replay-6.55": ["--draft", str(draft), "--replay", "6.55"],
    }
    prompt = "1,85,214,99,41,77,3,60,123,100,42,42,7"
    gens, gen_walls = {}, {}
    for name, extra in arms.items():
        gens[name], gen_walls[name] = run(
            [
                "generate",
                "--target",
                str(target),
                *extra,
                "--prompt-ids",
                prompt,
                "--max-new-tokens",
                str(args.new_tokens),
                "--ignore-eos",
                "--json",
                "--device",
                args.device,
                "--dtype",
                args.dtype,
            ]
        )
    # token forcing, one call (one load of the target) per reference precision: the official
    # check is `specpilot validate` with its defaults (fp32 reference, threshold by the dtype the
    # output was generated in); the reference in the run's own dtype is shown beside it.
    results = args.work / "outputs.jsonl"
    results.write_text("".join(json.dumps(g) + "\n" for g in gens.values()))
    common = ["validate", "--target", str(target), "--results", str(results)]
    val, timings["validate_wall_s"] = run([*common, "--device", args.device])
    val_own, timings["validate_own_dtype_wall_s"] = run(
        [*common, "--device", args.device, "--dtype", args.dtype]
    )
    rows = []
    for (name, gen), rep, own in zip(gens.items(), val["reports"], val_own["reports"]):
        rows.append(
            {
                "arm": name,
                "drafter": gen["drafter"],
                "new_tokens": len(gen["output_ids"]),
                "distinct_tokens": len(set(gen["output_ids"])),
                "steps": gen["num_steps"],
                "mean_acceptance_length": gen["mean_acceptance_length"],
                "tokens_per_s": gen["tokens_per_s"],
                "ttft_s": gen["time_to_first_token_s"],
                "generate_wall_s": gen_walls[name],
                "validate_passed": rep["passed"],
                "threshold": rep["threshold"],
                "failures": rep["num_failures"],
                "near_ties": rep["num_near_ties"],
                "failure_margins": [f["margin"] for f in rep["failures"]],
                "max_near_tie_margin": max([t["margin"] for t in rep["near_ties"]], default=0.0),
                "own_dtype_passed": own["passed"],
                "own_dtype_failures": own["num_failures"],
                "own_dtype_near_ties": own["num_near_ties"],
                "own_dtype_max_near_tie_margin": max(
                    [t["margin"] for t in own["near_ties"]], default=0.0
                ),
                "output_ids": gen["output_ids"],
            }
        )
    ar_ids = rows[0]["output_ids"]
    for row in rows:
        row["identical_to_ar"] = row["output_ids"] == ar_ids
    print(
        f"{'arm':<18} {'tokens':>6} {'steps':>5} {'tau':>5} {'tok/s':>7} {'=AR':>5} | "
        f"{'fp32 ref':>8} {'fail':>4} {'ties':>4} {'max tie':>7} | {'own ref':>7} {'fail':>4}"
    )
    for r in rows:
        print(
            f"{r['arm']:<18} {r['new_tokens']:>6} {r['steps']:>5} "
            f"{r['mean_acceptance_length']:>5.2f} {r['tokens_per_s']:>7.1f} "
            f"{str(r['identical_to_ar']):>5} | {str(r['validate_passed']):>8} {r['failures']:>4} "
            f"{r['near_ties']:>4} {r['max_near_tie_margin']:>7.3f} | "
            f"{str(r['own_dtype_passed']):>7} {r['own_dtype_failures']:>4}"
        )
    summary = {
        "bench": "gpu_validate",
        "timings": timings,
        "rows": rows,
        "all_passed": all(r["validate_passed"] for r in rows),
    }
    args.out.write_text(json.dumps(summary, indent=1))
    print(
        json.dumps(
            {k: v for k, v in summary.items() if k != "rows"}
            | {"rows": [{k: v for k, v in r.items() if k != "output_ids"} for r in rows]}
        )
    )


if __name__ == "__main__":
    main()
