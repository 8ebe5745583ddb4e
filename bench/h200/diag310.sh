#!/usr/bin/env bash
# Device call (~5 min, warm or cold; no carry): run 310, after run 309 (H100) found w12_tc's
# planes through TMA's 128-byte swizzle 18-33% faster (q|k|v unsplit 18.22 us against
# w12_linear's 20.19 and bf16's 20.24 at 16 rows), its fault at N 4100 / 4104 in the products
# (the escapes emptied), N 4112 right, and MMA 2 wrong at some shapes.
# 1. bench/tc_diag.py: the wrong columns at N 4100 / 4104 / 4112 / 4096 with their positions and
#    ratios, and the same weights padded to 16 rows (the kernel compiled for a 16-divisible N);
#    MMA 2's wrong columns at Qwen3-8B shapes, with and without the escapes.
# 2. The verify graph, W12 every matrix, back to back: base; tcsw (w12_tc.VERIFY, PLANE_SWIZZLE
#    128); tcsw1 (and UNIT_SPLIT 1: unsplit units where K allows); base2.
# Prediction: padded right (the fault is the variant without a 16-divisible N); ratios not
# powers of 4; tcsw1's verify under tcsw's, within 0.1 ms of base either way.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
timeout 150 python3 bench/tc_diag.py >"$OUT/tc-diag.log" 2>&1
echo "tc_diag rc=$?"; grep -v '^{"gpu"' "$OUT/tc-diag.log" | cut -c1-330 | tail -24
pack
v="--switch kernels.w12_tc.VERIFY=1 --switch kernels.w12_tc.PLANE_SWIZZLE=128"
MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" \
    "base|;tcsw|$v;tcsw1|$v --switch kernels.w12_tc.UNIT_SPLIT=1;base2|" 200
pack
back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
pack; archive_only
