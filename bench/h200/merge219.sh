#!/usr/bin/env bash
# Device call (~5 min + cold start; no carry), prepared in session 42, not yet run. Run 217's
# in-kernel merge walked a KV head's slices one at a time (two dependent L2 round trips a slice,
# 16 slices at 1k: its attention ~6.4 us a layer over split + merge). FUSED_MERGE_SLICES (16)
# issues a step's slices' loads at once. (1) GPU tests: the fused merge against the merge
# kernel and through the engine (tokens, forcing); (2) timeline variants, bf16, Qwen3-8B, 1k,
# back to back: base (merge kernel) / fm (in-kernel, 16 slices a step) / fm1 (one a step, run
# 217's) / base2; (3) paired AR and spec@6.55, pipelined, 8 rounds: base against fm.
# Prediction: fm's attention within ~1 us a layer of split + merge (the fence and atomic in
# every split program stay); the one-token forward -0.5% to +0.5% against base; fm1 as run 217
# (+4.7%). Taken only if the paired AR gains (its interval above 1).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
TESTS_K="fused_merge" TESTS_S=150 gpu_tests tests/test_kernels.py
S1="--switch kernels.attention.FUSED_MERGE_SLICES=1"
variants "bf16" "base|;fm|--merge-rows 4;fm1|--merge-rows 4 $S1;base2|" 220
pack
P="--pipeline 1"
engine 1024 paired 240 --paired-rounds 8 --taus 6.55 --paired "base|$P;fm|$P --merge-rows 4"
grep "^paired" "$OUT/engine-paired.log" | cut -c1-300
pack; archive_only
