#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry): run 319, the 16-row verify's launches after short
# kernels (launch.WIDE_EARLY) and its split sums (w12_linear.SPLIT_SUM_BLOCK / _WARPS).
# Run 318 (H100, the W12 verify graph with w12_tc's route, traced; bench/exit_spacing.py): from
# the last kernel's exit to its own, w12_tc q|k|v 17.7 us (bound 12.7), o 12.3 (8.4), gate|up
# 57.1 (50.7), down 27.6 (25.3); each enters ~0.6 us after the short kernel before it (rmsnorm,
# merge) exits and its first stage lands 2.7-5 us later. The down's split sum takes 6.3 us (run
# 5.6) where w12_linear's took 2.4.
# 1. The W12 verify graph (every matrix), back to back and traced: base, e7 (WIDE_EARLY 7: the
#    merge, the norm and the split sum let the next kernel launch before their wait, so that
#    w12_tc's programs are resident and its first stages' weights stream while they wait), e6
#    (the norm and the split sum only), ss256 (split sum 256 columns a program: 256 programs),
#    ss256w2 (... on 2 warps), e7ss256, base2. Then bench/exit_spacing.py's table.
# 2. The bf16 verify graph: base, e7, base2 (does the bf16 verify gain or lose with it).
# 3. The PDL token test with WIDE_EARLY 7 among its variants (bf16 and W12 weights).
# Prediction: e7 0.1-0.25 ms under base (q|k|v, o and gate|up each 2-3 us shorter a layer);
# e6 about two thirds of that; ss256 0.05-0.1 ms under base (the down's split sum 6.3 -> ~3 us).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" \
    "base|;e7|$(sw launch.WIDE_EARLY=7);e6|$(sw launch.WIDE_EARLY=6);ss256|$(sw w12_linear.SPLIT_SUM_BLOCK=256);ss256w2|$(sw w12_linear.SPLIT_SUM_BLOCK=256) $(sw w12_linear.SPLIT_SUM_WARPS=2);e7ss256|$(sw launch.WIDE_EARLY=7) $(sw w12_linear.SPLIT_SUM_BLOCK=256);base2|" 260
back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
MODEL=qwen3-8b spacing w12 16
mv "$OUT/timeline-variants-1024-qwen3-8b.json" "$OUT/timeline-w12.json"
mv "$OUT/timeline-variants-1024-qwen3-8b.log" "$OUT/timeline-w12.log"
pack
MODEL=qwen3-8b variants "bf16" "base|;e7|$(sw launch.WIDE_EARLY=7);base2|" 120
back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
MODEL=qwen3-8b spacing bf16 0
pack
TESTS_K="pdl_engine_gives_the_same_tokens" TESTS_S=150 gpu_tests tests/test_kernels.py
grep -E "FAILED|Error" "$OUT/gpu-tests.log" | head -8 | cut -c1-200
pack; archive_only
