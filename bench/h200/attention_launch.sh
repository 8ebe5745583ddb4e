#!/usr/bin/env bash
# Device call (~7 min, a guess; no carry): two launch-level changes of the split attention
# from run 117's Nsight Compute counters. SPLIT_STAGES: the 16-token split kernel holds 115 KB
# of shared memory for a 3-stage key pipeline (Triton's default) while at 1k each slice is one
# loop step. EARLY_POSITIONS: the split and merge programs read the positions before their PDL
# wait, one dependent L2 round trip fewer after it (the merge: 4.6-7.2 us isolated for 0.3-9
# MB, a chain of dependent loads). (1) their GPU tests; (2) Qwen3-8B shape, paired arms over
# today's defaults at 1k and 8k, 6 rounds (bench/h200/paired.sh; its variables apply).
PAIRED="new|;st1|--attention-stages 1;st2|--attention-stages 2;w1|--attention-stages wide=1"
PAIRED+=";ep|--attention-early-positions 1;ep1|--attention-early-positions 1 --attention-stages 1"
PAIRED="$PAIRED" TESTS_K="${TESTS_K:-split_stages or early_positions}" \
    CONTEXTS="${CONTEXTS:-1024 8192}" ROUNDS="${ROUNDS:-6}" PAIRED_S="${PAIRED_S:-240}" \
    exec bash "$(dirname "$0")/paired.sh"
