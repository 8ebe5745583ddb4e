#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), session 40, after run 199 (the certified head's
# one-row tile b, 213 us against the exact head's ~290; paired AR 1.022x, verify on it 1% slower).
# target_head "auto" is now "certified-decode" where the head's shape has a measured one-row tile
# (Qwen3-8B's): the certified head in one-row forwards, the exact head in verify blocks.
# 1. GPU tests: certified-decode's one-row-only path, auto's resolution, the widening, the
#    kernel's tokens. 2. Paired, 1k, 6 rounds: "exact" against "auto" (AR and spec@6.55).
# 3. Issue 3's 1k row with the defaults (token forcing on AR and spec).
# Prediction: AR 1.015-1.03x, spec level (0.99-1.01x); forcing passes.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.log"
TESTS_K="certified_decode or auto_target_head or widen or exact_heads" TESTS_S=90 \
    gpu_tests tests/test_certified.py
engine 1024 paired 180 --paired-rounds 6 --taus 6.55 \
    --paired "exact|--target-head exact;auto|"
grep "^paired" "$OUT/engine-paired.log" | cut -c1-300
pack
engine 1024 row 150
pack; archive_only
