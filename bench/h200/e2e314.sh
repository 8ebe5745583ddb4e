#!/usr/bin/env bash
# Device call (~5 min + cold start; no carry): run 314, issue 7 end to end at 1k on the card it
# lands on: W12 every matrix with and without w12_tc's VERIFY route (swizzled planes, unsplit
# units: W12_ARMS tcsw1_verify), paired over bf16 for PAIRED rounds (default 6) with the
# control; forcing on every arm. Run 312 (3 rounds, H100) could not separate them.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
timeout "${E2E_S:-560}" python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-base qkv,o,gate_up,down --w12-arms "${W12_E2E_ARM:-tcsw1_verify}" \
    --paired "${PAIRED:-6}" --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^e2e" "$OUT/e2e-1024.log" | cut -c1-300 | tail -30
pack; archive_only
