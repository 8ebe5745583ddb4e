#!/usr/bin/env bash
# Device call (~5 min; no carry): run 230, after run 229 (16-row down on 6 load stages 26.44 us a
# layer against 27.89, on 512-column steps 4 deep 26.13; o on 6 stages 10.96 against 11.25).
# Timeline variants with both (s6: down and o on 6 stages; k5o6: down 512 x 4, o 6 stages),
# then paired pipelined rounds base / s6 (spec@6.55 and AR, 8 rounds).
# Prediction: verify -0.4 to -0.6% back to back; paired spec 1.003-1.006x (AR level).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
t=bench/h200/verify229
variants "bf16" "base|;s6|--tiles $t/s6.json;k5o6|--tiles $t/k5o6.json;base2|" 200
pack
P="--pipeline 1"
engine 1024 paired 280 --paired-rounds 8 --taus 6.55 --paired "base|$P;s6|$P --tiles $t/s6.json"
grep "^paired" "$OUT/engine-paired.log" | cut -c1-300
pack; archive_only
