#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry): run 259. Issue 7's spec: the 16-row W12
# multiplies run at bf16's time (run 258). JOIN tiles (kernels/w12_linear: a half block's 4
# slices in one tl.dot, K in word order: 2 warpgroup waits a block instead of 8, no operand
# re-packing; sm_90 SASS of gate|up's loop 771 -> 628 instructions for JOIN 2, 678 with the
# input permuted in the program, JOIN 1). GPU tests of the W12 tiles (inline PTX: the GPU
# only), then bench/w12_join.py at 16 rows, Qwen3-8B's layer shapes.
# Prediction: JOIN 2 gate|up 44.7 -> ~40 us, down (K split) 28.8 -> ~25; JOIN 1 between.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
TESTS_K="join or tiles or measured or swiglu" TESTS_S=150 gpu_tests_gate tests/test_w12_kernels.py || exit 0
timeout 330 python3 bench/w12_join.py --rows 16 --out "$OUT/join-16.json" >"$OUT/join-16.log" 2>&1
echo "join rc=$?"; grep -vE "^\{" "$OUT/join-16.log" | tail -12 | cut -c1-200
pack; archive_only
