#!/usr/bin/env bash
# Device call (~9.5 min + cold start; no carry), session 36, after run 182 (FP8 drafts of 8 and
# 32 sequences 2.4-3.9x slower than the loaded drafter's: spec 0.84x / 0.71x). Now "auto"
# drafts in FP8 only up to 64 block rows (generator.FP8_DRAFT_MAX_ROWS; wider drafts and the
# prompts' context writes on the loaded drafter): the GPU test of that, then batches of 2, 4, 8
# and 32 at 1k with the defaults against 2 and 4 with the loaded drafter (8 and 32: run 182),
# then issue 7's end-to-end row (W12 "auto" against bf16, 1k, 4 paired rounds), now that both
# arms draft in FP8 (run 160 before it: AR 1.088x, spec@6.55 1.039x).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TESTS_K="wide_blocks or fused_fp8" TESTS_S=60 gpu_tests tests/test_fp8.py
E="--repeats 3 --hf-baseline 0 --profile 0 --torch-baseline 0 --taus 6.55"
timeout 190 python3 bench/engine_speed.py --contexts 1024 --batches 2,4,8,32 $E \
    --out "$OUT/engine-auto.json" >"$OUT/engine-auto.log" 2>&1
echo "engine auto rc=$?"; grep -E "ctx 1024" "$OUT/engine-auto.log" | cut -c1-300
pack
timeout 130 python3 bench/engine_speed.py --contexts 1024 --batches 2,4 $E --draft-weights model \
    --draft-head target --out "$OUT/engine-model.json" >"$OUT/engine-model.log" 2>&1
echo "engine model rc=$?"; grep -E "ctx 1024" "$OUT/engine-model.log" | cut -c1-300
pack
timeout 180 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-matrices auto --paired 4 --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-1024.log" | cut -c1-300
pack; archive_only
