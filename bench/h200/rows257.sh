#!/usr/bin/env bash
# Device call (~5 min + cold start; no carry): run 257. Issue 3's 32k rows with today's
# defaults (verify blocks' heads certified since run 249; run 247's 32k cells had the exact
# verify head): Qwen3-8B and Llama-3.1-8B, AR, pipelined AR and spec@6.55, token forcing on
# every arm.
# Prediction: AR level with run 247 (Qwen3 189.9 / Llama 196.9; the decode head unchanged),
# spec@6.55 pipelined +1-2% (874 / 889 there); forcing passes.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
engine 32768 qwen32768 150 --taus 6.55
pack
llama 32768 llama32768 150 --taus 6.55
pack; archive_only
