#!/usr/bin/env bash
# Device call (~2 min + cold start; no carry), session 38: rope.EPILOGUE, the rope kernel's work
# in the q|k|v multiply's epilogue (the last program of each head does it; no rope launch). First
# the GPU tests (kernel, forward, engine with CUDA graphs and token forcing), then the timeline's
# forwards with it against the base (twice), back to back. Prediction: decode and verify each
# -30 to -50 us (the rope's 58 us and a gap, less the epilogue's tail), the draft unchanged.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.log"
TESTS_K="rope_epilogue" TESTS_S=60 gpu_tests tests/test_kernels.py
variants bf16 "base|;epi|--switch kernels.rope.EPILOGUE=1;base2|" 80
pack; archive_only
