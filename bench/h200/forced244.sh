#!/usr/bin/env bash
# Device call (~3 min + cold start; no carry), session 45: run 244.
# The F16 one-row certified heads as compiled in (Qwen3-8B and Llama-3.1-8B: 64 x 256 on 2
# warps, 3 stages; runs 242-243) end to end at 1k: AR, pipelined AR, spec@6.55 with token
# forcing on both arms (AR and spec), one process a model.
# Prediction: forcing passes; pipelined AR ~250 (Qwen3), ~253 (Llama).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
engine 1024 qwen 150 --taus 6.55
pack
llama 1024 llama 150 --taus 6.55
pack; archive_only
