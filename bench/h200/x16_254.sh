#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), prepared in session 46, not yet run: run 254.
# kernels.certified.X16: row_stats also writes the head's input rows rounded to fp16, which the
# F16 multiply reads as they are: no bf16 -> fp16 conversion of the input tile in each step of
# each program (sm_90 PTX of the 2-warp F16 tiles: 216 -> 24 cvt at 16 rows, 278 -> 74 for a
# one-row launch, which converts all 16 rows of its tile). GPU tests of test_certified (row_stats
# with X16, every kernel and generation test in MODES 1-3); Qwen3-8B 1k timeline: base; x16
# (verify blocks: ROW_STATS 1 there already); rs2 (one-row launches' sums from row_stats too)
# and rs2x16 (both, with X16); the second launch's gathering: 128 columns a step (st128) and 8
# head rows a round (sl8; 24 us at 16 x 256 in run 249, ~5 us of bytes); base2; then paired
# pipelined AR and spec@6.55 of rs2x16 against base (8 rounds) if its decode won by 5 us or
# more.
# Prediction: the one-row head ~160 -> ~150 us with rs2x16 (rs2 alone level, run 248), the
# 16-row multiply ~157 -> ~148; AR ~1.002x, spec ~1.004x; st128 / sl8 within +-5 us of 24.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="kernel or f16 or int8_sums or taller or row_stats or row_sums or rounds or generation" TESTS_S=300 \
    gpu_tests_gate tests/test_certified.py || exit 0
X="--switch kernels.certified.X16=1"
R="--switch kernels.certified.ROW_STATS=2"
E="--switch kernels.certified"
variants bf16 "base|;x16|$X;rs2|$R;rs2x16|$R $X;st128|$E.EXACT_STEP=128;\
sl8|$E.EXACT_SLOTS=8;base2|" 330
grep -E "^bf16 \S+ (decode|verify): (span|attention|argmax)" "$OUT/timeline-variants-1024.log" \
    | cut -c1-200
pick=$(fastest_variant decode 0.005 rs2x16)
echo "paired pick: '${pick}'"
if [ -n "$pick" ]; then
    P="--pipeline 1"
    engine 1024 pair 300 --taus 6.55 --paired-rounds 8 --paired "base|$P;rs2x16|$P $R $X"
    grep "^paired" "$OUT/engine-pair.log" | sort -u | cut -c1-300
fi
pack; archive_only
