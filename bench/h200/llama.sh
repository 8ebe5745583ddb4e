#!/usr/bin/env bash
# Device call (~4 min, no carry): issue 3's Llama-3.1-8B row. (1) engine_speed at the Llama shape
# with the rule tiles; (2) the one-row bf16 loop sweep at its shapes; (3) the winners as a tiles
# file and engine_speed again with it (EngineConfig.tiles).
set -u
export PYTHONPATH=$PWD/src:$PWD
E="python3 bench/engine_speed.py --models '' --llama --llama-contexts 1024 --batches '' --profile 0 --hf-baseline 0 --repeats ${REPEATS:-3}"
timeout 150 bash -c "$E --out $OUT/llama-rule.json" >"$OUT/llama-rule.log" 2>&1
echo "llama rule tiles rc=$?"; grep "ctx 1024:" "$OUT/llama-rule.log" | cut -c1-300
timeout "${BF16_S:-110}" python3 bench/kernel_sweep.py --rows 1 --grid loop --model llama3.1-8b \
    --out "$OUT/bf16-loop-llama.json" >"$OUT/bf16-loop-llama.log" 2>&1
echo "bf16 llama sweep rc=$?"; grep "^M=" "$OUT/bf16-loop-llama.log" | cut -c1-220
python3 bench/w12_speed.py --rows '' --e2e 0 --tiles-out "$OUT/tiles-llama.json" \
    --tiles-from "$OUT/bf16-loop-llama.json" | cut -c1-300
timeout 150 bash -c "$E --tiles $OUT/tiles-llama.json --out $OUT/llama-swept.json" \
    >"$OUT/llama-swept.log" 2>&1
echo "llama swept tiles rc=$?"; grep "ctx 1024:" "$OUT/llama-swept.log" | cut -c1-300
