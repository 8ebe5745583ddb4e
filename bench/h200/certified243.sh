#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), session 45: run 243.
# Run 242: the F16 one-row head on 2 warps took 162.9 us against 181.7 on 4 (Qwen3); Llama's
# on 4 warps 157.6 against its element-wise 177.3. Now compiled in: Qwen3 64 x 256 on 2 warps,
# Llama 64 x 256 on 4 warps (3 stages both). Qwen3 decode timeline: base against 4 warps,
# 2 warps on 4 and 2 stages, K 128, 32 rows, 1 warp, base2; Llama base against 2 warps,
# base2; then paired pipelined AR and spec@6.55, base against 4 warps (8 rounds, a control).
# Prediction: 1 warp or 32 rows within +-5 us of base; Llama on 2 warps ~145 us; paired AR
# ~1.004x; base pipelined AR ~250 tok/s.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
t=bench/h200/certified243
V="base|"
for v in w4 w2s4 w2s2 w2k128 n32w2 w1; do V+=";$v|--tiles $t/$v.json"; done
variants bf16 "$V;base2|" 300
grep -E "^bf16 \S+ decode: (span|attention)" "$OUT/timeline-variants-1024.log" | cut -c1-150
MODEL=llama3.1-8b variants bf16 "base|;w2|--tiles $t/llama-w2.json;base2|" 200
grep -E "^bf16 \S+ decode: (span|attention)" "$OUT/timeline-variants-1024-llama3.1-8b.log" \
    | cut -c1-150
pack
P="--pipeline 1"
engine 1024 pair 240 --taus 6.55 --paired-rounds 8 --paired "base|$P;w4|$P --tiles $t/w4.json"
grep "^paired" "$OUT/engine-pair.log" | cut -c1-300
pack; archive_only
