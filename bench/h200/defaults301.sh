#!/usr/bin/env bash
# Device call (~2.5 min + cold start; no carry): run 301, after kernels/w12_row's ONE_ROW and
# BF16_ONE_ROW became defaults (on Hopper GPUs only; runs 296-299). The generation paths
# against transformers on CUDA (tests/test_gpu.py: the one-row forwards now on w12_row), the
# fused engine's token forcing (bf16, W12, mixed) and the one-row forward tests, within 130 s.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
TESTS_K="cuda_fp32 or cuda_bf16 or fused_engine_passes_token_forcing or one_row_forward or route_to" TESTS_S=130 \
    gpu_tests tests/test_gpu.py tests/test_kernels.py tests/test_w12_row.py
grep -E "FAILED|passed|failed" "$OUT/gpu-tests.log" | tail -8 | cut -c1-200
pack; archive_only
