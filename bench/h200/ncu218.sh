#!/usr/bin/env bash
# Device call (~2 min + cold start; no carry), prepared in session 42, not yet run: why the
# one-row attention with its merge inside the split launch (attention.FUSED_MERGE_MAX_ROWS)
# costs ~6.4 us a layer more than split + merge launches (run 217: the attention 356.6 us a
# forward against 124.4 + 48.4). (1) Nsight Compute counters of the one-token attention at 1k
# (Qwen3-8B heads) with the merge kernel and with the in-kernel merge; (2) the fused split
# kernel's SASS source view: where its warps stall (the counter's fence and atomic, the last
# program's merge loop, or the slices' partial stores).
# Prediction: the fused launch's time is the last program's merge, which waits on the other
# programs' partials through a fence (membar) in every program; if so, a merge that reads the
# partials without a full fence in every program is the next thing to try.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
for rows in 0 4; do
    timeout 120 ncu --profile-from-start off --clock-control none --csv --page raw \
        --metrics "$(python3 bench/ncu_kernels.py metrics)" \
        python3 bench/ncu_kernels.py attention --context 1024 --tokens 1 --merge-rows "$rows" \
        >"$OUT/attn-merge$rows.csv" 2>"$OUT/attn-merge$rows.log"
    echo "ncu merge-rows $rows rc=$?"; tail -1 "$OUT/attn-merge$rows.log"
    python3 bench/ncu_kernels.py table "$OUT/attn-merge$rows.csv" | head -4 | cut -c1-200
    pack
done
ncu_source fused _split_kernel python3 bench/ncu_kernels.py attention --context 1024 \
    --tokens 1 --merge-rows 4
pack; archive_only
