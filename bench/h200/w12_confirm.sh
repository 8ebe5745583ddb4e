#!/usr/bin/env bash
# Device call (run 116, 245 s; no carry): run 115's 16-row W12 tiles as the committed default
# (kernels/w12_linear.MEASURED_TILES): the W12 kernel tests on the GPU, the Qwen3-8B tiles among
# them, then bf16 against W12 end to end at 1k in paired rounds (bench/h200/w12_sweep.sh).
TESTS_K="${TESTS_K:-qwen3_8b_tiles or test_w12_linear}" TESTS_S="${TESTS_S:-150}" \
    E2E_S="${E2E_S:-260}" exec bash "$(dirname "$0")/w12_sweep.sh"
