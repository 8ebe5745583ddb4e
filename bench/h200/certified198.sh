#!/usr/bin/env bash
# Device call B (~8 min; no carry), session 39, after call A (certified197.sh): the certified LM
# head end to end with the tile that call A's timeline chose (TILE: a tiles file, or empty for
# the rules'). 1. Qwen3-8B at 1k, paired in one process (6 rounds, the host-synchronous and the
# pipelined loops): exact head against certified. 2. Issue 3's 1k row with the certified head
# (AR, pipelined AR, spec, pipelined spec, token forcing against the PyTorch target). 3. The
# Llama-3.1-8B 1k row with it. Prediction: AR +3-4% (pipelined ~249-253 tok/s), spec@6.55 +2-3%;
# forcing passes (the tokens are the exact head's by construction).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.log"
C=(--target-head certified ${TILE:+--tiles "$TILE"})
engine 1024 paired 230 --paired-rounds 6 --taus 6.55 \
    --paired "exact|;certified|${C[*]}"
grep "^paired" "$OUT/engine-paired.log" | cut -c1-300
pack
engine 1024 cert 150 "${C[@]}"
pack
E=(--batches '' --repeats 3 --hf-baseline 0 --profile 0 --torch-baseline 0)
timeout 150 python3 bench/engine_speed.py --models llama3.1-8b --contexts 1024 "${E[@]}" \
    --taus 6.55 "${C[@]}" --out "$OUT/engine-llama.json" >"$OUT/engine-llama.log" 2>&1
echo "engine llama rc=$?"; grep -E "ctx 1024" "$OUT/engine-llama.log" | cut -c1-300
pack; archive_only
