#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), session 45: run 240.
# Run 239: with STAT_ROWS the one-row F16 head on f64k256 (BLOCK_N 64, BLOCK_K 256, 4 warps,
# 4 stages) took 193.9 us in the decode graph against 205.7 / 202.7 (base / base2), decode
# 3.990 against 4.003 / 4.003 ms back to back; f128k256 216, f128k128 221. Its neighbours
# (bench/h200/certified240/: K 512, stages 3/5, 8 warps, 32 x 512, 64 x 128 on 6 stages) in
# the decode timeline with base, f64k256 again and base2, then paired pipelined AR and
# spec@6.55 of f64k256 against base (8 rounds, a control arm).
# Prediction: a neighbour within +-5 us of f64k256; paired AR ~1.003x (decode -13 us of 4 ms),
# within the control's spread or just beyond it.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
t=bench/h200/certified240
V="base|;f64k256|--tiles bench/h200/certified238/f64k256.json"
for v in f64k512 f64k256s3 f64k256s5 f64k256w8 f32k512 f64k128s6; do V+=";$v|--tiles $t/$v.json"; done
variants bf16 "$V;base2|" 360
grep -E "^bf16 \S+ decode: (span|attention)" "$OUT/timeline-variants-1024.log" | cut -c1-150
P="--pipeline 1"
engine 1024 pair 300 --taus 6.55 --paired-rounds 8 \
    --paired "base|$P;f64k256|$P --tiles bench/h200/certified238/f64k256.json"
grep "^paired" "$OUT/engine-pair.log" | cut -c1-300
pack; archive_only
