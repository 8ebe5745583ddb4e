#!/usr/bin/env bash
# Device call (~3 min + cold start; no carry): run 290 (prepared in session 51, not yet run),
# after row287.sh, only if kernels/w12_row.py is right but short of its copies bound there.
# Nsight Compute on the one-row multiplies at Qwen3-8B's o and down (w12_linear, skinny_linear,
# w12_row's W12 and bf16 kernels): time, DRAM bandwidth, issue activity and the largest stall
# reasons; then the SASS source view of _w12_row_kernel at o (where its warps' stall samples
# fall: the multiplying warps' loop, the stage waits, the meta warp's loads, the loader).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
ncu_table ncu-row --rows 1 --shapes o,down --row
pack
ncu_source w12row _w12_row_kernel python3 bench/ncu_kernels.py run --shapes o --rows 1 --row
pack; archive_only
