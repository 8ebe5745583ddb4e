#!/usr/bin/env bash
# Device call (~8 min + cold start; no carry), session 42: EngineConfig.decode_graph, each step
# of the pipelined AR loop one CUDA graph that feeds itself (the forward, then the next token
# and position written into its own inputs by kernels/tokens.next_decode), against today's
# loop (two input copies, the graph, an add and a minimum: five stream operations a token).
# (1) GPU tests: the bf16 / fp32 equality tests with fed graphs, the next_decode kernel;
# (2) paired AR and spec@6.55 (pipelined, 8 rounds, Qwen3-8B 1k); (3) the 1k row with it
# (its pipelined AR, token forcing).
# Prediction: the pipelined AR step ~20-40 us shorter (4.04 ms a token against the forward's
# ~4.00 back to back): AR 1.005-1.01x, spec level; forcing passes; pipelined AR 246-250.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
TESTS_K="graphs2 or next_decode" TESTS_S=150 gpu_tests tests/test_gpu.py tests/test_kernels.py
P="--pipeline 1"
engine 1024 paired 240 --paired-rounds 8 --taus 6.55 --paired "base|$P;fed|$P --decode-graph 1"
grep "^paired" "$OUT/engine-paired.log" | cut -c1-300
pack
engine 1024 fed 150 --decode-graph 1
pack; archive_only
