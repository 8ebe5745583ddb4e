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
timeout 150 ncu --profile-from-start off --clock-control none --csv --page raw \
    --metrics "$(python3 bench/ncu_kernels.py metrics)" \
    python3 bench/ncu_kernels.py run --rows 1 --shapes o,down --row \
    >"$OUT/ncu-row.csv" 2>"$OUT/ncu-row.log"
echo "ncu rc=$?"; tail -2 "$OUT/ncu-row.log"
python3 bench/ncu_kernels.py table "$OUT/ncu-row.csv" >"$OUT/ncu-table.log" 2>&1
head -12 "$OUT/ncu-table.log" | cut -c1-220
pack
ncu_source w12row _w12_row_kernel python3 bench/ncu_kernels.py run --shapes o --rows 1 --row
pack; archive_only
