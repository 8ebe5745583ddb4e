#!/usr/bin/env bash
# Device call (~6 min; no carry): the kernel timeline (bench/timeline.py) of the decode, verify
# and draft forwards inside their CUDA graphs, for ARMS (default "bf16;w12:auto") at MODEL
# (qwen3-8b) and CONTEXT (1024), REPLAYS (30) replays each, within TL_S (420) seconds; first
# the GPU tests that TESTS_K selects in tests/test_trace.py (default: all of them).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TESTS_K="${TESTS_K-trace or timeline or marks}" TESTS_S_DEFAULT=150 gpu_tests tests/test_trace.py
timeout "${TL_S:-420}" python3 bench/timeline.py --model "${MODEL:-qwen3-8b}" \
    --context "${CONTEXT:-1024}" --arms "${ARMS:-bf16;w12:auto}" --replays "${REPLAYS:-30}" \
    --out "$OUT/timeline.json" >"$OUT/timeline.log" 2>&1
echo "timeline rc=$?"; grep -vE "^\{" "$OUT/timeline.log" | tail -60 | cut -c1-220; pack
archive_only
