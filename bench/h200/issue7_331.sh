#!/usr/bin/env bash
# Device calls (~5.5 min + cold start, then PART=llama ~3 min warm; no carry): run 331, issue 7's
# own numbers with today's defaults (w12_row.NORM_WEIGHT_EARLY on since run 330), best on an
# H200 (the last H200 numbers: run 299, AR 1.112x, spec 1.004x); on an H100 they are the
# early weight's end-to-end numbers.
# 1. w12_speed's one-row table: the engine's one-row kernel at each Qwen3-8B shape against the
#    copy bandwidth (issue 7's GEMV target, >= 85%).
# 2. End to end at 1k, Qwen3-8B, 3 paired rounds over bf16 with the control and before_330 (the
#    prologue's norm weight after PDL's wait), token forcing on every arm. PART=llama: the same
#    at Llama-3.1-8B's shape.
# Prediction (H100): AR +0.5-0.8% over before_330 (decode -0.035 ms of 4.31 in run 330, bf16
# -0.032 of 5.18: the ratio moves little since bf16 gains too), spec level (verify level).
# H200: AR 1.17-1.21x, spec 1.08-1.13x (H100 1.194x / 1.150x; the multiplies' share of a step is
# smaller on the faster memory).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
if [ "${PART:-qwen}" = llama ]; then
    w12_e2e e2e-llama llama3.1-8b before_330 3 260
else
    timeout 90 python3 bench/w12_speed.py --rows 1 --no-sweep --e2e 0 --out "$OUT/gemv.json" \
        >"$OUT/gemv.log" 2>&1
    echo "gemv rc=$?"; grep -E "w12_row|Error" "$OUT/gemv.log" | cut -c1-200
    pack
    w12_e2e e2e-1024 qwen3-8b before_330 3 280
fi
pack
archive_only
