#!/usr/bin/env bash
# Device call (~4 min + cold start; no carry), session 48: run 265. Run 264: the 16-row W12
# tiles with their escape table emptied (a bound) run 7% (gate|up 44.50 -> 41.25 us) to 15%
# (down 31.09 -> 26.36) faster. Every program of these one-wave grids waits at once for the
# escapes' dependent loads: offsets, entries and the input at their columns in the first loop
# step, then two more a row's later escape after the loop. ESC_ROWS n: each row's first n
# entries fetched over the loop's first two steps (offsets, then entries, each used a step or
# more later), the input at their columns after the loop (L2), the rare rest after that
# (sm_90: 16-row gate|up 164 -> 136 registers, loop 771 -> 591 instructions with n = 2). GPU
# tests, then bench/w12_join.py at 16 rows and at one row (default tiles), Qwen3-8B shapes.
# Prediction: esc2 16-row gate|up ~42 us, down ~27.5; one row within 2% either way.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
TESTS_K="escape_rows or join or tiles" TESTS_S=150 gpu_tests_gate tests/test_w12_kernels.py || exit 0
timeout 200 python3 bench/w12_join.py --rows 16 --variants plain,noesc,esc1,esc2,esc4,j2esc2 \
    --out "$OUT/esc-16.json" >"$OUT/esc-16.log" 2>&1
echo "16 rows rc=$?"; grep -vE "^\{" "$OUT/esc-16.log" | tail -5 | cut -c1-220
pack
timeout 120 python3 bench/w12_join.py --rows 1 --shapes qkv,o,gate_up,down,lm_head \
    --variants plain,noesc,esc1,esc2,esc4 --out "$OUT/esc-1.json" >"$OUT/esc-1.log" 2>&1
echo "1 row rc=$?"; grep -vE "^\{" "$OUT/esc-1.log" | tail -6 | cut -c1-220
pack; archive_only
