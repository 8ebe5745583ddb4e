#!/usr/bin/env bash
# Device call (~3 min + cold start; no carry), prepared in session 37, not run. After runs
# 186-189 (the FP8 drafter's o, gate|up and fc picked in the draft graph: draft -15 us), what
# the draft graph still loses to bounds is mostly q|k|v (11.5 us a layer against 6.0), down
# (17.2 against 12.0) and the stacked k|v (15.8 against 10.0). Five families for those three
# and the head (bench/h200/tiles191: weights-left tiles of 16 and 32 rows, K splits of 2-8,
# BLOCK_K 512, 3 stages; each compiled here for sm_90) in the timeline's draft, then
# compose_tiles --kind fp8 --forwards draft, then the composed file against the base in one
# timeline (base twice) and paired. Prediction: one or two shapes 3-10% faster in the graph;
# the draft -5 to -15 us; spec level within the pairs' noise.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.log"
V="base|"
for f in bench/h200/tiles191/*.json; do V="$V;$(basename "$f" .json)|--tiles $f"; done
variants bf16 "$V;base2|" 140
pack
python3 bench/compose_tiles.py "$OUT/timeline-variants-1024.json" --kind fp8 --forwards draft \
    --tiles-out "$OUT/composed.json" --out "$OUT/composed-report.json" >"$OUT/compose.log" 2>&1
echo "compose rc=$?"; grep -v '^{"bench"' "$OUT/compose.log"
mv "$OUT/timeline-variants-1024.json" "$OUT/timeline-families.json"
mv "$OUT/timeline-variants-1024.log" "$OUT/timeline-families.log"
pack
if grep -q '"kernel"' "$OUT/composed.json" 2>/dev/null; then
    variants bf16 "base|;composed|--tiles $OUT/composed.json;base2|" 60
    pack
    engine 1024 paired 100 --paired-rounds 8 --paired "base|;composed|--tiles $OUT/composed.json"
    grep "^paired" "$OUT/engine-paired.log"
fi
pack; archive_only
