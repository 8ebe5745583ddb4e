#!/usr/bin/env bash
# Device call (~7 min + cold start; no carry), session 35: the FP8 draft head
# (EngineConfig.draft_head "fp8", formats/fp8.py). GPU tests (the FP8 kernel against its
# reference, the fused drafter with it, every fused path against transformers), the head's
# multiply swept over tiles against bf16 (bench/fp8_head.py), then the kernel timeline's draft
# forward with and without it, bf16 and W12 "auto" (run 163: draft 0.959 / 0.913 ms, the head
# 282 / 243 us of it).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TESTS_K="fp8 or equal_to_transformers" TESTS_S=170 gpu_tests tests/test_fp8.py tests/test_gpu.py
timeout 200 python3 bench/fp8_head.py --out "$OUT/fp8-head.json" >"$OUT/fp8-head.log" 2>&1
echo "fp8_head rc=$?"; grep -v '^{"bench"' "$OUT/fp8-head.log" | tail -14
pack
variants "bf16;w12:auto" "base|;fp8|--draft-head fp8" 150
pack; archive_only
