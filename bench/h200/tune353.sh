#!/usr/bin/env bash
# Device call (~5 min + cold start; no carry): run 353, issue 7 (the spec target) and the bf16
# baseline's fence (issue 3).
# Run 352 (H100): w12_tokens with x streamed is right (GPU tests, the probe clean with FENCE 4)
# but its down takes 34.98 us a layer in the verify against w12_tc's 26.94 plus its split
# sum's 3.42 (x2t2: 2 plane stages, 2 x stages, rounds of 2 tiles). This call: the down alone
# at 16 tokens (cold L2, residual) on STREAM_TILES (deeper plane ring, a third x stage, one tile
# a round) beside w12_tc and cuBLAS; then session 73's planned bf16 half (next351.sh, folded in
# here): bf16_row's residual tile probed
# with its fence and without, and the bf16 decode graph with it (base, base2) and without (nof,
# nof2: BF16_ONE_ROW_TILE 16).
# Prediction: x2t2 ~33 us standalone, s4x3t2 better by 2-4 us if the rings' depth is what holds
# it (72 kB of loads in flight an SM against 136 kB); if all stay above w12_tc's, x's L2 reads
# are the cost (next: x multicast to a cluster's two SMs). The bf16 fence: 0 runs off with it,
# a few or none without; its cost under 0.02 ms a decode.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
timeout 150 python3 bench/w12_tokens_speed.py --shapes down --tokens 16 \
    --out "$OUT/tokens-down.json" > "$OUT/tokens-down.log" 2>&1
echo "speed rc=$?"; grep -E "^(copy|shape|down)" "$OUT/tokens-down.log" | cut -c1-200
pack
PROBE_S=100 probe probe-bf16row --kernel bf16row --tokens 1 --fence=-1,0 \
    --shapes 4096x4096,4096x12288
pack
MODEL=qwen3-8b variants "bf16" "base|;nof|$(sw w12_row.BF16_ONE_ROW_TILE=16);base2|;nof2|\
$(sw w12_row.BF16_ONE_ROW_TILE=16)" "${VAR_S:-150}" | grep decode
back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
pack
archive_only
