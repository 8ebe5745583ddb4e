#!/usr/bin/env bash
# Device call (~5 min + cold start; no carry), session 33: the output projection's weights asked
# for in L2 by the attention's split programs at their end (attention.LATE_AHEAD, after their
# own loads) instead of first (l2_ahead "o", run 91: lost), whole or their first rows
# (launch.O_AHEAD_BYTES): GPU tests, then timeline variants at 1k, bf16 and W12 "auto".
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TESTS_K="pdl_engine_gives_the_same_tokens or l2_ahead" TESTS_S=200 gpu_tests tests/test_kernels.py
L="--l2-ahead o --switch kernels.attention.LATE_AHEAD=1"
B=kernels.launch.O_AHEAD_BYTES
V="base|;o|--l2-ahead o;ol|$L;ol8|$L --switch $B=8388608;ol16|$L --switch $B=16777216;base2|"
TESTS_K='' ARMS="bf16;w12:auto" REPLAYS=15 TL_S=300 VARIANTS="$V" CONTEXT=1024 \
    bash "$(dirname "$0")/timeline.sh" | grep -E "^(bf16|w12\S*) .* (decode|verify|draft) +[0-9]"
unpack; pack; archive_only
