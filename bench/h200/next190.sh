#!/usr/bin/env bash
# Device call (~8 min + cold start; no carry), prepared in session 37, not run. The
# Llama-3.1-8B drafter's q|k|v, o, k|v and fc share Qwen3-8B's shapes (linear.FP8_TILES), but
# its gate|up (28,672 x 4,096), down (4,096 x 14,336) and head (128,256 x 4,096) have no FP8
# tiles and take the bf16 tiles of their shapes. Here, on whatever card comes (printed):
# 1. fp8_speed sweeps those three at 16 rows (cold weights) into one tiles file;
# 2. the Llama timeline's draft with it against the base (twice), then compose_tiles --kind
#    fp8 --forwards draft (each shape's fastest in the graph, >= 1% under the base);
# 3. the composed file paired against the base at the Llama shape, then its 1k row with
#    forcing. If it wins: those tiles into linear.FP8_TILES.
# Prediction: gate|up and down 5-15% faster each in the graph (the Qwen3 runs 180 / 186: the
# swept tiles beat the bf16 ones on FP8 weights by 10-40%); the draft -10 to -40 us; spec
# +0.2-0.8%, under the pairs' resolution.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.log"
timeout 170 python3 bench/fp8_speed.py --model llama3.1-8b --shapes drafter \
    --only "head,gate|up,down" --repeats 10 --tiles-out "$OUT/llama-fp8.json" \
    --out "$OUT/fp8-speed-llama.json" >"$OUT/fp8-speed-llama.log" 2>&1
echo "fp8_speed rc=$?"; grep -v '^{"bench"' "$OUT/fp8-speed-llama.log" | tail -4
pack
export MODEL=llama3.1-8b
variants bf16 "base|;swept|--tiles $OUT/llama-fp8.json;base2|" 100
unset MODEL
pack
T="$OUT/timeline-variants-1024-llama3.1-8b.json"
python3 bench/compose_tiles.py "$T" --kind fp8 --forwards draft --tiles-out "$OUT/composed.json" \
    --out "$OUT/composed-report.json" >"$OUT/compose.log" 2>&1
echo "compose rc=$?"; grep -v '^{"bench"' "$OUT/compose.log"
pack
E=(--repeats 3 --hf-baseline 0 --profile 0 --torch-baseline 0 --batches '' --taus 6.55)
C=(); [ -f "$OUT/composed.json" ] && C=(--tiles "$OUT/composed.json")
if grep -q '"kernel"' "$OUT/composed.json" 2>/dev/null; then
    timeout 130 python3 bench/engine_speed.py --models llama3.1-8b --contexts 1024 "${E[@]}" \
        --paired-rounds 8 --paired "base|;composed|--tiles $OUT/composed.json" \
        --out "$OUT/engine-paired.json" >"$OUT/engine-paired.log" 2>&1
    echo "paired rc=$?"; grep "^paired" "$OUT/engine-paired.log"
    pack
fi
timeout 120 python3 bench/engine_speed.py --models llama3.1-8b --contexts 1024 "${E[@]}" \
    "${C[@]}" --out "$OUT/engine-llama.json" >"$OUT/engine-llama.log" 2>&1
echo "engine llama rc=$?"; grep -E "ctx 1024" "$OUT/engine-llama.log" | cut -c1-300
pack; archive_only
