#!/usr/bin/env bash
# Device calls (PART=graphs ~6.5 min + cold start, then PART=e2e ~6.5 min warm; no carry; the
# default, both, may run past one call's 10 minutes): run 325, issue 7: the split sums hand the
# norms on (models.fused.SPLIT_SUM_HAND, session 63; off by default), w12_row on 80 registers
# (MAXNREG), on the card it lands on.
# 0. The GPU tests of the hand-off: w12_tc taking a handed norm (plain, SwiGLU, split: against
#    RMSNorm(y) @ W^T scaled as the bf16 hand-off), the fused verify forward with it on
#    (tokens, hidden states, 2 norm launches instead of 5), w12_tc's verify token test; and
#    w12_row against the reference, MAXNREG 80 among its tiles, and MAXNREG 80's bits against
#    the default's (~150 s).
# 1. Qwen3-8B's W12 verify graph (every matrix), back to back, traced: base, hand
#    (SPLIT_SUM_HAND 1: ~72 norm launches fewer a forward), hand_e3 (with launch.WIDE_EARLY 3:
#    the split sum, now the one before the multiply, early or not: 7 keeps it early), l2o
#    (EngineConfig.l2_ahead "o", 8 MB of each W12 plane of o asked for in L2 by the attention's
#    split programs: the decode's HBM idles ~8.8 us a layer over rope, attention and merge,
#    run 323; lost for bf16 in runs 91 and 164, not tried with w12_row), mr80
#    (w12_row.MAXNREG 80: the one-row W12 kernel on at most 80 registers a thread, so that two
#    programs fit an SM and the next multiply's programs are resident, asking for their first
#    stages, while this one runs: ptxas's 168 took the whole register file), base2;
#    bench/exit_spacing.py's verify and decode tables.
# 2. Issue 7's GEMV target: w12_speed's one-row table, the engine's one-row kernel (w12_row) at
#    each shape against the copy bandwidth (~1 min). End to end at 1k, Qwen3-8B, PAIRED rounds
#    (default 4) over bf16 with the control, forcing on every arm: w12 (the defaults) and
#    before_325 (E2E_ARMS). Step 1 ran first (graphs): hand won the verify graph (4.824 against
#    4.927 / 4.925 ms), mr80 lost the decode (5.440 against 4.384), so SPLIT_SUM_HAND is now on
#    by default and the e2e part weighs it against before_325 (it off).
# Prediction (H100): hand's verify 0.10-0.20 ms under base (run 322-323: the norms 3.5-4.5 us
# exit to exit; the multiply after the split sum gains its ramp back only partly); spec over
# bf16 +1.5-3% with hand (1.12x -> 1.14-1.16x); AR level (one-row forwards take no split sum);
# l2o's decode level to -0.05 ms (o 9.9 -> ~7 us a layer if the attention does not slow);
# mr80's decode -0.1 to -0.2 ms (the multiplies' ramps, ~10.7 us a layer over their bounds,
# mostly gone; or worse if 80 registers slow the multiplying warps); the one-row GEMV alone
# (cold L2) ~90% of the copy bandwidth at gate|up and down, ~75% at q|k|v and o (run 306's
# in-graph 92-98% / 75-80%).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
if [ "${PART:-graphs}" != e2e ]; then
TESTS_K="(handed and cuda) or (split_sum_hand and cuda) or (w12_tc_verify and cuda) or \
(w12_row_matches and cuda) or (maxnreg and cuda)" TESTS_S=240 gpu_tests tests/test_w12_tc.py tests/test_kernels.py \
    tests/test_w12_row.py
grep -E "FAILED|^E " "$OUT/gpu-tests.log" | head -8 | cut -c1-200
hand="--switch models.fused.SPLIT_SUM_HAND=1"
MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" \
    "base|;hand|$hand;hand_e3|$hand $(sw launch.WIDE_EARLY=3);l2o|--l2-ahead o \
$(sw launch.O_AHEAD_BYTES=8388608);mr80|$(sw w12_row.MAXNREG=80);base2|" 210
back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
MODEL=qwen3-8b spacing qwen3 13
python3 bench/exit_spacing.py "$OUT/timeline-variants-1024-qwen3-8b.json" --forward decode \
    >"$OUT/spacing-decode.log"
head -10 "$OUT/spacing-decode.log" | cut -c1-175
pack
fi
[ "${PART:-e2e}" != graphs ] || { archive_only; exit 0; }
# issue 7's GEMV target: the engine's one-row kernel (w12_row) alone at each Qwen3-8B shape, cold
# L2, as a fraction of the copy bandwidth (w12_speed's one-row table; no sweep)
timeout 150 python3 bench/w12_speed.py --rows 1 --no-sweep --e2e 0 --out "$OUT/gemv.json" \
    >"$OUT/gemv.log" 2>&1
echo "gemv rc=$?"; grep -E "w12_row|Error" "$OUT/gemv.log" | cut -c1-200
pack
w12_e2e e2e-1024 qwen3-8b "${E2E_ARMS:-before_325}" "${PAIRED:-4}" "${E2E_S:-330}"
pack
archive_only
