#!/usr/bin/env bash
# Device call (run 115, 367 s; no carry): the 16-row W12 tiles swept again with today's
# switches. Runs 67-68 chose them (32 weight rows, 2 warps) before ACC_SCALE, ESC_IN_LOOP and
# HALVES existed; run 73 tried ACC_SCALE on that family only. W12_DOT_GRID's 180 tensor-core
# tiles, each with ACC_SCALE on and off, then end to end with the winners (bench/h200/
# w12_sweep.sh; its variables apply).
GRID=dot_acc exec bash "$(dirname "$0")/w12_sweep.sh"
