#!/usr/bin/env bash
# Device call (~7 min + cold start; no carry), session 46: run 248.
# Run 246: the 16-row certified verify head on F16 (v16w4) with TWO_PASS 242.0 us + its second
# launch 57.2 against the exact head's 283.5 + argmax 14.6 (level); without TWO_PASS 366.1. The
# one-row head on the same tile takes ~160 us: at 16 real rows every program of the multiply
# sums all 16 rows' squares and fp16 changes as it reads them (STAT_ROWS = BLOCK_M), work as
# large as widening its weights. kernels.certified.ROW_STATS sums them once, in a launch of one
# program a row before the multiply (row_stats; STATS_IN). Variants, Qwen3-8B 1k timeline:
# base; rs2 (ROW_STATS 2: the one-row decode head too); v16tp (run 246's, control); v16tprs
# (ROW_STATS 1); v16w2tprs (2 warps); v16rs (one launch, ROW_STATS 1); base2. Then paired
# pipelined AR and spec@6.55 of the fastest certified verify against base (8 rounds) if its
# verify won by 30 us or more.
# Prediction: v16tprs multiply 242 -> ~175 us (+ ~3 us of row sums), verify 4.44 -> ~4.38 ms
# back to back, spec@6.55 ~1.012x; rs2 level at one row (its sums are one row's already).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="kernel or f16 or int8_sums or taller or row_stats" TESTS_S=300 \
    gpu_tests_gate tests/test_certified.py || exit 0
t=bench/h200/verify245
S="--switch kernels.certified.TWO_PASS=1"
R="--switch kernels.certified.ROW_STATS=1"
C="--target-head certified --tiles $t/v16w4.json"
C2="--target-head certified --tiles $t/v16w2.json"
variants bf16 "base|;rs2|--switch kernels.certified.ROW_STATS=2;v16tp|$C $S;v16tprs|$C $S $R;\
v16w2tprs|$C2 $S $R;v16rs|$C $R;base2|" 300
grep -E "^bf16 \S+ (decode|verify): (span|attention|argmax)" "$OUT/timeline-variants-1024.log" \
    | cut -c1-190
pick=$(fastest_variant verify 0.030 v16tp v16tprs v16w2tprs v16rs)
echo "paired pick: '${pick}'"
if [ -n "$pick" ]; then
    case $pick in
        v16tp) O="$C $S" ;;
        v16tprs) O="$C $S $R" ;;
        v16w2tprs) O="$C2 $S $R" ;;
        v16rs) O="$C $R" ;;
    esac
    P="--pipeline 1"
    engine 1024 pair 330 --taus 6.55 --paired-rounds 8 --paired "base|$P;$pick|$P $O"
    grep "^paired" "$OUT/engine-pair.log" | cut -c1-300
fi
pack; archive_only
