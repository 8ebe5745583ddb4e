#!/usr/bin/env bash
# Device call (~4 min + cold start; no carry), session 46: run 251.
# The new default (certified verify heads, runs 248-250) against the old one
# (--target-head certified-decode), paired, pipelined, 6 rounds, Qwen3-8B then Llama-3.1-8B at
# 1k (speed only: run 250 checked token forcing with these defaults).
# Prediction: spec@6.55 1.015-1.02x for both (verify -80 to -110 us of ~5.05 ms a step), AR
# level (one-row forwards unchanged).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
P="--pipeline 1"
A="base|$P;cdec|$P --target-head certified-decode"
engine 1024 qpair 150 --taus 6.55 --paired-rounds 6 --paired "$A"
grep "^paired" "$OUT/engine-qpair.log" | sort -u | cut -c1-300
pack
llama 1024 lpair 150 --taus 6.55 --paired-rounds 6 --paired "$A"
grep "^paired" "$OUT/engine-lpair.log" | sort -u | cut -c1-300
pack; archive_only
