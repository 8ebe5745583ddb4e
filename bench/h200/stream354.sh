#!/usr/bin/env bash
# Device call (~3 min; no carry): run 354, issue 7 (the spec target). Run 353 (H100): the
# down alone at 16 tokens streamed on one tile a round (x2t1 31.07 us, s4x3t1 30.73) beats
# w12_tc with its split sum (33.06) where rounds of 2 tiles lose (x2t2 34.47); STREAM_TILE is
# now s4x3t1. This call: the W12 verify graph back to back, Qwen3-8B, base, stream
# (w12_tokens.STREAM), base2, stream2, and the verify's exit spacing.
# Prediction: the down ~28 us exit to exit against w12_tc's ~27 + its split sum's ~3.4: the
# verify -0.05 to -0.09 ms.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
verify_table qwen3-8b verify-354 "$(paired stream w12_tokens.STREAM=1)" "${VAR_S:-150}"
pack
archive_only
