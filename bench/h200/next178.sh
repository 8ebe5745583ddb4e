#!/usr/bin/env bash
# Device call (~8 min + cold start; no carry), session 35: the FP8 drafter
# (EngineConfig.draft_weights "fp8", every drafter linear in e4m3, with the FP8 head). GPU tests,
# the drafter's multiplies swept over FP8 tiles against bf16 (bench/fp8_speed.py --shapes
# drafter; cold weights), then paired, pipelined, 6 rounds: the target's head and bf16 drafter,
# the FP8 head (run 177: spec 1.023x), the FP8 drafter and head, on the sweep's tiles.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TESTS_K="fp8" TESTS_S=80 gpu_tests tests/test_fp8.py
timeout 270 python3 bench/fp8_speed.py --shapes drafter --repeats 10 \
    --tiles-out "$OUT/fp8-tiles.json" --out "$OUT/fp8-speed.json" >"$OUT/fp8-speed.log" 2>&1
echo "fp8_speed rc=$?"; grep -v '^{"bench"' "$OUT/fp8-speed.log" | tail -8
pack
T="--tiles $OUT/fp8-tiles.json"
engine 1024 paired 160 --paired-rounds 6 --paired "base|--pipeline 1;head|--pipeline 1 \
--draft-head fp8 $T;fp8|--pipeline 1 --draft-head fp8 --draft-weights fp8 $T"
grep "^paired" "$OUT/engine-paired.log"
pack; archive_only
