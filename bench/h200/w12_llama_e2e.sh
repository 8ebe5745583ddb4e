#!/usr/bin/env bash
# Device call (~6 min; no carry): the Llama-3.1-8B shape end to end at 1k with run 123's swept
# W12 tiles (TILES, a tiles file, over the compiled-in ones for every arm): bf16, W12 (every
# matrix) and the MATRICES arms in ROUNDS (4) paired rounds, within E2E_S (420).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
timeout "${E2E_S:-420}" python3 bench/w12_speed.py --model llama3.1-8b --rows '' --e2e 1024 \
    --tiles "$TILES" --w12-matrices "${MATRICES:-auto}" --paired "${ROUNDS:-4}" \
    --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-1024.log" | cut -c1-300; pack
archive_only
