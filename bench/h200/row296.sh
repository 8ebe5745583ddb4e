#!/usr/bin/env bash
# Device call (~7 min + cold start; no carry): run 296. First the GPU tests that run 295 failed
# on cancelling outputs (now bounded by tests/test_kernels.order_floor) with the rest of
# w12_row's and bf16_row's, and ROW_TILES[1] (32-row tiles, 3 stages, X32). Then
# kernels/w12_row.ONE_ROW inside the decode graph for the first time (row288.sh's premise, a
# standalone win at q|k|v and o, failed in run 294, but standalone timings miss what the
# graph adds: the weights' first stages asked for before PDL's wait, no rmsnorm launch before
# q|k|v and gate|up): W12 q|k|v, o, gate|up and down (the head certified), the one-row forward
# back to back: base; row (ONE_ROW 1, default tile); row1 (ONE_ROW 1 on ROW_TILES[1]); res1
# (ONE_ROW 2: o and down only, ROW_TILES[1]); base2.
# Prediction: row and row1 level or slower (the H200's Nsight run 295 has w12_row 0.6 us
# behind w12_linear at o and down standalone); res1 -20..-40 us if run 294's H100 ordering
# holds on the H200 (o -0.8, down -0.8 us a layer).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="w12_row or bf16_row or order_floor" TESTS_S=200 gpu_tests tests/test_kernels.py \
    tests/test_w12_row.py
s="--switch kernels.w12_row"
variants "w12:qkv,o,gate_up,down" "base|;row|$s.ONE_ROW=1;row1|$s.ONE_ROW=1 $s.ONE_ROW_TILE=1;\
res1|$s.ONE_ROW=2 $s.ONE_ROW_TILE=1;base2|" 300
echo "fastest decode beyond 0.02 ms: $(fastest_variant decode 0.02 row row1 res1)"
pack; archive_only
