#!/usr/bin/env bash
# Device call (~1.5 min + cold start; no carry), prepared in session 48, run in session 49 as run
# 271 with esc272.sh in the same call (this script with its last line "pack" only, then esc272.sh).
# ESCAPE_TILES (kernels/w12_linear: the 16-row tiles with ESC_ROWS) hold Qwen3-8B's shapes only
# (runs 265-266); Llama-3.1-8B's "auto" matrices (gate|up 28672 x 4096, down 4096 x 14336) still
# run the tiles before them. bench/w12_join.py at Llama's shapes, 16 rows: each variant's best
# of run 259's tile families. Then ESCAPE_TILES entries for the winners, confirmed end to end
# (bench/w12_speed.py --model llama3.1-8b --w12-base auto --w12-arms no_esc_rows, forcing).
# Prediction: as at Qwen3's: gate|up -1 to -2%, down -5 to -7% with esc4.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
timeout 240 python3 bench/w12_join.py --model llama3.1-8b --rows 16 --shapes qkv,o,gate_up,down \
    --variants plain,noesc,esc1,esc2,esc4,j2esc2 --out "$OUT/esc-llama-16.json" \
    >"$OUT/esc-llama-16.log" 2>&1
echo "llama rc=$?"; grep -vE "^\{" "$OUT/esc-llama-16.log" | tail -5 | cut -c1-220
pack; archive_only
