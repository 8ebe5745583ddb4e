#!/usr/bin/env bash
# Device call (~7 min + cold start; no carry), session 49: run 273.
# After runs 270-271: JOIN_INPUT on (verify -51 us back to back, run 270), ESC_ROWS on Qwen3's
# one-row gate|up (1) and down (4) (decode -45 us, run 271), Llama-3.1-8B's 16-row down on the
# ESC_ROWS 4 tile (33.26 -> 30.30 us standalone, run 271). GPU tests of the JOIN / escape /
# measured-tile paths; bench/w12_join.py at Llama's gate_up with its own 2-warp tile (run 271 had
# left it out) and at one row (gate_up, down); then end to end, paired 5 rounds with a control
# and forcing on every arm: Qwen3-8B W12 auto against no_join_input, Llama-3.1-8B W12 auto
# against no_esc_rows.
# Prediction: Qwen3 auto AR ~1.10x, spec@6.55 ~1.05x; Llama auto spec +2-3% over no_esc_rows.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="join or escape or measured" TESTS_S=150 gpu_tests_gate tests/test_w12_kernels.py \
    tests/test_kernels.py || exit 0
timeout 120 python3 bench/w12_join.py --model llama3.1-8b --rows 16 --shapes gate_up \
    --variants plain,noesc,esc1,esc2,esc4,j2esc2 --out "$OUT/esc-llama-16.json" \
    >"$OUT/esc-llama-16.log" 2>&1
echo "llama 16 rc=$?"; grep -vE "^\{" "$OUT/esc-llama-16.log" | tail -2 | cut -c1-220
timeout 90 python3 bench/w12_join.py --model llama3.1-8b --rows 1 --shapes gate_up,down \
    --variants plain,noesc,esc1,esc2,esc4 --out "$OUT/esc-llama-1.json" \
    >"$OUT/esc-llama-1.log" 2>&1
echo "llama 1 rc=$?"; grep -vE "^\{" "$OUT/esc-llama-1.log" | tail -3 | cut -c1-220
pack
for m in "qwen3-8b no_join_input" "llama3.1-8b no_esc_rows"; do
    set -- $m
    timeout 200 python3 bench/w12_speed.py --rows '' --e2e 1024 --model "$1" --w12-base auto \
        --w12-arms "$2" --paired 5 --out "$OUT/e2e-$1.json" >"$OUT/e2e-$1.log" 2>&1
    echo "$1 e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-$1.log" | cut -c1-300
    pack
done
archive_only
