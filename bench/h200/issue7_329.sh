#!/usr/bin/env bash
# Device call (~3 min + cold start; no carry): run 329, issue 7: w12_tc.SUM_IN_KERNEL again.
# Run 328 (H100): a K split's tile added up by its last unit took the split-sum launches out
# (5.1 / 4.3 us exit to exit) but o grew 10.75 -> 14.91 us and the down 26.08 -> 31.06: the
# last unit's chain after its own store (fence, count, the slices' loads, then the residual's
# and the norm weight's loads, y's and u's stores). Now every unit reads the residual and the
# norm weight before it stores and counts (`_sum_inputs`): two round trips fewer in the chain.
# 0. GPU tests: the in-kernel sum's bits against the launch's (~30 s).
# 1. Qwen3-8B's W12 verify graph, back to back, traced: base, si (SUM_IN_KERNEL 1), sb256
#    (w12_linear.SPLIT_SUM_BLOCK 256: run 326 lost 0.03 ms with it, before the split sums read
#    the norm weight early; half the programs, each with twice the columns), base2.
# Prediction (H100): o and the down each ~2 us over run 328's base (not 4-5); verify level to
# -0.03 ms against base; sb256 level.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="summed_in and cuda" TESTS_S=60 gpu_tests tests/test_w12_tc.py
grep -E "FAILED|^E " "$OUT/gpu-tests.log" | head -8 | cut -c1-200
si=$(sw w12_tc.SUM_IN_KERNEL=1)
sb=$(sw w12_linear.SPLIT_SUM_BLOCK=256)
MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" "base|;si|$si;sb256|$sb;base2|" 140
back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
MODEL=qwen3-8b spacing qwen3 13
pack
archive_only
