#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), prepared in session 45, not yet run: run 247.
# Issue 3's 8k and 32k rows with today's defaults (the one-row certified heads on F16 tiles
# since runs 241-244; the README's 8k/32k cells are from runs 182-203): Qwen3-8B and
# Llama-3.1-8B, AR, pipelined AR and spec@6.55, token forcing on every arm.
# Prediction: pipelined AR +0.5-1% over the README's cells (the head -20..-37 us a token);
# forcing passes.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
for ctx in 8192 32768; do
    engine "$ctx" "qwen$ctx" 200 --taus 6.55
    pack
    llama "$ctx" "llama$ctx" 200 --taus 6.55
    pack
done
archive_only
