#!/usr/bin/env bash
# Device call (~8 min + cold start; no carry), session 34: issue 3's rows with today's defaults
# (BOOK_AT_LAUNCH on, run 170): the Qwen3-8B shape at 8k and 32k and the Llama-3.1-8B shape at
# 1k (AR, verify16/AR, draft/AR, spec@6.55, pipelined, token forcing), one process.
set -u
export PYTHONPATH=$PWD/src:$PWD
timeout 540 python3 bench/engine_speed.py --contexts 8192,32768 --llama --llama-contexts 1024 \
    --batches '' --repeats 3 --hf-baseline 0 --profile 0 --torch-baseline 0 --taus 6.55 \
    --out "$OUT/engine-rows.json" >"$OUT/engine-rows.log" 2>&1
echo "engine rows rc=$?"; grep -E "ctx (8192|32768|1024)" "$OUT/engine-rows.log" | cut -c1-300
