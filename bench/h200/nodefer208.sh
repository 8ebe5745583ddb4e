#!/usr/bin/env bash
# Device call (~4 min, warm; no carry), session 41, after run 207: the one-row certified head
# without deferred checks (DEFER_TILES=0) was 203.6 us against 213.7 / 212.7 (base twice) in the
# graph, decode 4.002 ms against 4.019 / 4.020 back to back. Paired AR and spec@6.55 (8 rounds,
# Qwen3-8B 1k) against today's defaults, then the 1k row with it (token forcing).
# Prediction: AR 1.002-1.006x (the head -10 us of ~4.1 ms), spec level (verify keeps the exact
# head under "auto"); forcing passes.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
S="--switch kernels.certified.DEFER_TILES=0"
engine 1024 paired 200 --paired-rounds 8 --taus 6.55 --paired "base|;nodefer|$S"
grep "^paired" "$OUT/engine-paired.log" | cut -c1-300
pack
engine 1024 nodefer 150 $S
pack; archive_only
