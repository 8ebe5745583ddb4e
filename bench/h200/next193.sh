#!/usr/bin/env bash
# Device call (~5 min + cold start; no carry), session 38: the Llama-3.1-8B shape's 8k and 32k
# rows with today's defaults (last measured in run 92, before the FP8 drafter, PDL "chain" and
# most tiles), token forcing at both (spec/forcing.py's chunks; run 192 passed it at 32k on
# the Qwen3-8B shape). Prediction: 8k AR ~222, pipelined spec ~1,130; 32k AR ~183, pipelined
# spec ~870 (the Qwen3 rows of run 192: 221.7 / 1,140 and 183.1 / 875); forcing passes.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.log"
timeout 420 python3 bench/engine_speed.py --models llama3.1-8b --llama-contexts 8192,32768 \
    --batches '' --repeats 3 --hf-baseline 0 --profile 0 --torch-baseline 0 \
    --out "$OUT/engine-llama-long.json" >"$OUT/engine-llama-long.log" 2>&1
echo "engine llama rc=$?"; grep -E "ctx (8192|32768)" "$OUT/engine-llama-long.log" | cut -c1-300
pack; archive_only
