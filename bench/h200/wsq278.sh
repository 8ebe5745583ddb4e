#!/usr/bin/env bash
# Device call (~2.5 min with a cold start; no carry), session 49: run 278, the first look at
# kernels/w12_ws.py on a GPU within the session's last device minutes: its GPU tests, then
# bench/w12_join.py --ws at Qwen3-8B's 16-row gate|up and down only (ws278.sh, prepared, is the
# full run). Prediction: the tests find a first bug (untested TMA, shared views and phases).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="w12_ws" TESTS_S=100 gpu_tests_gate tests/test_w12_ws.py || exit 0
timeout 60 python3 bench/w12_join.py --model qwen3-8b --rows 16 --shapes gate_up,down \
    --variants j2esc4 --ws --out "$OUT/ws-qwen3-8b.json" >"$OUT/ws-qwen3-8b.log" 2>&1
echo "rc=$?"; grep -vE "^\{" "$OUT/ws-qwen3-8b.log" | tail -4 | cut -c1-220
pack; archive_only
