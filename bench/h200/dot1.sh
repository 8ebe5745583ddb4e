#!/usr/bin/env bash
# Device call (~7 min; no carry): the one-row bf16 gate|up and LM head on the 16-row
# tensor-core tiles (bench/h200/dot1.json; dot1_gate_up.json: gate|up only), which the kernel
# timeline of run 129 showed reading faster inside the verify graph than the one-row tiles do
# inside the decode graph. Paired arms (engine_speed --paired, ROUNDS 6), then the timeline of
# the bf16 forwards with dot1.json.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
timeout "${PAIRED_S:-400}" python3 bench/engine_speed.py --contexts 1024 --models qwen3-8b \
    --paired "base|;dot|--tiles bench/h200/dot1.json;dotg|--tiles bench/h200/dot1_gate_up.json" \
    --paired-rounds "${ROUNDS:-6}" --out "$OUT/paired-1024.json" >"$OUT/paired-1024.log" 2>&1
echo "paired rc=$?"; grep "^paired" "$OUT/paired-1024.log" | cut -c1-220; pack
timeout "${TL_S:-150}" python3 bench/timeline.py --arms bf16 --tiles bench/h200/dot1.json \
    --out "$OUT/timeline-dot1.json" >"$OUT/timeline-dot1.log" 2>&1
echo "timeline rc=$?"; grep -E "^(bf16|  linear 1x|  [a-z_]+ +[0-9])" "$OUT/timeline-dot1.log" \
    | head -30 | cut -c1-200; pack
archive_only
