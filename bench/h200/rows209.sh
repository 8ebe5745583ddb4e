#!/usr/bin/env bash
# Device call (~4 min + cold start; no carry), session 41, after run 208 (one-row certified
# launches defer no check: certified.DEFER_MIN_ROWS = 2, now the default). Issue 3's 1k rows
# with the defaults on one more machine: Llama-3.1-8B (run 202's pipelined AR 250.2 was one
# run) and Qwen3-8B, token forcing on. Prediction: Llama pipelined AR 246-252, spec 1,290-1,310;
# Qwen3 pipelined AR 242-248, spec 1,275-1,300.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
llama 1024 llama 200
pack
engine 1024 qwen1k 200
pack; archive_only
