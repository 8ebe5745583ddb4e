#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), session 37, after run 185. The FP8 drafter's
# multiplies inside the draft graph lose ~130 us to their bounds on the H200 (run 181: o 9.2,
# q|k|v 11.2, down 17.3, fc 32.4 us against 4.0 / 6.0 / 12.0 / 20.0), and their tiles were
# chosen in isolation (run 180, fp8_speed, cold weights), where the runners-up were within
# 1-4%. Here: four FP8 tile families (bench/h200/tiles187: the second- and third-best isolated
# tiles, K splits, 3 load stages) in the timeline's draft, compose_tiles --kind fp8 --forwards
# draft, the composed file paired against the base, then batches of 2 and 4 with the defaults
# (token forcing on each run's first 2 rows: batched forcing has not run on a GPU yet).
# Prediction: draft -5 to -20 us (under 0.4% of a step); spec level within the pairs' noise.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.log"
H=bench/h200/tiles187
V="base|"
for f in $H/*.json; do V="$V;$(basename "$f" .json)|--tiles $f"; done
variants bf16 "$V" 130
pack
python3 bench/compose_tiles.py "$OUT/timeline-variants-1024.json" --kind fp8 --forwards draft \
    --tiles-out "$OUT/composed.json" --out "$OUT/composed-report.json" >"$OUT/compose.log" 2>&1
echo "compose rc=$?"; grep -v '^{"bench"' "$OUT/compose.log"
pack
if grep -q '"kernel"' "$OUT/composed.json" 2>/dev/null; then
    engine 1024 paired 100 --paired-rounds 8 --paired "base|;composed|--tiles $OUT/composed.json"
    grep "^paired" "$OUT/engine-paired.log"
    pack
fi
timeout 150 python3 bench/engine_speed.py --contexts 1024 --batches 2,4 --repeats 3 \
    --hf-baseline 0 --profile 0 --torch-baseline 0 --taus 6.55 --llama-contexts '' \
    --out "$OUT/engine-batches.json" >"$OUT/engine-batches.log" 2>&1
echo "engine batches rc=$?"; grep -E "ctx 1024|batch" "$OUT/engine-batches.log" | grep -v "^{" | cut -c1-300
pack; archive_only
