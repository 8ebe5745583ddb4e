#!/usr/bin/env bash
# Device call (~4 min + cold start; no carry), session 48: run 262. Run 260's source view of the
# 16-row W12 gate|up put 20% of its stall samples on the ACC_SCALE group bases: byte loads
# (too narrow for cp.async, so outside the loop's pipeline) that the sm_90 code issues halfway
# through the step and uses after its last product. BASE_EARLY 1: the bases loaded at the
# step's top as bytes (ptxas still sinks them); 2: as the word of 4 bases, which the pipeline
# takes (cp.async, 170 registers alone: 2 programs an SM; 167 with JOIN 2). GPU tests, then
# bench/w12_join.py's variants on run 259's best tiles, Qwen3-8B 16 rows.
# Prediction: be2 / j2be2 gate|up 45 -> ~40 us (3.8 TB/s), down 29.7 -> ~26; be1 level.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
TESTS_K="join or early" TESTS_S=120 gpu_tests_gate tests/test_w12_kernels.py || exit 0
timeout 300 python3 bench/w12_join.py --rows 16 --out "$OUT/early-16.json" >"$OUT/early-16.log" 2>&1
echo "join rc=$?"; grep -vE "^\{" "$OUT/early-16.log" | tail -6 | cut -c1-200
pack; archive_only
