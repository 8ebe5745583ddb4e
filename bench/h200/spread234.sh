#!/usr/bin/env bash
# Device call (~4 min + cold start; no carry), prepared in session 44, not yet run: run 234.
# Where the paired arms' own spread comes from (run 232: base2, base's options in a third
# Generator, AR 0.993x [0.993-0.993], spec 0.995x; in creation order base 247.3 > s6 246.9 >
# base2 245.6 tok/s). Three identical arms, 16 rounds, no control, twice (two processes): if
# the arms rank in creation order both times, later Generators run slower (their fused q|k|v
# and gate|up copies, ~9 GB each, and graphs allocated after the first's), a cost that the
# engine's own single Generator never pays and that paired runs must cancel (e.g. by rotating
# which arm is built first); if the ranking changes between processes, the spread is
# placement luck and only a control arm bounds it.
# Prediction: creation order both times (a > b > c by 0.3-0.7% AR).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
P="--pipeline 1"
for i in 1 2; do
    engine 1024 same$i 200 --paired-rounds 16 --taus 6.55 --paired-control 0 \
        --paired "a|$P;b|$P;c|$P"
    grep "^paired" "$OUT/engine-same$i.log" | cut -c1-300
    pack
done
archive_only
