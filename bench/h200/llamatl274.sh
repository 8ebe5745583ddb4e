#!/usr/bin/env bash
# Device call (~1.5 min + cold start; no carry), session 49: run 274.
# Llama-3.1-8B's ESC_ROWS entries from run 273 (16-row gate|up on its 2-warp tile with 2, one-row
# down with 4: standalone 53.64 -> 51.96 and 27.34 -> 26.70 us), back to back in the graphs:
# timeline variants of W12 auto, base / old (bench/h200/llama_noesc.json: the two entries as
# before) / base2.
# Prediction: verify -40 to -55 us (32 layers x ~1.5 us), decode -10 to -20 us.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
MODEL=llama3.1-8b variants "w12:auto" "base|;old|--tiles bench/h200/llama_noesc.json;base2|" 120
pack; archive_only
