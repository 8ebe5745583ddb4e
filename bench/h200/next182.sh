#!/usr/bin/env bash
# Device call (~9 min + cold start; no carry), session 36: issue 3's Qwen3-8B rows at 1k, 8k and
# 32k with today's defaults (the FP8 drafter and head, DRAFT_CONTEXT_ONCE 2 on run 181's tile;
# token forcing), with batches of 8 and 32 sequences at 1k; then the same batches with the
# loaded drafter and the target's head, so that FP8 in batched drafts (65-256 rows: skinny
# slices; more: widened for cuBLAS) is measured against what it replaced.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
timeout 400 python3 bench/engine_speed.py --contexts 1024,8192,32768 --batches 8,32 \
    --repeats 3 --hf-baseline 0 --profile 0 --torch-baseline 0 \
    --out "$OUT/engine-rows.json" >"$OUT/engine-rows.log" 2>&1
echo "engine rows rc=$?"; grep -E "ctx (1024|8192|32768)|^ +(8|32) " "$OUT/engine-rows.log" | cut -c1-300
pack
timeout 170 python3 bench/engine_speed.py --contexts 1024 --batches 8,32 --repeats 3 \
    --hf-baseline 0 --profile 0 --torch-baseline 0 --taus 6.55 --draft-weights model \
    --draft-head target --out "$OUT/engine-model.json" >"$OUT/engine-model.log" 2>&1
echo "engine model rc=$?"; grep -E "ctx 1024|^ +(8|32) " "$OUT/engine-model.log" | cut -c1-300
pack; archive_only
