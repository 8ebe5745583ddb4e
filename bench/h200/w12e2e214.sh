#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), prepared in session 41, run in session 42 as run 214. Issue 7's
# rows with today's defaults (the bf16 arm now certifies its one-row LM head: "auto", session 40;
# the last W12 pairs, runs 183/185, predate it): (1) the kernel table at one and 16 rows
# (default tiles, cold L2: the W12 GEMV's fraction of the copy bandwidth on its 12-bit bytes);
# (2) end to end, Qwen3-8B 1k, W12 "auto" against bf16, 6 paired rounds.
# Prediction: the one-row W12 GEMVs at 78-85% of the copy bandwidth; AR 1.08-1.10x (the bf16
# arm ~1% faster than in run 185), spec@6.55 0.98-1.00x.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
timeout 150 python3 bench/w12_speed.py --rows 1,16 --no-sweep --e2e 0 --model qwen3-8b \
    --out "$OUT/kernels.json" >"$OUT/kernels.log" 2>&1
echo "kernels rc=$?"; tail -14 "$OUT/kernels.log" | cut -c1-200
pack
timeout 260 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-matrices auto --paired 6 --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-1024.log" | cut -c1-300
pack; archive_only
