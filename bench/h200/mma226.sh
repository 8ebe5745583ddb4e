#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), prepared in session 43, not yet run: w12_mma at
# 9-16 rows (GROUPS 2: a second mma a fragment on the same decoded weights, tokens 8-15; sm_90:
# 429 loop instructions a block of 16 x 256 weights, ~3.4 a weight for 16 tokens, 168 registers,
# no spills), against w12_linear's 16-row tiles (wgmma/mma.sync through tl.dot). (1) GPU tests
# (rows 1-16; stop if any fails); (2) bench/w12_mma_speed.py at 1, 8 and 16 rows with the sweep;
# (3) timeline variants, W12 "all": base / mma16 (w12_linear.MMA_ROWS=16: the plain one- and
# 16-row multiplies) / mma16 with launch.EVEN_SHARED 0.
# Prediction: at 16 rows the mma kernel 5-15% faster than the 16-row tiles at q|k|v, o and down
# (four rows: 1.02-1.17x, runs 223-224), level at gate|up; the W12 verify forward -2 to -4%,
# the decode +3-5% (one row slower in the graph, run 224) unless EVEN_SHARED 0.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="mma" TESTS_S=200 gpu_tests_gate tests/test_w12_mma.py || exit 0
mma_table 240 --rows 1,8,16
S="--switch kernels.w12_linear.MMA_ROWS=16"
variants "w12:all" "base|;mma16|$S;mma16_even0|$S --switch kernels.launch.EVEN_SHARED=0" 240
decode_each "w12:all"
grep -E "^w12:all \S+ verify:.*each" "$OUT/timeline-variants-1024.log" | cut -c1-330
pack; archive_only
