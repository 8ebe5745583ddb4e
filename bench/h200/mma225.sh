#!/usr/bin/env bash
# Device call (~2.5 min + cold start; no carry), prepared in session 43 with its last device
# minutes: w12_mma's RING, each thread's planes through its own slots of a ring in shared memory
# (inline-PTX cp.async, commit and wait per thread, no barrier; RING - 1 blocks in flight; the
# warp's x range copied once; sm_90: 96 registers, 12 LDGSTS and 20 LDS a block), against the
# register loads (runs 220-224: one step waits a latency a block). (1) bench/w12_mma_speed.py
# --grid ring, one row, o, down, gate|up, q|k|v (every output checked against the reference);
# (2) the GPU tests, if time is left.
# Prediction: o ~8.5 us and down ~20 (register loads 11.2 / 24.3, w12_linear 11.2 / 24.0) if
# latency a block was the bound; level if the programs' fill and drain are.
# Ran as run 225 at commit a62d722: right (13 GPU tests passed) but 2.0-2.8x slower; RING and
# --grid ring deleted since (docs/LOG.md).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
mma_table 150 --rows 1 --grid ring --shapes o,down,gate_up,qkv
grep -E "^(o|down|gate_up|qkv) .*mma" "$OUT/mma-speed.log" | head -24
TESTS_K="mma" TESTS_S=90 gpu_tests tests/test_w12_mma.py
pack; archive_only
