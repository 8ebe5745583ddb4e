#!/usr/bin/env bash
# Device call (~2 min + cold start; no carry), session 48: run 269. JOIN_INPUT
# (kernels/w12_linear.join_input): the rmsnorm launch before a 16-row W12 gate|up writes its
# output in join_order and the gate|up tile reads it with JOIN 2 (run 266 standalone, with
# ESC_ROWS: 44.75 -> 43.24 us). GPU tests of the JOIN paths, then the timeline back to back,
# W12 "auto": base, join (JOIN_INPUT on), base2.
# Prediction: verify -40 to -55 us (-1.5 us a layer), decode level.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="join_input or join_2" TESTS_S=60 gpu_tests_gate tests/test_w12_kernels.py || exit 0
variants "w12:auto" "base|;join|--switch kernels.w12_linear.JOIN_INPUT=1;base2|" 150
pack; archive_only
