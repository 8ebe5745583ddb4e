#!/usr/bin/env bash
# Device call (~9 min + cold start; no carry), session 36: the drafter's new context through one
# multiply by every layer's stacked k|v weights (models/fused.DRAFT_CONTEXT_ONCE 1) and one
# cache write of every layer (2, the default now) against a multiply and a write a layer (0).
# Prediction: the five ~8 us FP8 k|v multiplies (run 180) become one of ~12 us and four rope
# launches go: the draft ~35 us shorter, spec@6.55 +0.6-0.8%. First the GPU tests of the fused
# paths, then the stacked shape's FP8 tiles swept, the kernel timeline of the draft with each
# mode, the three modes paired (pipelined, 8 rounds) on the swept tile, and issue 3's
# Llama-3.1-8B 1k row with the defaults (session 35's prepared call, never run).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TESTS_K="rope or draft_context_once or fused_engine_passes_token_forcing or fp8 or vocabulary" \
    TESTS_S=130 gpu_tests tests/test_kernels.py tests/test_fp8.py
timeout 80 python3 bench/fp8_speed.py --shapes drafter --only "k|v,k|v layers" --repeats 10 \
    --tiles-out "$OUT/fp8-tiles.json" --out "$OUT/fp8-speed.json" >"$OUT/fp8-speed.log" 2>&1
echo "fp8_speed rc=$?"; grep -v '^{"bench"' "$OUT/fp8-speed.log" | tail -3
pack
T="--tiles $OUT/fp8-tiles.json"
S="--switch models.fused.DRAFT_CONTEXT_ONCE"
variants bf16 "ctx0|$S=0 $T;ctx1|$S=1 $T;ctx2|$T" 75
pack
engine 1024 paired 140 --paired-rounds 8 --paired \
    "ctx0|--pipeline 1 $S=0 $T;ctx1|--pipeline 1 $S=1 $T;ctx2|--pipeline 1 $T"
grep "^paired" "$OUT/engine-paired.log"
pack
timeout 140 python3 bench/engine_speed.py --contexts '' --llama --llama-contexts 1024 \
    --batches '' --repeats 3 --hf-baseline 0 --profile 0 --torch-baseline 0 --taus 6.55 $T \
    --out "$OUT/engine-llama.json" >"$OUT/engine-llama.log" 2>&1
echo "engine llama rc=$?"; grep -E "ctx 1024" "$OUT/engine-llama.log" | cut -c1-300
pack; archive_only
