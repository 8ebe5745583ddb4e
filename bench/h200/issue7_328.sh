#!/usr/bin/env bash
# Device calls (PART=graphs ~5 min + cold start, then PART=e2e ~5.5 min warm; no PART: both,
# ~10.5 min, past one call's limit; no carry): run 328, issue 7: the hand-off's split sums
# (models/fused.SPLIT_SUM_HAND, on since run 325) took 4.7-5.5 us exit to exit in runs 325-327
# against 1.7 without it, 72 a 16-row verify. Their PTX (tests/compile_kernels.py) loads the
# norm weight only after y's store (one more round trip at each program's end) and sums the
# squares across 4 warps (two bar.syncs).
# 0. GPU tests: the split sum with SPLIT_SUM_EARLY_WEIGHT against without (same bits), the
#    hand-off's w12_tc tests (~40 s).
# 1. Qwen3-8B's W12 verify graph, back to back, traced: base, ew (w12_linear
#    .SPLIT_SUM_EARLY_WEIGHT 1: the weight read before PDL's wait), ew_w1 (with SPLIT_SUM_WARPS
#    1: the squares summed in one warp, no bar.sync), si (w12_tc.SUM_IN_KERNEL 1: a split's
#    tile added up by its last unit, the norm handed on from there, no split-sum launch), w1,
#    base2; exit_spacing's verify table.
# 2. End to end at 1k, Qwen3-8B, 3 paired rounds over bf16 with the control, token forcing on
#    every arm: w12 (the defaults), early_weight and sum_in. On an H200 these are also issue 7's own
#    numbers with today's defaults (the last H200 ones: run 299, AR 1.112x, spec 1.004x).
# Prediction (H100): ew's split sums -0.4 to -0.8 us each (verify -0.03 to -0.06 ms); w1 level
# to -0.02 (sw2 lost 0.03 in run 326: fewer threads, longer loads); spec +0.5-1% with ew; si
# -0.1 to -0.25 ms (72 launches of ~5 us gone, less the last units' sums: ~1-2 us each).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
if [ "${PART:-graphs}" != e2e ]; then
TESTS_K="(early_to_the_same_bits and cuda) or (handed and cuda) or (summed_in and cuda)" TESTS_S=90 \
    gpu_tests tests/test_w12_tc.py
grep -E "FAILED|^E " "$OUT/gpu-tests.log" | head -8 | cut -c1-200
ew=$(sw w12_linear.SPLIT_SUM_EARLY_WEIGHT=1)
w1=$(sw w12_linear.SPLIT_SUM_WARPS=1)
si=$(sw w12_tc.SUM_IN_KERNEL=1)
MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" \
    "base|;ew|$ew;si|$si;ew_w1|$ew $w1;w1|$w1;base2|" 180
back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
MODEL=qwen3-8b spacing qwen3 13
pack
fi
[ "${PART:-e2e}" != graphs ] || { archive_only; exit 0; }
w12_e2e e2e-1024 qwen3-8b "${E2E_ARMS:-early_weight,sum_in}" "${PAIRED:-3}" "${E2E_S:-300}"
pack
archive_only
