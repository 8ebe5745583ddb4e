#!/usr/bin/env bash
# Device call (~5 min; no carry): run 141, the new attention defaults (merge on 1 warp, at most
# 32 slices, verify and draft slices of at least 128 keys). GPU tests of the attention kernels;
# engine_speed at 1k (AR, spec@6.55 with token forcing, 3 repeats).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TESTS_K="attention" TESTS_S=120 gpu_tests tests/test_kernels.py
timeout 240 python3 bench/engine_speed.py --contexts 1024 --llama-contexts '' --batches '' \
    --repeats 3 --hf-baseline 0 --profile 0 --out "$OUT/engine.json" >"$OUT/engine.log" 2>&1
echo "engine rc=$?"; grep -E "ctx 1024|qwen3-8b +1024" "$OUT/engine.log" | cut -c1-300
pack; archive_only
