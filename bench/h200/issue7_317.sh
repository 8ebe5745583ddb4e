#!/usr/bin/env bash
# Device call (~5.5 min + cold start; no carry): run 317, issue 7's targets with today's
# defaults (w12_tc's verify route on since run 314) on the card it lands on (they are an
# H200's). End to end at 1k, Qwen3-8B shapes, W12 every matrix, paired over bf16 for PAIRED
# rounds (default 5) with the control, token forcing on every arm: w12 (the defaults),
# linear_verify (the verify forwards on w12_linear's tiles, as before run 314) and same (w12
# again: the W12 arms' own spread).
# Prediction: on an H200, AR ~1.11x as run 299; spec 1.02-1.04x for w12, ~1.00x for
# linear_verify (run 314's +2.2% on an H100, less where the bandwidth is higher).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
timeout "${E2E_S:-330}" python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-base qkv,o,gate_up,down --w12-arms linear_verify,same \
    --paired "${PAIRED:-5}" --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^e2e" "$OUT/e2e-1024.log" | cut -c1-300 | tail -30
pack; archive_only
