#!/usr/bin/env bash
# Device call (~8 min + cold start; no carry), session 40, after runs 199-200 (Qwen3-8B: the
# certified head in one-row forwards, tile b: decode -1.8% back to back; paired AR 1.022x in run
# 199, 1.005x [0.992-1.018] in run 200: noisy). 1. The Llama-3.1-8B timeline (1k): the exact
# head twice, certified-decode on the rules' tile and on bench/h200/certified200/llama_*
# (element-wise one-row tiles at its 128,256-row head), compose_tiles picks one. 2. Qwen3-8B
# paired again, 8 rounds, exact against auto (now certified-decode). 3. Llama paired, 8 rounds,
# exact against certified-decode on the composed tile.
# Prediction: Llama's one-row head ~245 -> ~185 us, AR +1.5-2%; Qwen3 AR 1.01-1.02x.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.log"
T=bench/h200/certified200
C="--target-head certified-decode"
export MODEL=llama3.1-8b
variants bf16 "exact|;cert|$C;b|$C --tiles $T/llama_b.json;e1|$C --tiles $T/llama_e1.json;\
e3|$C --tiles $T/llama_e3.json;exact2|" 150
unset MODEL
python3 bench/compose_tiles.py "$OUT/timeline-variants-1024-llama3.1-8b.json" --kind certified \
    --base cert --forwards decode --tiles-out "$OUT/llama-composed.json" --out "$OUT/compose.json" \
    2>&1 | grep -v '^{'
pack
engine 1024 paired 200 --paired-rounds 8 --taus 6.55 --paired "exact|--target-head exact;auto|"
grep "^paired" "$OUT/engine-paired.log" | cut -c1-300
pack
timeout 200 python3 bench/engine_speed.py --models llama3.1-8b --batches '' --repeats 3 \
    --hf-baseline 0 --profile 0 --torch-baseline 0 --taus 6.55 --paired-rounds 8 \
    --paired "exact|--target-head exact;certified|$C --tiles $OUT/llama-composed.json" \
    --out "$OUT/engine-llama-paired.json" >"$OUT/engine-llama-paired.log" 2>&1
echo "llama paired rc=$?"; grep "^paired" "$OUT/engine-llama-paired.log" | cut -c1-300
pack; archive_only
