#!/usr/bin/env bash
# Device call (~5 min, no carry): one-row bf16 multiplies whose weight tiles come by bulk copies
# (TMA, kernels/linear.py). (1) the TMA GPU test; (2) the one-row sweep of TMA tiles against the
# default tiles (kernel_sweep --grid tma); (3) its winners as a tiles file, then engine_speed at
# 1k with and without it (bench/h200/arms.sh), ARMS_ORDER "base,tma" or "tma,base".
set -u
export PYTHONPATH=$PWD/src:$PWD
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_kernels.py \
    -k test_skinny_linear_tma_gives_the_same_bits 2>&1 | tail -1
timeout "${SWEEP_S:-200}" python3 bench/kernel_sweep.py --rows 1 --grid tma \
    --out "$OUT/bf16-tma.json" >"$OUT/bf16-tma.log" 2>&1
echo "tma sweep rc=$?"; grep "^M=" "$OUT/bf16-tma.log" | cut -c1-250
python3 bench/w12_speed.py --rows '' --e2e 0 --tiles-from "$OUT/bf16-tma.json" \
    --tiles-out "$OUT/tma-tiles.json" | tail -1
declare -A arm=([base]="base|--pdl auto" [tma]="tma|--tiles $OUT/tma-tiles.json")
order=${ARMS_ORDER:-base,tma}
ARMS="${arm[${order%%,*}]};${arm[${order##*,}]}" bash bench/h200/arms.sh
