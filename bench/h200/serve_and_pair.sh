#!/usr/bin/env bash
# Device call: the embedded pair on held-out prompts (needs ~/sp from train_embedded.sh), then
# bench/server_speed.py (Qwen3-8B shape, concurrency 1/8/32, spec vs AR).
set -u
export PYTHONPATH=/tmp/site:$PWD/src:$PWD SPECPILOT_CACHE=~/sp/cache SPECPILOT_DATA=~/sp/data
if [ -f ~/sp/smol.gguf ] && [ -d ~/sp/drafter ]; then
    timeout "${PAIR_S:-200}" python3 bench/embedded_acceptance.py --target ~/sp/smol.gguf \
        --draft ~/sp/drafter --num-prompts 0 --device cuda --dtype bfloat16 --cuda-graphs \
        --out "$OUT/embedded-acceptance.json" >"$OUT/embedded-acceptance.log" 2>&1
    echo "embedded_acceptance rc=$?"; grep -v '^{' "$OUT/embedded-acceptance.log" | tail -4
else
    echo "no ~/sp/smol.gguf or ~/sp/drafter: embedded pair skipped"
fi
timeout "${SERVE_S:-330}" python3 bench/server_speed.py --out "$OUT/server-speed.json" \
    >"$OUT/server-speed.log" 2>&1
echo "server_speed rc=$?"; grep -v '^{' "$OUT/server-speed.log" | tail -12
