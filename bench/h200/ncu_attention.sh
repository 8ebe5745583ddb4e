#!/usr/bin/env bash
# Device call (~2 min, a guess; no carry): what the split-K attention waits on. Run 113: query-row
# blocks and 32 keys a step (ptxas: no spills) lost, so spills are not it. (1) Nsight Compute
# counters (time, DRAM bytes, registers, occupancy, issue activity, stall reasons) of the split
# and merge launches, one decode token and a 16-token verify block, caches of 1k and 8k tokens
# (Qwen3-8B heads); (2) the 16-token split kernel's SASS source view at 1k: stall samples per
# instruction. Everything comes back in one all.tgz.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
for ctx in 1024 8192; do
    timeout 120 ncu --profile-from-start off --clock-control none --csv --page raw \
        --metrics "$(python3 bench/ncu_kernels.py metrics)" \
        python3 bench/ncu_kernels.py attention --context "$ctx" --tokens 1,16 \
        --capacity $((2 * ctx)) >"$OUT/attn-$ctx.csv" 2>"$OUT/attn-$ctx.log"
    echo "ncu $ctx rc=$?"; tail -2 "$OUT/attn-$ctx.log"
    python3 bench/ncu_kernels.py table "$OUT/attn-$ctx.csv" | head -8 | cut -c1-170
    pack
done
timeout 150 ncu --profile-from-start off --clock-control none -k "regex:^_split_kernel$" \
    --launch-skip 1 --launch-count 1 --section SourceCounters --section WarpStateStats \
    -f -o "$OUT/split16" python3 bench/ncu_kernels.py attention --context 1024 --tokens 1,16 \
    >"$OUT/split16-ncu.log" 2>&1
echo "source ncu rc=$?"; tail -2 "$OUT/split16-ncu.log"
ncu -i "$OUT/split16.ncu-rep" --page source --csv --print-source sass >"$OUT/split16-sass.csv" 2>&1
python3 bench/ncu_kernels.py source "$OUT/split16-sass.csv" | head -32 | cut -c1-160
ncu -i "$OUT/split16.ncu-rep" --page details --csv >"$OUT/split16-details.csv" 2>&1
rm -f "$OUT/split16.ncu-rep"; pack; archive_only
