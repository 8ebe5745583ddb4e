#!/usr/bin/env bash
# Device call (~4 min + cold start; no carry), prepared in session 38 after run 196 (the rope in
# q|k|v's epilogue: one-token forward level, 16-token +1.2%). 1. The GPU tests of rope.EPILOGUE
# to the end (run 196 cut the engine test, CUDA graphs and token forcing, at 60 s). 2. One-token
# forwards only (EPILOGUE=1), on the compiled-in q|k|v tile (BLOCK_N 16: 8 programs a head)
# and on wider one-row tiles (bench/h200/tiles197: BLOCK_N 32 and 64, 4 and 2 programs a head,
# a shorter wait behind each head's counter), each tile also without the epilogue (its own
# control). Prediction: 35% that one of them makes the one-token forward 15-30 us shorter than
# the base; then a paired AR run with it decides.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.log"
TESTS_K="rope_epilogue" TESTS_S=180 gpu_tests tests/test_kernels.py
S="--switch kernels.rope.EPILOGUE=1"
T=bench/h200/tiles197
variants bf16 "base|;epi|$S;n32|--tiles $T/n32.json;n32epi|--tiles $T/n32.json $S;n64|--tiles \
$T/n64.json;n64epi|--tiles $T/n64.json $S;base2|" 150
pack; archive_only
