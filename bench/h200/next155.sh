#!/usr/bin/env bash
# Device call (~7 min; no carry): tokens.replay_drafts (the benchmarks' replayed drafts in one
# launch; only run in the interpreter so far) on the GPU: its kernel test, the other token
# kernels' and every generation path against transformers; engine_speed 1k at tau 6.55 with the
# loop profile of both proposers (forcing, pipelined tokens equal to the host-replayed loop's);
# paired at 1k in the pipelined loop: next_meta and replay_drafts against their PyTorch forms.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TESTS_K="replay or next_meta or argmax or embed_rows or cuda" TESTS_S=110 \
    gpu_tests tests/test_kernels.py tests/test_gpu.py
engine 1024 loop 130 --loop-profile 2 --taus 6.55
grep -E "pipelined step on the device|others a step" "$OUT/engine-loop.log" | cut -c1-700
pack
engine 1024 paired 170 --paired-rounds 6 --paired "pp|--pipeline 1;\
nm0|--pipeline 1 --switch kernels.tokens.NEXT_META=0;rp0|--pipeline 1 --switch kernels.tokens.REPLAY=0"
grep "^paired" "$OUT/engine-paired.log"
pack; archive_only
