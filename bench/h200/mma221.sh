#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), prepared in session 43 after run 220: the mma
# kernel with its next blocks asked for in L2 (LOOKAHEAD; in run 220's build ptxas had sunk the
# next block's loads to the loop's end, so every block waited its full latency: one row level
# with the element-wise tiles, and in the graph the down 35.9 us against 22.4, the LM head 239.6
# against 207.1). (1) GPU tests (stop if any fails); (2) bench/w12_mma_speed.py at one row:
# default tiles and warps x LOOKAHEAD 0/1/4; (3) timeline variants, W12 "all": base / mma, and
# both with PDL off (whether the graph's slow down is PDL's early launch).
# Prediction: one row, o ~8.5 us, down ~20, q|k|v ~11.5, gate|up ~37 (w12_linear: 11.3, 23.5,
# 14.7, 39.4); in the graph mma's decode below base's if the PDL interplay is not the cause.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="mma" TESTS_S=200 gpu_tests_gate tests/test_w12_mma.py || exit 0
mma_table 240 --rows 1
S="--switch kernels.w12_linear.MMA_ROWS=1"
variants "w12:all" "base|;mma|$S;base_off|--pdl off;mma_off|--pdl off $S" 240
decode_each "w12:all"
pack; archive_only
