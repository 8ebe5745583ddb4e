#!/usr/bin/env bash
# Device call (~4.5 min with a cold start), prepared in session 48, run in session 49: run 270.
# JOIN_INPUT (kernels/w12_linear.join_input / join_between, off): at 16 rows the rmsnorm launch
# before a W12 gate|up writes join_order, the gate|up reads it with JOIN 2 and its SwiGLU
# epilogue writes join_order for the W12 down, which reads it with JOIN 2 (only wgmma tiles: 64
# weight rows on 4 warps). Run 269 had only the gate|up's input: W12 auto verify 4.118 ->
# 4.058 ms. GPU tests of the JOIN paths (the fused verify with JOIN_INPUT too), then
# bench/w12_speed.py end to end with the w12 arm on "auto" (--w12-base auto) and the same with
# JOIN_INPUT, paired 6 rounds over bf16 with a control, forcing on every arm; then the timeline
# back to back. If the arm wins beyond the control and forcing passes: JOIN_INPUT on.
# Prediction: verify ~4.02 ms (gate|up -1.5, down -1.3 us a layer), paired spec +2-3%, AR level.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="join" TESTS_S=120 gpu_tests_gate tests/test_w12_kernels.py tests/test_kernels.py || exit 0
timeout 420 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b --w12-base auto \
    --w12-arms join_input --paired 6 --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-1024.log" | cut -c1-300
pack
variants "w12:auto" "base|;join|--switch kernels.w12_linear.JOIN_INPUT=1;base2|" 120
pack; archive_only
