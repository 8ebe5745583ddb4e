#!/usr/bin/env bash
# Device call (~5.5 min + cold start; no carry): run 304, after graph302.sh found a verify route
# (W12_E2E_ARM: tc_verify or ws_verify, bench/w12_speed.W12_ARMS) faster inside the verify
# graph: end to end at 1k, paired over bf16 (4 rounds, the control, forcing on every arm), W12
# every matrix with and without that route and the same again (the W12 arms' spread).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
timeout 330 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-base qkv,o,gate_up,down --w12-arms "${W12_E2E_ARM:-tc_verify},same" --paired 4 \
    --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^e2e" "$OUT/e2e-1024.log" | cut -c1-300
pack; archive_only
