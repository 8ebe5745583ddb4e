#!/usr/bin/env bash
# Device call (~5 min + cold start; no carry), session 42, after run 212 (decode_graph: paired
# AR 1.001x [1.001-1.002]). The fed AR graph's tokens through a ring in mapped host memory that
# its last kernel writes (generator.MAPPED_RING), instead of a copy queued behind each graph.
# (1) GPU tests: the mapped buffer, the kernel with its ring, generation through fed graphs;
# (2) paired, pipelined, 8 rounds, Qwen3-8B 1k: base (no fed graph), fed with the copy, fed
# with the ring.
# Prediction: the ring another ~5-10 us a token (the copy and its two transitions): fed+ring
# 1.003-1.005x base; spec level (its loop is unchanged).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
TESTS_K="graphs2 or next_decode or host_mapped" TESTS_S=150 gpu_tests tests/test_gpu.py \
    tests/test_kernels.py
P="--pipeline 1"
C="--switch engine.generator.MAPPED_RING=0"
engine 1024 paired 300 --paired-rounds 8 --taus 6.55 \
    --paired "base|$P;copy|$P --decode-graph 1 $C;ring|$P --decode-graph 1"
grep "^paired" "$OUT/engine-paired.log" | cut -c1-300
pack; archive_only
