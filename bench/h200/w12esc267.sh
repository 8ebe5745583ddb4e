#!/usr/bin/env bash
# Device call (~7 min + cold start; no carry), session 48: run 267. The 16-row W12 tiles with
# ESC_ROWS (kernels/w12_linear.ESCAPE_TILES: q|k|v, o, gate|up and down; runs 265-266 standalone
# -3 to -7%) end to end: one process, Qwen3-8B 1k, paired 5 rounds over bf16 with a control:
# W12 every matrix (the new tiles), the same with the tiles before them (no_esc_rows), and
# "auto" (gate|up + down, the head bf16 and certified); forcing on every arm's single run.
# Prediction: every matrix spec@6.55 +2-3% over no_esc_rows, AR level; auto spec ~1.02x bf16.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
timeout 500 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-arms no_esc_rows --w12-matrices auto --paired 5 --out "$OUT/e2e-1024.json" \
    >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-1024.log" | cut -c1-300
pack; archive_only
