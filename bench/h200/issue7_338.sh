#!/usr/bin/env bash
# Device call (~3.5 min + cold start, on an H200 ~4.5; no carry): run 338, issue 7: end to end
# with w12_row on stages of 4 blocks (w12_speed arm stages_of_4: ROW_TILES 7), which run 337's
# decode graph (H100) took 4.277 ms against 4.293 / 4.294 back to back (q|k|v 14.86 us a layer
# against 15.15 / 15.17, o 8.86 against 9.86 / 9.97, the merge before o 2.98 against 2.13 / 2.05).
# Qwen3-8B at 1k, 3 paired rounds over bf16 with the control, token forcing on every arm; on an
# H200 also the arm before_334 (EARLY_ESCAPES off): issue 7's own numbers.
# Prediction (H100): stages_of_4 AR +0.2-0.5% over w12 (1.215x in run 335), spec level.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
arms=stages_of_4
if grep -q H200 "$OUT/gpu.log"; then arms=stages_of_4,before_334; fi
w12_e2e e2e-1024 qwen3-8b "$arms" 3 420
pack
archive_only
