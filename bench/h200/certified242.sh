#!/usr/bin/env bash
# Device call (~5 min + cold start; no carry), session 45: run 242.
# The F16 one-row head (run 241: 181.6 us against the FP8 head's 150.6 on the same bytes):
# how much of the rest is the candidates' exact pass at the end of the programs that have
# candidates (each first-wave program has at least its own tile's top). Qwen3 decode timeline:
# base, its exact pass deferred to the last tiles at one row too (DEFER_MIN_ROWS 1; run 207
# lost with it on the element-wise tile, 4,748 programs), the candidates masked instead of
# gathered (COMPACT 0), both, two more tiles (128 x 256 on 4 warps, 2 stages; 64 x 256 on 2
# warps), base2. Then Llama-3.1-8B's head on F16 (64 x 256, 3 and 2 stages) against its
# element-wise tile.
# Prediction: defer1 -5..-15 us (fewer first-wave candidates with 2,374 programs); COMPACT 0
# level; Llama's head ~175 -> ~155 us (its element-wise tile took 181.5 in run 201).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
t=bench/h200/certified242
S="--switch kernels.certified"
V="base|;defer1|$S.DEFER_MIN_ROWS=1;compact0|$S.COMPACT=0"
V+=";both|$S.DEFER_MIN_ROWS=1 $S.COMPACT=0"
for v in f128k256w4 f64k256w2; do V+=";$v|--tiles $t/$v.json"; done
variants bf16 "$V;base2|" 300
grep -E "^bf16 \S+ decode: (span|attention)" "$OUT/timeline-variants-1024.log" | cut -c1-150
MODEL=llama3.1-8b variants bf16 "base|;s3|--tiles $t/llama-s3.json;s2|--tiles $t/llama-s2.json;base2|" 300
grep -E "^bf16 \S+ decode: (span|attention)" "$OUT/timeline-variants-1024-llama3.1-8b.log" \
    | cut -c1-150
pack; archive_only
