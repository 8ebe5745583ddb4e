#!/usr/bin/env bash
# Device call (~3 min + cold start; no carry), session 36, after run 183 (FP8 drafts of 2 and 4
# sequences lost 0.95x to the loaded drafter): "auto" now drafts in FP8 for one b16 block only
# (generator.FP8_DRAFT_MAX_ROWS 16). The GPU test of the wide path (its last check mended:
# on CUDA an explicit FP8 drafter with the "auto" head keeps a wide path for the head), then
# batches of 2 and 4 at 1k with the defaults, which should now match run 183's loaded drafter
# (spec 1,839 and 3,329 tok/s).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TESTS_K="wide_blocks" TESTS_S=60 gpu_tests tests/test_fp8.py
timeout 150 python3 bench/engine_speed.py --contexts 1024 --batches 2,4 --repeats 3 \
    --hf-baseline 0 --profile 0 --torch-baseline 0 --taus 6.55 \
    --out "$OUT/engine-auto.json" >"$OUT/engine-auto.log" 2>&1
echo "engine auto rc=$?"; grep -E "ctx 1024" "$OUT/engine-auto.log" | cut -c1-300
pack; archive_only
