#!/usr/bin/env bash
# Device calls on an H200 (issue 7's card; elsewhere they print the card and stop, unless ANY=1;
# no carry): run 359, issue 7's standing with the defaults of the day (w12_row ONE_ROW_TILE 7,
# w12_tokens VERIFY and STREAM on, the verify's o and down on w12_tokens), none of which an H200
# has run end to end (the last H200 numbers are session 68's runs 338-341).
# PART=bounds (~3.5 min): Qwen3-8B's decode and verify graphs back to back, traced, bf16 and W12
# weights, each base, rb2 (w12_row.ROW_BOUND 2: the one-row multiplies' hand-off alone, their
# arithmetic left out: a bound, wrong outputs), base2; the exit-spacing tables. Why: what AR
# could reach on this ring if the multiplying warps' work cost nothing (run 339: W12 rb2 3.102
# ms against 3.363 on ONE_ROW_TILE 0; not yet measured on 7, nor for bf16_row).
# PART=e2e (~7 min): issue 7's end to end on both models, every matrix W12, 3 paired rounds
# over bf16 with the control, token forcing on every arm (E2E_S seconds a model, 200; LLAMA=0:
# Qwen3-8B alone, the issue's shape).
# Prediction: rb2 ~3.10 ms (W12), so AR's bound on this ring (bf16's step over W12's with the
# decode at rb2) ~1.24x, under the 1.25x target; bf16 rb2 within 2% of its base (run 330: its
# multiplies at their bounds on the H100); end to end AR 1.17-1.18x (as runs 338 / 340: no
# one-row change since), spec 1.12-1.15x (1.10x in runs 338 / 340; +2-4% from the verify's o
# and down on the H100, runs 347 / 355).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
if ! grep -q H200 "$OUT/gpu.log" && [ "${ANY:-0}" != 1 ]; then
    echo "not an H200: nothing run"
    exit 0
fi
# ratios FILE: the decode graph's bf16 time over W12's, back to back, for each W12 variant (the
# faster of bf16's base and base2 over W12 base / rb2 / base2): the AR ratio the graphs allow before host time
# (which both arms add alike, taking the end to end's ratio nearer 1).
ratios() {
    python3 - "$1" <<'PY'
import json, sys
arms = json.load(open(sys.argv[1]))["arms"]
ms = {k: v["decode"]["untraced_back_to_back_ms"] for k, v in arms.items()}
bf16 = min(v for k, v in ms.items() if k.startswith("bf16 ") and k.split()[1] != "rb2")
for k, v in ms.items():
    if k.startswith("w12"):
        print(f"decode graph bf16 (faster base) over {k.split()[-1]}: {bf16 / v:.3f}x ({bf16:.3f} / {v:.3f} ms)")
PY
}
if [ "${PART:-bounds}" = bounds ]; then
    arms="base|;rb2|$(sw w12_row.ROW_BOUND=2);base2|"
    MODEL=qwen3-8b variants "bf16;w12:qkv,o,gate_up,down" "$arms" 300
    back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
    ratios "$OUT/timeline-variants-1024-qwen3-8b.json" | tee "$OUT/ratios-359.log"
    python3 bench/exit_spacing.py --forward decode "$OUT/timeline-variants-1024-qwen3-8b.json" \
        >"$OUT/spacing-decode-359.log"
    head -16 "$OUT/spacing-decode-359.log" | cut -c1-200
    MODEL=qwen3-8b spacing verify-359 16
else
    w12_e2e e2e-1024 qwen3-8b "" 3 "${E2E_S:-200}"
    pack
    [ "${LLAMA:-1}" = 0 ] || w12_e2e e2e-1024-llama llama3.1-8b "" 3 "${E2E_S:-200}"
fi
pack
archive_only
