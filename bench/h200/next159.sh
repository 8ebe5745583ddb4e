#!/usr/bin/env bash
# Device call (~5 min, warm; no carry): issue 3's other rows with the norm hand-off on: the
# Qwen3-8B shape at 32k (8k: the first run) and the Llama-3.1-8B shape at 1k (AR, spec@6.55, pipelined, forcing).
set -u
export PYTHONPATH=$PWD/src:$PWD
timeout 330 python3 bench/engine_speed.py --contexts 32768 --llama --llama-contexts 1024 --batches '' \
    --repeats 3 --hf-baseline 0 --profile 0 --torch-baseline 0 --taus 6.55 \
    --out "$OUT/engine-rows.json" >"$OUT/engine-rows.log" 2>&1
echo "engine rows rc=$?"; grep -E "ctx (32768|1024)" "$OUT/engine-rows.log" | cut -c1-300
