#!/usr/bin/env bash
# Device call (~3 min + cold start; no carry): run 232. Run 230's s6 (the 16-row down and o on 6
# load stages; verify -0.4% back to back, paired spec 1.004x [0.998-1.008] in 8 rounds) paired
# again with more rounds, a second base arm as the control, and at 8k.
# Prediction: spec 1.002-1.006x with an interval above 1 at 1k; AR level; 8k level or +0.3%.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
P="--pipeline 1"
S="--tiles bench/h200/verify229/s6.json"
engine 1024 paired 240 --paired-rounds 24 --taus 6.55 --paired "base|$P;s6|$P $S;base2|$P"
grep "^paired" "$OUT/engine-paired.log" | cut -c1-300
pack
engine 8192 paired8k 240 --paired-rounds 8 --taus 6.55 --paired "base|$P;s6|$P $S"
grep "^paired" "$OUT/engine-paired8k.log" | cut -c1-300
pack; archive_only
