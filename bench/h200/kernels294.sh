#!/usr/bin/env bash
# Device call (~9.5 min + cold start; no carry): run 294 (prepared in session 53, not yet run).
# The three prototypes' tables in one call, for a session whose device window may be short
# (sessions 51-53 got none): row287.sh's and tc291.sh's timing without their pytest steps,
# so that one call decides between row288.sh (ONE_ROW end to end), tc292.sh (VERIFY end to end)
# and the every-matrix arms. The tests' checks are not lost: bench/w12_join.py checks every
# tile it times against the reference before timing it (a wrong tile has no time, and its
# error is in the JSON), the smoke first checks each kernel once, and the GPU tests run in
# row288.sh / tc292.sh before their end-to-end steps (each prototype's test bodies already
# run right on the CPU emulator, tests/conftest.gluon_on).
# Order, most decisive first, each step packed (a call cut short keeps what finished):
#   1. bench/wgmma_ra_probe.py --check, then one call of w12_row, bf16_row and w12_tc (1 and
#      16 rows) against the references (smoke293.sh's; a hang ends the call early);
#   2. w12_join --row at one row (Qwen3-8B): w12_row's and bf16_row's tiles beside w12_linear's
#      one-row tiles (plain, ESC_ROWS 4) and skinny_linear (issue 7's AR; issue 3's AR);
#   3. w12_join --tc at 16 rows (JOIN 2 + ESC_ROWS 4, the verify's tiles): w12_tc (issue 7's
#      spec);
#   4. w12_join --tc at one row: w12_tc's tiles against w12_row's (the arm tc_all or row_tc).
# Predictions: as row287.sh (W12 one row q|k|v ~10.5 us, o ~7.5, down ~19.5, gate|up ~38;
# bf16 one row o ~8.5, q|k|v ~12.6) and tc291.sh (16 rows gate|up ~40, down ~21, q|k|v ~11,
# o ~8).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
prototype_smoke || { pack; archive_only; exit 0; }
pack
timeout 190 python3 bench/w12_join.py --model qwen3-8b --rows 1 --variants plain,esc4 --row \
    --out "$OUT/row-qwen3-8b.json" >"$OUT/row-qwen3-8b.log" 2>&1
echo "row rc=$?"
row_table "$OUT"/row-*.json
pack
timeout 150 python3 bench/w12_join.py --model qwen3-8b --rows 16 --variants j2esc4 --tc \
    --out "$OUT/tc-qwen3-8b.json" >"$OUT/tc-qwen3-8b.log" 2>&1
echo "tc 16 rows rc=$?"
pack
timeout 100 python3 bench/w12_join.py --model qwen3-8b --rows 1 --variants plain --tc \
    --out "$OUT/tc1-qwen3-8b.json" >"$OUT/tc1-qwen3-8b.log" 2>&1
echo "tc one row rc=$?"
tc_table "$OUT"/tc-*.json "$OUT"/tc1-*.json
pack; archive_only
