#!/usr/bin/env bash
# Device call (~8 min + cold start; no carry), session 35: the FP8 draft head's tiles, the
# weights also as wgmma's left operand (W_LEFT; run 176 swept them only on the right, where
# Triton took mma.sync: best 233.6 us against bf16's 353 standalone), then end to end, paired,
# pipelined: the FP8 head on the sweep's best tile against the target's head (run 176's
# timeline: the bf16 draft forward 0.944 -> 0.833 ms on the untuned tile).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TESTS_K="skinny or tiles" TESTS_S=90 gpu_tests tests/test_fp8.py tests/test_tiles.py
timeout 230 python3 bench/fp8_head.py --repeats 15 --tiles-out "$OUT/fp8-tiles.json" \
    --out "$OUT/fp8-head.json" >"$OUT/fp8-head.log" 2>&1
echo "fp8_head rc=$?"; grep -v '^{"bench"' "$OUT/fp8-head.log" | tail -14; cat "$OUT/fp8-tiles.json"
pack
engine 1024 paired 240 --paired-rounds 6 --paired \
    "base|--pipeline 1;fp8|--pipeline 1 --draft-head fp8 --tiles $OUT/fp8-tiles.json"
grep "^paired" "$OUT/engine-paired.log"
pack; archive_only
