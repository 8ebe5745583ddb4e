#!/usr/bin/env bash
# Device call (~1.5 min, warm; no carry), session 48: run 268. Run 267's paired rounds were too
# noisy to tell ESCAPE_TILES apart end to end; the timeline back to back is reproducible to
# ~0.15%: W12 "auto" (gate|up + down), its 16-row tiles with ESC_ROWS (base) and without (noesc).
# Prediction: verify -70 to -100 us (gate|up -0.6, down -2.2 us a layer), decode level.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
variants "w12:auto" "base|;noesc|--switch kernels.w12_linear.ESCAPE_TILES_ON=0;base2|" 150
pack; archive_only
