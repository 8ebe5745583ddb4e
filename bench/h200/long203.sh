#!/usr/bin/env bash
# Device call (~8 min + cold start; no carry), session 41. Issue 3's 32k rows with today's
# defaults, which since session 40 certify the LM head of one-row forwards ("auto" ->
# certified-decode at both 8B shapes), with token forcing (in chunks) at 32k: the certified head
# had been forced at 1k and 8k only (runs 200, 202). Qwen3-8B then Llama-3.1-8B, each at 32k.
# Prediction: forcing passes on both; Qwen3 32k AR ~184-186 (run 192: 183.1), pipelined spec
# ~875-885; Llama 32k AR ~192-194 (run 194: 192.1), pipelined ~890-900.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
engine 32768 row32k 280
pack
llama 32768 llama32k 280
pack; archive_only
