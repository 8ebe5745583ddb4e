#!/usr/bin/env bash
# Device call (~4 min + cold start; no carry): run 295, after run 294 (H100: w12_row short of
# w12_linear at q|k|v, its copies-only bound no faster than the full kernel). First the GPU tests
# of kernels/w12_row.py (never run on a GPU before: right or not), then ncu290.sh's Nsight
# Compute table and SASS source view at o and down: why the TMA ring itself is slow.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="w12_row or bf16_row" TESTS_S=150 gpu_tests tests/test_kernels.py tests/test_w12_row.py
ncu_table ncu-row --rows 1 --shapes o,down --row
pack
ncu_source w12row _w12_row_kernel python3 bench/ncu_kernels.py run --shapes o --rows 1 --row
pack; archive_only
