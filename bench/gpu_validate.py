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
    # one validate call over all outputs (one load of the target), in the run's dtype and in fp32
    results = args.work / "outputs.jsonl"
    results.write_text("".join(json.dumps(g) + "\n" for g in gens.values()))
    val, val_s = run(
        [
            "validate",
            "--target",
            str(target),
            "--results",
            str(results),
            "--device",
            args.device,
            "--dtype",
            args.dtype,
        ]
    )
    val32, val32_s = run(
        [
            "validate",
            "--target",
            str(target),
            "--results",
            str(results),
            "--device",
            args.device,
            "--dtype",
            "float32",
            "--threshold",
            "0.25",
        ]
    )
    timings["validate_fp32_wall_s"] = val32_s
    rows = []
    for (name, gen), report, report32 in zip(gens.items(), val["reports"], val32["reports"]):
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
                "validate_passed": report["passed"],
                "failures": report["num_failures"],
                "near_ties": report["num_near_ties"],
                "near_tie_margins": [t["margin"] for t in report["near_ties"]],
                "failure_margins": [f["margin"] for f in report["failures"]],
                "fp32_validate_passed": report32["passed"],
                "fp32_failures": report32["num_failures"],
                "fp32_near_ties": report32["num_near_ties"],
                "fp32_failure_margins": [f["margin"] for f in report32["failures"]],
                "fp32_near_tie_margins": [t["margin"] for t in report32["near_ties"]],
                "generate_wall_s": gen_walls[name],
                "output_ids": gen["output_ids"],
            }
        )
    timings["validate_wall_s"] = val_s
    ar_ids = rows[0]["output_ids"]
    for row in rows:
        row["identical_to_ar"] = row["output_ids"] == ar_ids
    print(
        f"{'arm':<18} {'tokens':>6} {'distinct':>8} {'steps':>5} {'tau':>5} {'tok/s':>8} "
        f"{'valid':>5} {'fail':>4} {'ties':>4} {'=AR':>4}"
    )
    for r in rows:
        print(
            f"{r['arm']:<18} {r['new_tokens']:>6} {r['distinct_tokens']:>8} {r['steps']:>5} "
            f"{r['mean_acceptance_length']:>5.2f} {r['tokens_per_s']:>8.1f} "
            f"{str(r['validate_passed']):>5} {r['failures']:>4} {r['near_ties']:>4} "
            f"{str(r['identical_to_ar']):>4}"
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
