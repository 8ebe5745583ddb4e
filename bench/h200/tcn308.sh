#!/usr/bin/env bash
# Device call (~1 min + cold start; no carry): run 308, w12_tc's GPU fault (runs 302-304: N 4100
# wrong at tile positions 0, 2, 4, 6; N 2000, 4096, 4160, 6144 right; the emulator right at 4100).
# Whether it follows N off 16 (Triton's variant without a 16-divisible N): w12_tc at N 4100,
# 4104 (off 16) and 4112 (on 16, off 64), and w12_ws at N 4100 (the same escapes' code), with
# the failures' text.
# Prediction: 4100 and 4104 fail, 4112 passes; w12_ws at 4100 the same as w12_tc.
# (Superseded by swz309.sh's tests step, session 58, which runs these cases and more.)
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="matches_the_reference and (4100 or 4104 or 4112)" TESTS_S=120 gpu_tests \
    tests/test_w12_tc.py tests/test_w12_ws.py
grep -E "^(FAILED|E  +AssertionError)" "$OUT/gpu-tests.log" | head -20 | cut -c1-200
pack; archive_only
