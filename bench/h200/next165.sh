#!/usr/bin/env bash
# Device call (~4 min + cold start; no carry), session 33: each layer's output projection
# weights asked for in L2 from a side stream as its q|k|v multiply ends (launch.SIDE_AHEAD_BYTES:
# no kernel of the layer waits for the requests, unlike run 164's in the split programs): GPU
# tests, then timeline variants at 1k, bf16 and W12 "auto", 8 MB, 16 MB and all of o.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TESTS_K="pdl_engine_gives_the_same_tokens or l2_ahead" TESTS_S=200 gpu_tests tests/test_kernels.py
S=kernels.launch.SIDE_AHEAD_BYTES
V="base|;s8|--switch $S=8388608;s16|--switch $S=16777216;sall|--switch $S=67108864;base2|"
TESTS_K='' ARMS="bf16;w12:auto" REPLAYS=15 TL_S=300 VARIANTS="$V" CONTEXT=1024 \
    bash "$(dirname "$0")/timeline.sh" | grep -E "^(bf16|w12\S*) .* (decode|verify|draft) +[0-9]"
unpack; pack; archive_only
