#!/usr/bin/env bash
# Device call (~7 min + cold start; no carry): run 303, issue 3's rows with today's defaults
# (since session 56 the one-row multiplies on kernels/w12_row.py on Hopper, BF16_ONE_ROW: run
# 299's Qwen3-8B 1k pipelined AR 249.9 / spec 1,310 and Llama 257.5 / 1,321 at 1k only):
# Qwen3-8B and Llama-3.1-8B at CONTEXTS (default 1k, 8k, 32k), AR, pipelined AR and
# spec@6.55, token forcing on every arm.
# ROW_ARGS: engine_speed options added to every arm (e.g. row300.sh's fastest bf16 tile,
# "--switch kernels.w12_row.BF16_ONE_ROW_TILE=1").
# Prediction: pipelined AR ~+1.5% over the README's cells at every context (the one-row
# forward's multiplies do not depend on the context); spec level; forcing passes.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
for ctx in ${CONTEXTS:-1024 8192 32768}; do
    engine "$ctx" "qwen$ctx" 150 --taus 6.55 ${ROW_ARGS:-}
    llama "$ctx" "llama$ctx" 150 --taus 6.55 ${ROW_ARGS:-}
    pack
done
archive_only
