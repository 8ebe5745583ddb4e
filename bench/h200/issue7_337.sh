#!/usr/bin/env bash
# Device call (~1.5 min + cold start; on an H200 ~5 min; no carry): run 337, issue 7: W12's
# one-row ring on fewer, larger stages. Run 334's decode graph with the hand-off alone
# (ROW_BOUND 2: the copies and the stage barriers, no reads; H100) took W12's q|k|v 14.27 us a
# layer against a 12.6 bound, where bf16_row's whole multiply runs at its bound on as many stages
# of 4/3 the bytes; a deeper ring for q|k|v alone (s10p6) took 14.43 against 15.74 / 15.47 but
# lost o and gate|up.
# 0. On an H200 first: issue 7's own numbers, Qwen3-8B end to end at 1k, 3 paired rounds over
#    bf16 with the control and before_334 (EARLY_ESCAPES off), forcing on every arm.
# 1. Qwen3-8B's W12 decode graph, back to back, traced: base, sb4s3 (w12_row.ONE_ROW_TILE 7:
#    stages of 4 blocks, 3 of them: the default's 72 kB in flight in half the hand-offs), sb4s4
#    (8: 4 of them, 96 kB), qkv10p6 (ONE_ROW_NORMED_SMALL_TILE 6: q|k|v alone on 10 stages, 6
#    before PDL's wait), qkvsb4 (ONE_ROW_NORMED_SMALL_TILE 8), base2; the exit-spacing table.
# Prediction (H100): sb4s3 and sb4s4 -0.5 to -1.5 us a layer at q|k|v and gate|up if the
# hand-offs are what W12 loses (decode -0.02 to -0.07 ms), level or worse if the bytes in
# flight are (run 334's deeper rings lost at o and gate|up); qkv10p6 q|k|v -1 us a layer (decode
# -0.03 ms) with o and gate|up as base.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
if grep -q H200 "$OUT/gpu.log"; then w12_e2e e2e-1024 qwen3-8b before_334 3 300; pack; fi
MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" "base|;sb4s3|$(sw w12_row.ONE_ROW_TILE=7);\
sb4s4|$(sw w12_row.ONE_ROW_TILE=8);qkv10p6|$(sw w12_row.ONE_ROW_NORMED_SMALL_TILE=6);\
qkvsb4|$(sw w12_row.ONE_ROW_NORMED_SMALL_TILE=8);base2|" 220
decode_table w12
archive_only
