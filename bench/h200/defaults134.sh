#!/usr/bin/env bash
# Device call (~5 min; no carry): run 134, the new defaults (bf16 one-row gate|up and LM head on
# tensor-core tiles, pdl chain's element-wise rule). GPU tests of the multiplies and PDL rules;
# engine_speed at 1k (AR, spec@6.55 with token forcing, 3 repeats); the kernel timeline of bf16
# and W12 "auto".
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TESTS_K="skinny or pdl or swiglu" TESTS_S=150 gpu_tests tests/test_kernels.py
timeout 200 python3 bench/engine_speed.py --contexts 1024 --llama-contexts '' --batches '' \
    --repeats 3 --hf-baseline 0 --profile 0 --out "$OUT/engine-1024.json" \
    >"$OUT/engine-1024.log" 2>&1
echo "engine rc=$?"; grep -E "ctx 1024|qwen3-8b +1024" "$OUT/engine-1024.log" | cut -c1-300; pack
timeout 200 python3 bench/timeline.py --arms "bf16;w12:auto" --replays 20 \
    --out "$OUT/timeline.json" >"$OUT/timeline.log" 2>&1
echo "timeline rc=$?"; grep -E "^(bf16 |w12:auto )|  (decode|verify|draft) " "$OUT/timeline.log" \
    | cut -c1-200; tail -8 "$OUT/timeline.log" | grep -v "^{"; pack
archive_only
