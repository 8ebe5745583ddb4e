#!/usr/bin/env bash
# Device call (~3 min, no carry), session 48: run 260. What limits the 16-row W12 multiplies
# (run 259: JOIN's 2 warpgroup waits a block instead of 8 left gate|up level, 44.85 against
# 45.28 us, 3.39 TB/s of 12-bit bytes against bf16's ~4.1): Nsight Compute counters (time,
# DRAM bytes, occupancy, issue activity, stall reasons) of the W12 and bf16 multiplies at 16
# rows, default tiles, Qwen3-8B's shapes; then the 16-row W12 gate|up's SASS source view
# (stall samples per instruction; run 90's, of an older tile, put half on the cp.async wait).
# Prediction: W12 gate|up issue slots ~40% busy, its stalls split between the cp.async wait
# (DEPBAR), the barrier a step and the LDSM -> decode chain; bf16's on its loads.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
timeout 150 ncu --profile-from-start off --clock-control none --csv --page raw \
    --metrics "$(python3 bench/ncu_kernels.py metrics)" \
    python3 bench/ncu_kernels.py run --rows 16 >"$OUT/ncu-rows16.csv" 2>"$OUT/ncu-rows16.log"
echo "ncu rc=$?"; tail -2 "$OUT/ncu-rows16.log"
python3 bench/ncu_kernels.py table "$OUT/ncu-rows16.csv" >"$OUT/table.log" 2>&1
head -14 "$OUT/table.log" | cut -c1-220
pack
ncu_source w12gateup16 _w12_kernel python3 bench/ncu_kernels.py run --shapes gate_up --rows 16
pack; archive_only
