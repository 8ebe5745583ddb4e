#!/usr/bin/env bash
# Device call (~7 min + cold start; no carry): run 314, issue 7's spec on the card it lands on.
# 1. The verify graph, W12 every matrix, back to back: base; tcsw (w12_tc.VERIFY, planes
#    swizzled, split_plan's waves priced with UNIT_COST_BLOCKS: q|k|v unsplit, down 4 splits);
#    tcsw1 (UNIT_SPLIT 1: the fewest splits, down 3); base2.
# 2. End to end at 1k, paired over bf16 for PAIRED rounds (default 6) with the control, forcing
#    on every arm: W12 every matrix and, as W12_ARMS tcsw_verify or tcsw1_verify, the faster
#    of step 1's two (tcsw1_verify if neither beats base by 0.02 ms: run 312's arm, again).
# 3. If time is left: bench/w12_join.py --tc at 16 rows, the swizzled tile with 4, 5 and 6
#    stages (more bytes in flight an SM: q|k|v unsplit fills 96 of 132 SMs), split_plan's and
#    unsplit, against w12_linear's j2esc4 and bf16.
# Prediction: tcsw 0.02-0.05 ms under tcsw1 (36 downs at 35.10 us against 36.25, H100); both
# ~2.5% under base as in run 310; end to end the verify route's spec 1-3% over W12's.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
v="--switch kernels.w12_tc.VERIFY=1 --switch kernels.w12_tc.PLANE_SWIZZLE=128"
MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" \
    "base|;tcsw|$v;tcsw1|$v --switch kernels.w12_tc.UNIT_SPLIT=1;base2|" 200
back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
pack
arm=$(MODEL=qwen3-8b fastest_variant verify 0.02 tcsw tcsw1)
arm=${W12_E2E_ARM:-${arm:-tcsw1}_verify}
echo "e2e arm: $arm"
timeout "${E2E_S:-360}" python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-base qkv,o,gate_up,down --w12-arms "$arm" \
    --paired "${PAIRED:-6}" --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^e2e" "$OUT/e2e-1024.log" | cut -c1-300 | tail -30
pack
only=64r4s/sw,64r5s/sw,64r6s/sw,64r4s/k1/sw,64r6s/k1/sw
timeout 100 python3 bench/w12_join.py --model qwen3-8b --rows 16 --variants j2esc4 --tc \
    --only "$only" --out "$OUT/tc-qwen3-8b.json" >"$OUT/tc-qwen3-8b.log" 2>&1
echo "tc 16 rows rc=$?"
sed -n '/^shape/,/^{/p' "$OUT/tc-qwen3-8b.log" | grep -v '^{' | cut -c1-200
pack; archive_only
