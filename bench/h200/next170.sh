#!/usr/bin/env bash
# Device call (~7 min + cold start; no carry), session 34: the pipelined loop's booking of a
# step that may be the last moved to right before the next step's first forward
# (engine.generator.BOOK_AT_LAUNCH, on): GPU tests (graphs and eager against transformers),
# the loop profile (run 162 before it: idle 109.6 us a step with replayed drafts, 151.5 with
# the drafter's own), then paired, pipelined, 8 rounds, against the booking first.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TESTS_K="equal_to_transformers" TESTS_S=150 gpu_tests tests/test_gpu.py
engine 1024 loop 150 --loop-profile 2 --taus 6.55
grep -E "pipelined step on the device|others a step|largest idle" "$OUT/engine-loop.log" | cut -c1-400
pack
engine 1024 paired 220 --paired-rounds 8 \
    --paired "at|--pipeline 1;first|--pipeline 1 --switch engine.generator.BOOK_AT_LAUNCH=0"
grep "^paired" "$OUT/engine-paired.log"
pack; archive_only
