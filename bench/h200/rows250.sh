#!/usr/bin/env bash
# Device call (~8 min + cold start; no carry), session 46: run 250.
# The defaults after runs 248-249: "auto" certifies verify blocks of Qwen3-8B and Llama-3.1-8B
# (16-row F16 tiles on 2 warps, TWO_PASS from 2 rows, ROW_STATS 1, the second launch on 512
# head rows a program). GPU tests of test_certified (handed heads, generation); then issue 3's
# rows end to end with token forcing: Qwen3-8B and Llama-3.1-8B at 1k, then at 8k.
# Prediction: Qwen3 1k spec@6.55 pipelined ~1,325 (run 249: 1,321 with the second launch on 256
# rows), Llama 1k ~1,300 (run 244: 1,281), forcing passes on every arm.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="handed or generation or taller" TESTS_S=120 gpu_tests_gate tests/test_certified.py \
    || exit 0
engine 1024 qwen 140 --taus 6.55
pack
llama 1024 llama 140 --taus 6.55
pack
engine 8192 qwen8192 110 --taus 6.55
pack
llama 8192 llama8192 110 --taus 6.55
pack; archive_only
