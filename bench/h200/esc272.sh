#!/usr/bin/env bash
# Device call (~1.5 min + cold start; no carry), prepared in session 48, run in session 49 in run
# 271's call, after esc271.sh (run 272 never ran under its own number).
# The one-row W12 multiplies' escapes: with the table emptied (a bound, run 266) gate|up 40.71
# -> 39.58 us, down 23.76 -> 22.70 standalone; ESC_ROWS there: gate|up 40.47 (esc1), down
# 23.25 (esc4), o worse (its registers). bench/h200/esc1row.json puts ESC_ROWS on W12 "auto"'s
# one-row gate|up (1) and down (4); the timeline back to back, base / esc1row / base2 (the
# standalone gains of one-row variants have moved in the graph before: run 216).
# Prediction: decode -10 to -25 us, verify level.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
variants "w12:auto" "base|;esc1row|--tiles bench/h200/esc1row.json;base2|" 120
pack; archive_only
