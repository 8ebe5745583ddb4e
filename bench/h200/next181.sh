#!/usr/bin/env bash
# Device call (~2 min + cold start; no carry), session 35's last: issue 3's Llama-3.1-8B 1k row
# with the FP8 drafter and head as the CUDA default (its shapes have no FP8_TILES entries: the
# bf16 tiles, on which every FP8 multiply of run 179 but k|v was as fast or faster). Run 171
# before: AR 232.7, spec 1,132 (pipelined 1,209).
set -u
export PYTHONPATH=$PWD/src:$PWD
timeout 140 python3 bench/engine_speed.py --contexts '' --llama --llama-contexts 1024 \
    --batches '' --repeats 3 --hf-baseline 0 --profile 0 --torch-baseline 0 --taus 6.55 \
    --out "$OUT/engine-llama.json" >"$OUT/engine-llama.log" 2>&1
echo "engine llama rc=$?"; grep -E "ctx 1024" "$OUT/engine-llama.log" | cut -c1-300
