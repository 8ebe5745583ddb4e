#!/usr/bin/env bash
# Device call (~5 min + cold start; no carry): run 324, the GPU tests after run 323 made
# w12_tc.MAX_UNIT_BLOCKS 32 and launch.O_EARLY 2 the defaults: every w12_tc GPU test (run 323:
# the 6-stage tile's 3 cases out of shared memory at 32 blocks a unit, now given 16), and the
# engine's PDL token test (bf16 and W12: every PDL mode, O_EARLY and WIDE_EARLY among them, the
# same tokens and token forcing passing).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="(test_w12_tc and cuda) or test_pdl_engine_gives_the_same_tokens" TESTS_S=330 \
    gpu_tests tests/test_w12_tc.py tests/test_kernels.py
grep -E "FAILED|^E " "$OUT/gpu-tests.log" | head -8 | cut -c1-200
archive_only
