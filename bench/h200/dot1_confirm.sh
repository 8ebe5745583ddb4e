#!/usr/bin/env bash
# Device call (~6 min; no carry): run 132. The timeline with lanes (tests first), compiled tiles
# and bench/h200/dot1.json, bf16 and W12 "auto"; then bf16 base against dot1 in 8 paired rounds.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TILES="- bench/h200/dot1.json" TL_S=200 bash "$(dirname "$0")/timeline.sh" | grep -vE "^  linear 16|^  w12_linear 1[56]x"
cd "$OUT" && tar xzf all.tgz && rm all.tgz && cd - >/dev/null
timeout 300 python3 bench/engine_speed.py --contexts 1024 --models qwen3-8b \
    --paired "base|;dot|--tiles bench/h200/dot1.json" --paired-rounds 8 \
    --out "$OUT/paired-1024.json" >"$OUT/paired-1024.log" 2>&1
echo "paired rc=$?"; grep "^paired" "$OUT/paired-1024.log" | cut -c1-220; pack
archive_only
