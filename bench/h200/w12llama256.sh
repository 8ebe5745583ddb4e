#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry): run 256. Run 255 (Qwen3-8B): W12 gate|up + down
# with the bf16 head certified beat them with a W12 head (AR 1.101x against 1.084x, spec 1.000x
# against 0.966x over bf16), so "auto" now leaves the head bf16 where a 16-row certified tile
# exists. The same on the Llama-3.1-8B shape (its head 128256 x 4096 has one): "auto" (gate|up +
# down) against gate|up + down + LM head, paired 6 rounds over bf16 with a control, forcing on
# every arm's single run.
# Prediction: "auto" AR ~1.10x, spec ~1.00x; with the W12 head ~1.08x / ~0.97x.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
timeout 480 python3 bench/w12_speed.py --rows '' --e2e 1024 --model llama3.1-8b \
    --w12-matrices 'auto;gate_up,down,lm_head' --paired 6 --out "$OUT/e2e-1024.json" \
    >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-1024.log" | cut -c1-300
pack; archive_only
