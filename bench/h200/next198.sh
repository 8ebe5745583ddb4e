#!/usr/bin/env bash
# Device call (~4 min + cold start; no carry), prepared in session 38. The Llama-3.1-8B shape's
# one-row gate|up (1 x 28,672 x 4,096) reads at 97% of its bound in the graph (run 191: 1,817
# us a forward against 1,764; Qwen3's 24,576-row gate|up on the 16-row tensor-core tile 99.3%),
# and Llama's pipelined AR is 243.8-247.4 tok/s against issue 3's 250. Run 166 tried Qwen3's
# tile there (BLOCK_N 64: 448 programs, more than one wave at 3 an SM) and lost 35 us. Here,
# in the Llama timeline's decode, one wave (BLOCK_N 128 on 8 warps: 224 programs), many small
# ones (BLOCK_N 32), and two element-wise tiles (bench/h200/tiles198; run 166's BLOCK_N 64 as
# a control); then compose_tiles --forwards decode, and the pick paired (AR) with its 1k row.
# Prediction: 40% that one saves 15-40 us a one-token forward (Llama AR +0.4-1%).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.log"
V="base|"
for f in bench/h200/tiles198/*.json bench/h200/tiles166/gu1dot.json; do
    V="$V;$(basename "$f" .json)|--tiles $f"
done
export MODEL=llama3.1-8b
variants bf16 "$V;base2|" 150
unset MODEL
T="$OUT/timeline-variants-1024-llama3.1-8b.json"
python3 bench/compose_tiles.py "$T" --kind bf16 --forwards decode --tiles-out "$OUT/composed.json" \
    --out "$OUT/composed-report.json" >"$OUT/compose.log" 2>&1
echo "compose rc=$?"; grep -v '^{"bench"' "$OUT/compose.log"
pack
if grep -q '"kernel"' "$OUT/composed.json" 2>/dev/null; then
    timeout 200 python3 bench/engine_speed.py --models llama3.1-8b --batches '' --repeats 3 \
        --hf-baseline 0 --profile 0 --torch-baseline 0 --taus 6.55 --paired-rounds 8 \
        --paired "base|;composed|--tiles $OUT/composed.json" \
        --out "$OUT/engine-paired.json" >"$OUT/engine-paired.log" 2>&1
    echo "paired rc=$?"; grep "^paired" "$OUT/engine-paired.log"
fi
pack; archive_only
