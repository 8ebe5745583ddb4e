#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), prepared in session 34 for the next: the GPU tests
# of every generation path (graphs, PDL variants, the norm hand-off, the fused engine's token
# forcing) at today's HEAD, then issue 7's end-to-end row with today's defaults (BOOK_AT_LAUNCH
# since run 170): W12 "auto" and every matrix against bf16, 1k, 5 paired rounds (run 160: AR
# 1.088x, spec 1.039x).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TESTS_K="norm_handoff or cuda or fused_engine_passes_token_forcing or pdl_engine" TESTS_S=200 \
    gpu_tests tests/test_kernels.py tests/test_gpu.py
timeout 300 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-matrices auto --paired 5 --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-1024.log" | cut -c1-300
pack; archive_only
