#!/usr/bin/env bash
# Device call (~2 min, no carry), session 42: what limits the one-row W12 multiplies today
# (LOOP_STAGES tiles; run 82's counters predate them): Nsight Compute counters (time, DRAM
# bytes, registers, occupancy, issue activity, stall reasons) of the W12 and bf16 multiplies
# at one row, default tiles, Qwen3-8B's shapes; then the one-row W12 down's SASS source view
# (stall samples per instruction). Everything comes back in one all.tgz.
# Prediction: the W12 down issue-bound (issue slots > 60% busy) where the bf16 down waits on
# memory; gate_up between.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
timeout 150 ncu --profile-from-start off --clock-control none --csv --page raw \
    --metrics "$(python3 bench/ncu_kernels.py metrics)" \
    python3 bench/ncu_kernels.py run --rows 1 >"$OUT/ncu-rows1.csv" 2>"$OUT/ncu-rows1.log"
echo "ncu rc=$?"; tail -2 "$OUT/ncu-rows1.log"
python3 bench/ncu_kernels.py table "$OUT/ncu-rows1.csv" >"$OUT/table.log" 2>&1
head -14 "$OUT/table.log" | cut -c1-200
pack
ncu_source w12down _w12_kernel python3 bench/ncu_kernels.py run --shapes down --rows 1
pack; archive_only
