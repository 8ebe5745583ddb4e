#!/usr/bin/env bash
# Device call (~4 min + cold start; no carry), prepared in session 43 after run 223: the mma
# kernel as committed (run 223's register loads, the cp.async path deleted): (1) its GPU tests;
# (2) bench/w12_mma_speed.py, default tiles, one and four rows; (3) timeline variants, W12
# "all": base / mma (w12_linear.MMA_ROWS=1) / mma with launch.EVEN_SHARED=0 (no shared-memory
# padding of one-row multiplies launched early): whether run 220's in-graph loss (down 35.9 us
# against 24.2 standalone) is the padding's or PDL's.
# Prediction: tests pass; the table as run 223's REGS rows (+-3%); mma in the graph still slower
# than base, EVEN_SHARED=0 recovering part of it.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="mma" TESTS_S=200 gpu_tests_gate tests/test_w12_mma.py || exit 0
mma_table 120 --rows 1,4 --no-sweep
S="--switch kernels.w12_linear.MMA_ROWS=1"
variants "w12:all" "base|;mma|$S;mma_even0|$S --switch kernels.launch.EVEN_SHARED=0" 200
decode_each "w12:all"
pack; archive_only
