#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), session 45: run 241.
# The one-row Qwen3 certified head now defaults to F16 64 x 256 on 3 stages (run 240: 182.3 us
# against the element-wise tile's 201.8 / 202.8 in the decode graph). Its last neighbours (2
# stages; K 128 on 3; 32 rows x 256 on 3) against base (the new default), old (the
# element-wise tile) and base2, then paired pipelined AR and spec@6.55, base against old
# (8 rounds, a control arm): issue 3's AR row with the new head.
# Prediction: s2 within +-5 us of s3; paired AR ~1.005x, beyond the control; pipelined AR
# ~248-249 tok/s.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
t=bench/h200/certified241
V="base|;old|--tiles $t/old.json"
for v in f64k256s2 f64k128s3 f32k256s3; do V+=";$v|--tiles $t/$v.json"; done
variants bf16 "$V;base2|" 300
grep -E "^bf16 \S+ decode: (span|attention)" "$OUT/timeline-variants-1024.log" | cut -c1-150
P="--pipeline 1"
engine 1024 pair 300 --taus 6.55 --paired-rounds 8 --paired "base|$P;old|$P --tiles $t/old.json"
grep "^paired\|pipelined" "$OUT/engine-pair.log" | cut -c1-300
pack; archive_only
