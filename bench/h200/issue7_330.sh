#!/usr/bin/env bash
# Device call (~3 min + cold start; no carry): run 330, issue 7: what the one-row norm
# prologue costs. Run 329's W12 decode (H100, us a layer, from PDL's wait to the exit): q|k|v
# 15.26 against a 12.6 bound and gate|up 53.17 against 50.3, both normed in w12_row's
# prologue; o 8.37 against 8.4 and the down 25.17 against 25.2, neither.
# 0. GPU tests: BOUND 4 (the prologue left out) gives the unnormed launch's bits;
#    NORM_WEIGHT_EARLY the same bits as without (~25 s).
# 1. Qwen3-8B's W12 decode and verify graphs, back to back, traced: base, nb (w12_row.NORM_BOUND
#    1: every prologue left out, a bound with wrong outputs), nw (w12_row.NORM_WEIGHT_EARLY 1:
#    the prologue's norm weight copied first, before PDL's wait, not beside x after it), base2;
#    exit_spacing's decode table. PART=bf16 (~2.5 min, warm): the same for bf16 weights
#    (bf16_row's prologue; base / nb / nw): issue 7's ratio is over bf16, whose one-row
#    multiplies share the prologue, so what W12 loses beyond bf16's, kernel by kernel.
# Prediction (H100): nb's q|k|v and gate|up each 1-2.5 us shorter exit to exit (decode -0.07 to
# -0.18 ms); nw level to -0.03 ms. If nb gains, the hand-off for one row is next (the down's
# and o's epilogues writing the squares, or x times the norm weight with the 1 / RMS on the
# sums).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
if [ "${PART:-w12}" != bf16 ]; then
    TESTS_K="(norm_bound or copied_first) and cuda" TESTS_S=60 gpu_tests tests/test_w12_row.py
    grep -E "FAILED|^E " "$OUT/gpu-tests.log" | head -8 | cut -c1-200
fi
nb=$(sw w12_row.NORM_BOUND=1)
nw=$(sw w12_row.NORM_WEIGHT_EARLY=1)
if [ "${PART:-w12}" = bf16 ]; then  # bf16_row's own prologues: what W12's excess is over bf16's
    MODEL=qwen3-8b variants "bf16" "base|;nb|$nb;nw|$nw" 110
else
    MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" "base|;nb|$nb;nw|$nw;base2|" 140
fi
back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
python3 bench/exit_spacing.py --forward decode "$OUT/timeline-variants-1024-qwen3-8b.json" \
    >"$OUT/spacing-decode.log"
head -13 "$OUT/spacing-decode.log" | cut -c1-175
pack
archive_only
