#!/usr/bin/env bash
# Device call (~8 min + cold start; no carry), session 38: issue 3's rows with today's defaults
# (runs 190-191's FP8 drafter tiles in linear.FP8_TILES: the Qwen3 head and q|k|v, the Llama
# down), and token forcing now at every context (spec/forcing.py in chunks of 4,096 positions;
# until now not run at 32k). Qwen3-8B shape at 1k, 8k and 32k, then Llama-3.1-8B at 1k.
# Prediction: forcing passes at 32k (AR and spec); Qwen3 1k pipelined 1,280-1,310, Llama 1k
# pipelined ~1,300 (run 191: 1,299 with the down tile as a file).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.log"
E=(--batches '' --repeats 3 --hf-baseline 0 --profile 0 --torch-baseline 0)
timeout 370 python3 bench/engine_speed.py --contexts 1024,8192,32768 --llama-contexts '' \
    "${E[@]}" --out "$OUT/engine-rows.json" >"$OUT/engine-rows.log" 2>&1
echo "engine rows rc=$?"; grep -E "ctx (1024|8192|32768)" "$OUT/engine-rows.log" | cut -c1-300
pack
timeout 140 python3 bench/engine_speed.py --models llama3.1-8b --contexts 1024 "${E[@]}" \
    --taus 6.55 --out "$OUT/engine-llama.json" >"$OUT/engine-llama.log" 2>&1
echo "engine llama rc=$?"; grep -E "ctx 1024" "$OUT/engine-llama.log" | cut -c1-300
pack; archive_only
