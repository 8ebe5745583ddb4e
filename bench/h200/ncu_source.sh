#!/usr/bin/env bash
# Device call (~1-2 min, no carry): where the 16-row W12 multiply's warps stall, instruction by
# instruction (Nsight Compute's source view, SASS), against the bf16 tile at the same shape.
# One kernel per ncu process (gate_up, 16 rows, default tiles); the raw CSVs stay in $OUT.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
for kernel in _w12_kernel _skinny_kernel; do
    timeout 150 ncu --profile-from-start off --clock-control none -k "regex:^${kernel}$" \
        --launch-count 1 --section SourceCounters --section WarpStateStats \
        --section LaunchStats --section Occupancy -f -o "$OUT/$kernel" \
        python3 bench/ncu_kernels.py run --shapes "${SHAPES:-gate_up}" --rows 16 \
        >"$OUT/$kernel-ncu.log" 2>&1
    echo "$kernel ncu rc=$?"; tail -3 "$OUT/$kernel-ncu.log"
    ncu -i "$OUT/$kernel.ncu-rep" --page source --csv --print-source sass >"$OUT/$kernel-sass.csv" 2>&1
    echo "source view rc=$? lines=$(wc -l <"$OUT/$kernel-sass.csv")"; head -c 600 "$OUT/$kernel-sass.csv"; echo
    ncu -i "$OUT/$kernel.ncu-rep" --page details --csv >"$OUT/$kernel-details.csv" 2>&1
    python3 bench/ncu_kernels.py source "$OUT/$kernel-sass.csv" | head -40 | cut -c1-160
done
