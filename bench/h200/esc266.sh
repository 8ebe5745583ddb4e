#!/usr/bin/env bash
# Device call (~4 min + cold start; no carry), session 48: run 266. Run 265: ESC_ROWS (each
# row's first escapes fetched over the loop's first two steps) took 16-row gate|up 45.64 ->
# 44.24 us (esc4; the emptied table 42.28) but left the down at 30.3 (26.57 emptied): its K
# split gave all of a row's escapes (~2 of 12,288 columns, up to ~7 a tile) to the first split's
# programs, whose after-loop rounds then set the launch's end. Now each split takes every
# SPLIT_K-th of a row's escapes (the products after the loop, where in the loop's third step
# the tile took 214 registers). Same measurements as run 265.
# Prediction: down esc2 ~28 us, gate|up as in run 265; one row: qkv and down -3%, o +10%.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
TESTS_K="escape_rows or join or tiles" TESTS_S=150 gpu_tests_gate tests/test_w12_kernels.py || exit 0
timeout 200 python3 bench/w12_join.py --rows 16 --variants plain,noesc,esc1,esc2,esc4,j2esc2 \
    --out "$OUT/esc2-16.json" >"$OUT/esc2-16.log" 2>&1
echo "16 rows rc=$?"; grep -vE "^\{" "$OUT/esc2-16.log" | tail -5 | cut -c1-220
pack
timeout 120 python3 bench/w12_join.py --rows 1 --shapes qkv,o,gate_up,down,lm_head \
    --variants plain,noesc,esc1,esc2,esc4 --out "$OUT/esc2-1.json" >"$OUT/esc2-1.log" 2>&1
echo "1 row rc=$?"; grep -vE "^\{" "$OUT/esc2-1.log" | tail -6 | cut -c1-220
pack; archive_only
