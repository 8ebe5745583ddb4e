#!/usr/bin/env bash
# Device call (~8.5 min + cold start; no carry): run 320, issue 7 with run 319's defaults
# (launch.WIDE_EARLY 7, w12_linear.SPLIT_SUM_BLOCK 256).
# 1. The W12 verify graph (every matrix), back to back and traced: base (the defaults), pre1 /
#    pre2 (w12_tc.PRE_STAGES: 1 or 2 stages' planes before the PDL wait instead of all 4, so
#    that less queues ahead of the norm's and the split sum's loads), ss128 (the split sum on
#    128 columns a program), e5 (WIDE_EARLY 5: merge and split sum, the norm waiting first),
#    old (WIDE_EARLY 0, SPLIT_SUM_BLOCK 1024: before run 319), base2; bench/exit_spacing.py.
# 2. End to end at 1k, paired over bf16 for PAIRED rounds (default 3) with the control, forcing
#    on every arm: w12 (the defaults) and before_319.
# Prediction: old ~0.22 ms over base (run 319: 5.107 against 4.886); pre1 or pre2 0.02-0.08 ms
# under base (the norm and o's split sum back toward 1.9 / 1.7 us); spec over bf16 ~1.10x
# (H100; run 317: 1.066-1.072x) for w12 against ~1.07x for before_319.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" \
    "base|;pre1|$(sw w12_tc.PRE_STAGES=1);pre2|$(sw w12_tc.PRE_STAGES=2);ss128|$(sw w12_linear.SPLIT_SUM_BLOCK=128);e5|$(sw launch.WIDE_EARLY=5);old|$(sw launch.WIDE_EARLY=0) $(sw w12_linear.SPLIT_SUM_BLOCK=1024);base2|" 200
back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
MODEL=qwen3-8b spacing w12 13
pack
w12_e2e e2e-1024 qwen3-8b before_319 "${PAIRED:-3}" "${E2E_S:-300}"
pack; archive_only
