#!/usr/bin/env bash
# Device call (~2 min + cold start; no carry), prepared in session 44, not yet run: run 235.
# Nsight Compute on the one-row certified LM head, the largest loss left in issue 3's one-token
# forward against a measured floor (cost_model --timeline --floors on runs 227/229: 203 us
# against 136 for a pure read of its 622 MB of int8 weights; the FP8 head of the same bytes
# took 150.6 us in run 180). Counters of the certified head (real radii, and radii x -1e30:
# no exact pass) and the FP8 head, then the certified launch's SASS source view (where its
# warps stall: the int8 loop, the epilogue's atomics and per-thread fences, the exact pass).
# Prediction: DRAM ~3 TB/s in the loop; stalls on the epilogue's fence (membar) and atomics a
# visible share (>10%) of the samples, the exact pass ~10% of the time.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
for radius in 1 -1e30; do
    timeout 150 ncu --profile-from-start off --clock-control none --csv --page raw \
        --metrics "$(python3 bench/ncu_kernels.py metrics)" \
        python3 bench/ncu_kernels.py certified --rows 1 --radius="$radius" \
        >"$OUT/cert$radius.csv" 2>"$OUT/cert$radius.log"
    echo "ncu certified radius x$radius rc=$?"; tail -1 "$OUT/cert$radius.log"
    python3 bench/ncu_kernels.py table "$OUT/cert$radius.csv" | head -4 | cut -c1-200
    pack
done
ncu_source certified _skinny_kernel python3 bench/ncu_kernels.py certified --rows 1
pack; archive_only
