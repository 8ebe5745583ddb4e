#!/usr/bin/env bash
# Device call (~9 min + cold start; no carry): run 292 (prepared in session 52, not yet run),
# after tc291.sh, and only if kernels/w12_tc.py passed its GPU tests there and beat w12_linear's
# 16-row gate|up and down (42.1 / 26.7 us, runs 276-281; else this measures a loss).
# kernels/w12_tc.VERIFY end to end: the fused verify forward's W12 gate|up (SwiGLU, y in pair
# order) and down (the residual) on the register-operand wgmma kernel, the rmsnorm before them
# writing pair order (models/fused.pair_kernel; the route w12_ws.VERIFY takes, runs 279-286).
# First the verify forward back to back (timeline variants at 16 rows, W12 "auto": base, tc,
# base2), then Qwen3-8B 1k paired over bf16 with token forcing: W12 auto, the same with
# w12_tc.VERIFY, and the same again (the W12 arms' spread, ~2%: run 275).
# Prediction (issue 7's spec target): with gate|up ~40 and down ~21 us a layer (tc291's), the
# W12 auto verify 4.06 -> ~3.75 ms (36 layers x (2.1 + 5.7) us, less the rmsnorm's pair order,
# already in w12_ws's route): spec@6.55 1.045x -> ~1.10x bf16 (target 1.2x needs q|k|v and o in
# W12 too, at 16 rows on this kernel, where VERIFY takes q|k|v (its norm in pair order) and o
# (the attention's output in pair order) as well, and at one row on w12_row: a later call,
# --w12-base qkv,o,gate_up,down --w12-arms row_tc,same).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="w12_tc" TESTS_S=60 gpu_tests tests/test_kernels.py
variants "w12:auto" "base|;tc|--switch kernels.w12_tc.VERIFY=1;base2|" 150
pack
timeout 300 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-base auto --w12-arms tc_verify,same --paired 6 \
    --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-1024.log" | cut -c1-300
pack; archive_only
