#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), prepared in session 43 after runs 220-221: the
# mma kernel's loads now plain tl.loads that Triton pipelines through shared memory (cp.async,
# STAGES 3; sm_90 SASS: 20 LDGSTS.128 and 23 LDS a block, 88 registers, 80 KB a program), where
# run 220's register loads had been sunk by ptxas to the loop's end (one row level with
# w12_linear) and run 221's L2 requests changed nothing. (1) GPU tests (stop if any fails);
# (2) bench/w12_mma_speed.py at one row: default tiles and warps x STAGES 2/4; (3) timeline
# variants, W12 "all": base / mma (w12_linear.MMA_ROWS=1), back to back.
# Prediction: one row within 10% of the W12 bytes' copy time where the grid fills the SMs: o ~8
# us, down ~19, q|k|v ~11, gate|up ~37 (w12_linear 11.3, 24.2, 14.5, 40.5); decode -0.2 ms.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="mma" TESTS_S=200 gpu_tests_gate tests/test_w12_mma.py || exit 0
mma_table 240 --rows 1
S="--switch kernels.w12_linear.MMA_ROWS=1"
variants "w12:all" "base|;mma|$S" 200
decode_each "w12:all"
pack; archive_only
