#!/usr/bin/env bash
# Device call (~1.5 min with a cold start; no carry): run 315 as it ran (session 60, the last
# ~300 s of device time): the verify graph, W12 every matrix, back to back: base; ssn
# (models/fused.SPLIT_SUM_NORM: the o and down split sums write the norm after them); base2.
# bench/h200/e2e315.sh is the full call (GPU tests of the bits first, the w12_tc arms, end to end).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" \
    "base|;ssn|--switch models.fused.SPLIT_SUM_NORM=1;base2|" 170
back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
pack; archive_only
