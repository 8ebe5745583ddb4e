#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry): run 305, issue 3's whole record at 1k with
# today's defaults (one-row multiplies on kernels/w12_row.py, runs 299-304): bench/engine_speed.py
# at the Qwen3-8B and Llama-3.1-8B shapes, every published tau (3.0, 4.25, 6.55, 7.87), the
# forwards K = 1-64, the step breakdown, token forcing, and transformers eager on the same
# checkpoint (the side-by-side baseline).
# Prediction: as runs 303-304 on one H200 (Qwen3 pipelined AR 253.2-253.6, spec@6.55 pipelined
# 1,328-1,335; Llama 261.0 / 1,342); eager ~37 (Qwen3) and ~51 tok/s (Llama) as in run 92.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
timeout 480 python3 bench/engine_speed.py --contexts 1024 --llama --llama-contexts 1024 \
    --batches '' --repeats 3 --hf-baseline 1 --profile 0 --torch-baseline 0 \
    --out "$OUT/engine-full.json" >"$OUT/engine-full.log" 2>&1
echo "engine full rc=$?"; grep -vE '^\{' "$OUT/engine-full.log" | tail -25 | cut -c1-300
pack; archive_only
