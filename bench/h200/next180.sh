#!/usr/bin/env bash
# Device call (~9 min + cold start; no carry), session 35: the FP8 drafter as the CUDA default
# (EngineConfig.draft_weights / draft_head "auto"). The drafter's FP8 multiplies swept again,
# now with K splits and 512-column steps (run 179: the small shapes at 1.7-2.4 TB/s), issue 3's
# 1k row with today's defaults on the sweep's tiles (token forcing), paired against the loaded
# drafter and the target's head, then the GPU tests of every generation path with the defaults.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
timeout 130 python3 bench/fp8_speed.py --shapes drafter --repeats 10 \
    --tiles-out "$OUT/fp8-tiles.json" --out "$OUT/fp8-speed.json" >"$OUT/fp8-speed.log" 2>&1
echo "fp8_speed rc=$?"; grep -v '^{"bench"' "$OUT/fp8-speed.log" | tail -8
pack
T="--tiles $OUT/fp8-tiles.json"
engine 1024 row 150 $T
pack
engine 1024 paired 90 --paired-rounds 6 --paired \
    "base|--pipeline 1 --draft-weights model --draft-head target $T;fp8|--pipeline 1 $T"
grep "^paired" "$OUT/engine-paired.log"
pack
TESTS_K="norm_handoff or cuda or fused_engine_passes_token_forcing or pdl_engine or fp8" \
    TESTS_S=180 gpu_tests tests/test_kernels.py tests/test_gpu.py tests/test_fp8.py
pack; archive_only
