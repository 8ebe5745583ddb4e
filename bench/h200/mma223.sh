#!/usr/bin/env bash
# Device call (~4 min + cold start; no carry), prepared in session 43 after run 222 (whose
# kernel table stopped at a tile that did not fit shared memory): the mma kernel's two load
# schemes side by side, standalone, one and four rows, Qwen3-8B's multiplies, cold L2:
# REGS (run 220's: into registers one block ahead; ptxas sinks them) and Triton's cp.async
# pipeline at 2-4 stages (run 222's default, 3: in the graph the one-row decode 5.75 ms against
# 3.79, o 18.6 us against 10.5).
# Prediction: neither beats w12_linear at one row by more than 5% (run 220: level), the
# pipeline's fill and drain a program costing more than its deeper loads win; at four rows
# both ahead of w12_linear's 16-row tiles (run 220: REGS 1.06-1.12x).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="mma" TESTS_S=200 gpu_tests_gate tests/test_w12_mma.py || exit 0
mma_table 330 --rows 1,4
archive_only
