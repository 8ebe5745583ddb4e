#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), session 35: the FP8 drafter again after run 178
# (spec 0.884x: the drafter's 1k prompt context went through ~100 skinny launches of 64 rows;
# now its weights are widened for cuBLAS past 64 rows), the drafter's multiplies swept with
# each timing inside a CUDA graph (run 178 timed the host's launches), then paired, pipelined,
# 6 rounds: base, the FP8 head, the FP8 drafter and head, on the sweep's tiles.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TESTS_K="fp8" TESTS_S=80 gpu_tests tests/test_fp8.py
timeout 240 python3 bench/fp8_speed.py --shapes drafter --repeats 10 \
    --tiles-out "$OUT/fp8-tiles.json" --out "$OUT/fp8-speed.json" >"$OUT/fp8-speed.log" 2>&1
echo "fp8_speed rc=$?"; grep -v '^{"bench"' "$OUT/fp8-speed.log" | tail -8
pack
T="--tiles $OUT/fp8-tiles.json"
engine 1024 paired 160 --paired-rounds 6 --paired "base|--pipeline 1;head|--pipeline 1 \
--draft-head fp8 $T;fp8|--pipeline 1 --draft-head fp8 --draft-weights fp8 $T"
grep "^paired" "$OUT/engine-paired.log"
pack; archive_only
