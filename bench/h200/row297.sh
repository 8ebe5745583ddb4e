#!/usr/bin/env bash
# Device call (~7 min + cold start; no carry): run 297, after run 296 (H100: ONE_ROW's one-row
# forward 4.471 ms back to back against 4.688 / 4.698 for w12_linear, W12 every matrix, -4.6%).
# The route test that failed there (a test bug, fixed), then end to end at 1k, paired over bf16
# with token forcing: W12 q|k|v, o, gate|up and down (the head certified), the same with
# ONE_ROW (w12_row_one), the same again (w12_same: the W12 arms' spread), and the bf16 control.
# Prediction (issue 7's AR): run 183's every-matrix W12 AR 1.094x plus the decode's -4.6% ->
# ~1.14x over bf16; spec unchanged (ONE_ROW takes one-row forwards only).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="one_row_calls_route" TESTS_S=90 gpu_tests tests/test_w12_row.py
timeout 420 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-base qkv,o,gate_up,down --w12-arms row_one,same --paired 5 \
    --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-1024.log" | cut -c1-300
pack; archive_only
