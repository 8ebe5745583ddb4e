#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), prepared in session 43: kernels/w12_mma.py, W12
# one to eight rows on mma.sync with the weights decoded into its registers (sm_90 SASS: 343
# loop instructions a block of 16 rows x 256 columns a warp, ~2.7 a weight, against the
# element-wise tiles' 6.7-6.9). (1) its GPU tests (stop if any fails); (2) bench/w12_mma_speed.py:
# one and four rows at Qwen3-8B's multiplies, cold L2: bf16, w12_linear's default tiles, the mma
# kernel's default tile and a sweep of warps / row tiles; (3) timeline variants, W12 "auto" and
# "all", base / mma (w12_linear.MMA_ROWS=1: o and down, the multiplies without a prologue, on
# it), back to back.
# Prediction: one row, o 10.9 -> ~8 us, down 23.4 -> ~19.5 (about bf16's fraction of the copy
# bandwidth on 0.76 of its bytes); q|k|v and gate|up (norm prologue: not on it here) likewise
# if they were; W12 "all" decode -0.25 ms (~7%), "auto" -0.14 ms.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="mma" TESTS_S=200 gpu_tests_gate tests/test_w12_mma.py || exit 0
mma_table 240 --rows 1,4
variants "w12:auto;w12:all" "base|;mma|--switch kernels.w12_linear.MMA_ROWS=1" 260
pack; archive_only
