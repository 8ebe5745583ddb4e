#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), session 40, after run 201 (Llama-3.1-8B's one-row
# certified tile taken: "auto" now certifies one-row forwards at both 8B shapes). Issue 3's rows
# with the defaults and token forcing: Llama-3.1-8B at 1k, Qwen3-8B at 8k.
# Prediction: Llama pipelined AR ~247-250 (run 193: 243.8-247.4), forcing passes on both.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.log"
timeout 230 python3 bench/engine_speed.py --models llama3.1-8b --llama-contexts 1024 \
    --batches '' --repeats 3 --hf-baseline 0 --profile 0 --torch-baseline 0 \
    --out "$OUT/engine-llama.json" >"$OUT/engine-llama.log" 2>&1
echo "llama rc=$?"; grep -E "ctx 1024" "$OUT/engine-llama.log" | cut -c1-300
pack
engine 8192 row8k 230
pack; archive_only
