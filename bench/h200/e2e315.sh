#!/usr/bin/env bash
# Device call (~8 min + cold start; no carry): run 314 with models/fused.SPLIT_SUM_NORM (the o
# and down split sums write the norm after them: ~72 launches fewer a 16-row verify). Session
# 60 had time only for its ssn arm (run 315, ssn315.sh: it loses, 5.274 against 5.238 ms on an
# H100), so e2e314.sh comes first; this adds the ssn arms beside w12_tc's.
# 0. GPU tests: split_sum_norm's bits against sum_splits + rmsnorm, and a W12 verify forward with
#    it against without (tests/test_kernels.py -k split_sum_norm); on failure, stop.
# 1. The verify graph, W12 every matrix, back to back: base; ssn (SPLIT_SUM_NORM on w12_linear's
#    tiles); tcsw1 (w12_tc.VERIFY, planes swizzled, the fewest splits); tcsw1ssn; tcsw
#    (split_plan's waves priced); base2.
# 2. End to end at 1k, paired over bf16 for PAIRED rounds (default 4) with the control, forcing
#    on every arm: W12 every matrix and step 1's fastest verify arm (if it beats base by 0.02 ms).
# SHORT=1 TL_S=160 E2E_S=200 PAIRED=3: a short window (~6 min): base, ssn, tcsw1ssn, base2.
# Prediction: ssn 0.08-0.15 ms under base (72 launches of ~1.1 us plus their gaps), tcsw1ssn
# the fastest; end to end spec +2-4% over W12's.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K=split_sum_norm TESTS_S_DEFAULT=150 gpu_tests_gate tests/test_kernels.py || exit 0
v="--switch kernels.w12_tc.VERIFY=1 --switch kernels.w12_tc.PLANE_SWIZZLE=128"
s="--switch models.fused.SPLIT_SUM_NORM=1"
one="--switch kernels.w12_tc.UNIT_SPLIT=1"
arms="base|;ssn|$s;tcsw1|$v $one;tcsw1ssn|$v $one $s;tcsw|$v;base2|"
[ -n "${SHORT:-}" ] && arms="base|;ssn|$s;tcsw1ssn|$v $one $s;base2|"  # a short window: 4 arms
MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" "$arms" "${TL_S:-240}"
back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
pack
names="ssn tcsw1 tcsw1ssn tcsw"; [ -n "${SHORT:-}" ] && names="ssn tcsw1ssn"
best=$(MODEL=qwen3-8b fastest_variant verify 0.02 $names)
case "$best" in
    ssn) arm=ssn ;;
    tcsw1) arm=tcsw1_verify ;;
    tcsw1ssn) arm=tcsw1_ssn_verify ;;
    tcsw) arm=tcsw_verify ;;
    *) arm=tcsw1_ssn_verify ;;  # none beat base by the margin: the combination, again
esac
arm=${W12_E2E_ARM:-$arm}
echo "e2e arm: $arm"
timeout "${E2E_S:-250}" python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-base qkv,o,gate_up,down --w12-arms "$arm" \
    --paired "${PAIRED:-4}" --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^e2e" "$OUT/e2e-1024.log" | cut -c1-300 | tail -30
pack; archive_only
