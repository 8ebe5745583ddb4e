#!/usr/bin/env bash
# Device call (~1 min + cold start; no carry), session 49: run 276.
# With JOIN_INPUT on (run 270) the 16-row W12 gate|up and down run JOIN 2 with the ESCAPE_TILES'
# ESC_ROWS (4 at Qwen3-8B's gate|up and down, Llama-3.1-8B's down), a pair never timed standalone:
# runs 265-266 timed JOIN 2 with ESC_ROWS 2 only (gate|up 43.24, down 26.54 us against esc4
# without JOIN 44.75 / 27.82). bench/w12_join.py, 16 rows, j2esc1 / j2esc2 / j2esc4 and the
# emptied-table bound, at both models' gate|up and down.
# Prediction: j2esc4 within 1% of j2esc2 at the gate|up; at the down j2esc4 ~0.5 us better.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
for model in qwen3-8b llama3.1-8b; do
    timeout 120 python3 bench/w12_join.py --model $model --rows 16 --shapes gate_up,down \
        --variants noesc,j2esc1,j2esc2,j2esc4 --out "$OUT/j2esc-$model.json" \
        >"$OUT/j2esc-$model.log" 2>&1
    echo "$model rc=$?"; grep -vE "^\{" "$OUT/j2esc-$model.log" | tail -3 | cut -c1-220
done
pack; archive_only
