#!/usr/bin/env bash
# Device call (~5 min + cold start; no carry), prepared in session 46, not yet run: run 253.
# Issue 7 (W12 AR >= 1.25x, spec@6.55 >= 1.2x over bf16): W12 "auto" converts the LM head too,
# so its head is W12's exact one (run 233: 210.7 us + argmax 5.1 at one row, 244.2 + 14.8 at 16
# rows), while the bf16 arm now takes the certified heads (157-165 us at one row; 156 + 24 +
# 1.5 at 16 rows since run 249). One process, Qwen3-8B 1k, paired 6 rounds over bf16 (with a
# control): W12 every matrix, "auto" (gate|up, down, LM head) and gate|up + down only (the LM
# head bf16, so certified), token forcing on every arm's single run.
# Prediction: gate_up,down AR ~1.10x, spec ~1.03x against "auto"'s ~1.087x / ~1.011x: then
# "auto" leaves the head out where the head has a certified tile.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
timeout 420 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-matrices 'auto;gate_up,down' --paired 6 --out "$OUT/e2e-1024.json" \
    >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-1024.log" | cut -c1-300
pack; archive_only
