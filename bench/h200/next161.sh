#!/usr/bin/env bash
# Device call (the session's last ~170 s after a cold start; no carry): the norm hand-off
# through W12 multiplies (fused.NORM_HANDOFF_W12). Its GPU tests, then timeline variants at 1k,
# W12 "auto": off against on. Packed after each step: a cut call keeps what finished.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TESTS_K="norm_handoff" TESTS_S=60 gpu_tests tests/test_w12_kernels.py tests/test_kernels.py
V="off|;w12h|--switch models.fused.NORM_HANDOFF_W12=1"
TESTS_K='' ARMS="w12:auto" REPLAYS=10 TL_S=110 VARIANTS="$V" CONTEXT=1024 \
    bash "$(dirname "$0")/timeline.sh" | grep -E "^(bf16|w12\S*) .* (decode|verify|draft) +[0-9]"
unpack; pack; archive_only
