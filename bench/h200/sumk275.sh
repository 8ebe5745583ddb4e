#!/usr/bin/env bash
# Device call (~5 min + cold start; no carry), session 49: run 275.
# (1) SPLIT_SUM_IN_KERNEL again, now that the 16-row W12 down is run 266's K-split-4 tile with
# ESC_ROWS and JOIN 2: in run 270's graph its split_sum launches took 69 us a verify plus 16 us
# of gaps (36 launches), last measured in runs 57 and 119 on other tiles (level or lost). Timeline
# of W12 auto, base / sumk / base2. (2) End to end, Qwen3-8B 1k, 6 paired rounds with a control,
# forcing on every arm: W12 auto, "same" (the w12 arm again on its own generator: run 273's w12
# and no_join_input arms, with the same one-row launches, were 1.070x and 1.085x apart in AR),
# no_join_input, and sum_in_kernel if sumk's verify beat base and base2 by 20 us.
# Prediction: sumk verify -30 to -60 us; same within 1% of w12 in AR.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
variants "w12:auto" "base|;sumk|--switch kernels.w12_linear.SPLIT_SUM_IN_KERNEL=1;base2|" 120
pack
arms=same,no_join_input
[ -n "$(fastest_variant verify 0.02 sumk)" ] && arms=$arms,sum_in_kernel
echo "arms: $arms"
timeout 330 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b --w12-base auto \
    --w12-arms "$arms" --paired 6 --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-1024.log" | cut -c1-300
pack; archive_only
