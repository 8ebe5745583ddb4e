#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), prepared in session 47, not run: superseded by
# join270.sh (session 48: W12 auto now gains in verify from ESCAPE_TILES and JOIN_INPUT).
# Issue 7's spec@6.55 (>= 1.2x bf16) is flat with "auto" (gate|up + down, the head certified:
# run 255 1.000x): at 16 rows the W12 gate|up is ~4 us a layer faster than bf16's but the W12
# down ~0.8 us slower, and each W12 multiply breaks the norm hand-off on both sides (72 norm
# launches, 78 us a verify, run 258). gate|up alone keeps the down -> q|k|v hand-off. One
# process, Qwen3-8B 1k, paired 6 rounds over bf16 with a control: "auto" (gate|up + down) and
# gate|up only; forcing on every arm's single run.
# Prediction: gate|up only AR ~1.07x (its one-row gate|up -8 us a layer, no down gain), spec
# ~1.01-1.02x; "auto" ~1.10x / ~1.00x as in run 255.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
timeout 480 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-matrices 'auto;gate_up' --paired 6 --out "$OUT/e2e-1024.json" \
    >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-1024.log" | cut -c1-300
pack; archive_only
