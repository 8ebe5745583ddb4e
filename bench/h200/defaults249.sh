#!/usr/bin/env bash
# Device call (~7 min + cold start; no carry), session 46: run 249.
# The new defaults: "auto" certifies Qwen3-8B's verify blocks too (16-row F16 tile on 2 warps,
# TWO_PASS from 2 rows, ROW_STATS 1; run 248: verify -88 us, paired spec 1.012x). GPU tests of
# test_certified; Qwen3-8B 1k timeline: base (defaults), cdec (--target-head certified-decode:
# the old default), the second launch's tile at 512 and 1,024 head rows a program (57 us at
# 256), base2; Llama-3.1-8B 1k: base (its verify exact: no 16-row tile), l16 (its verify head
# certified on Qwen3's tile), base2; then Qwen3-8B 1k with the defaults end to end (issue 3's
# rows, token forcing on AR and spec).
# Prediction: base verify ~4.29 ms against cdec's 4.38; ex512 -10 to -20 us; Llama l16 verify
# -60 to -80 us; Qwen3 spec@6.55 pipelined ~1,300 (this machine's spread: +-1%).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="kernel or f16 or int8_sums or taller or row_stats or deferred" TESTS_S=300 \
    gpu_tests_gate tests/test_certified.py || exit 0
E="--switch kernels.certified.EXACT_ROWS"
variants bf16 "base|;cdec|--target-head certified-decode;ex512|$E=512;ex1024|$E=1024;base2|" 300
grep -E "^bf16 \S+ verify: (span|attention|argmax)" "$OUT/timeline-variants-1024.log" \
    | cut -c1-200
MODEL=llama3.1-8b variants bf16 \
    "base|;l16|--target-head certified --tiles bench/h200/verify249/l16w2.json;base2|" 240
grep -E "^bf16 \S+ verify: (span|attention|argmax)" \
    "$OUT/timeline-variants-1024-llama3.1-8b.log" | cut -c1-200
engine 1024 qwen 150 --taus 6.55
pack; archive_only
