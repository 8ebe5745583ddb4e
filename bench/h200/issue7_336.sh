#!/usr/bin/env bash
# Device calls (~4 min + cold start, then PART=llama ~3.5 min warm; no carry): run 336, issue 7's
# own numbers with w12_row.EARLY_ESCAPES on (since run 334), best on an H200 (the last H200 ones:
# run 299, AR 1.112x, spec 1.004x).
# 1. w12_speed's one-row table (issue 7's GEMV target, >= 85% of the copy bandwidth), alone and
#    chained as the decode graph launches them (run 333, H100, before EARLY_ESCAPES: a layer
#    by its bytes 82.2% alone, 93.0% chained; bf16_row 92.7% / 100.3%).
# 2. End to end at 1k, Qwen3-8B, 3 paired rounds over bf16 with the control and the arm
#    before_334 (EARLY_ESCAPES off), token forcing on every arm. On an H100 the same at
#    Llama-3.1-8B's shape instead (Qwen3's ran in run 335); PART=llama: Llama on any card.
# Prediction: H200 AR 1.19-1.23x, spec 1.10-1.15x (H100 run 335: 1.215x / 1.151x); the table
# chained a layer ~94% on the H100, a point or two less on the H200 (its copy bandwidth is
# ~1.4x the H100's on the same SMs). Llama on an H100: AR +1.5-2% over before_334, spec level.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
if [ "${PART:-qwen}" != llama ]; then
    timeout 170 python3 bench/w12_speed.py --rows 1 --no-sweep --e2e 0 --out "$OUT/gemv.json" \
        >"$OUT/gemv.log" 2>&1
    echo "gemv rc=$?"; grep -E "weighed|Error" "$OUT/gemv.log" | cut -c1-330
    pack
fi
if [ "${PART:-qwen}" != llama ] && grep -q H200 "$OUT/gpu.log"; then
    w12_e2e e2e-1024 qwen3-8b before_334 3 300
else
    w12_e2e e2e-llama llama3.1-8b before_334 3 300
fi
pack
archive_only
