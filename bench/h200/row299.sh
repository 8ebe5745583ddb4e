#!/usr/bin/env bash
# Device call (~8.5 min + cold start; no carry): run 299, meant for the H200 (runs 296-298 ran
# on an H100). The one-row forwards on kernels/w12_row.py, bf16 (BF16_ONE_ROW) and W12
# (ONE_ROW): on the H100 the decode graph was 3.8% (bf16) and 4.6% (W12) shorter, paired AR
# 1.030x (bf16) and W12 every matrix 1.209x over bf16 against 1.146x without, forcing passed.
# 1. decode back to back, bf16 and W12 every matrix: base, row, base2;
# 2. issue 3: Qwen3-8B 1k paired base/row (5 rounds), then the row arm alone (pipelined AR,
#    spec@6.55, token forcing), then Llama-3.1-8B's the same way alone;
# 3. issue 7: end to end with BF16_ONE_ROW in every arm (the bf16 arm is our fastest bf16):
#    W12 q|k|v, o, gate|up and down; the same with ONE_ROW; the same again; paired (4 rounds)
#    over bf16 with the control, forcing on every arm.
# Prediction: H200 decode -3% (bf16) / -4% (W12); Qwen3 pipelined AR ~255 (target 250);
# W12+ONE_ROW over bf16+BF16_ONE_ROW AR ~1.15x (target 1.25x), spec ~1.03x (1.2x).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
s="--switch kernels.w12_row"
variants bf16 "base|;row|$s.BF16_ONE_ROW=1;base2|" 150
MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" "base|;row|$s.ONE_ROW=1;base2|" 150
pack
engine 1024 paired 150 --paired-rounds 5 --taus 6.55 --paired "base|;row|$s.BF16_ONE_ROW=1"
grep "^paired" "$OUT/engine-paired.log" | sort -u | cut -c1-300
engine 1024 row 100 --taus 6.55 $s.BF16_ONE_ROW=1
llama 1024 llamarow 100 --taus 6.55 $s.BF16_ONE_ROW=1
pack
timeout 300 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-base qkv,o,gate_up,down --w12-arms row_one,same --paired 4 $s.BF16_ONE_ROW=1 \
    --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^e2e" "$OUT/e2e-1024.log" | cut -c1-300
pack; archive_only
