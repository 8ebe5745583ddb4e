#!/usr/bin/env bash
# Device call (the session's last ~150 s; no carry): tokens.next_meta (the pipelined loop's next
# step inputs in one launch instead of a gather, adds, a minimum and a stack) on the GPU: its
# kernel test and every generation path against transformers (tests/test_gpu.py: the pipelined
# loop is the CUDA default), then engine_speed 1k at tau 6.55 (forcing, pipelined tokens equal
# to the unpipelined loop's) if the budget holds.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
timeout 100 python3 -m pytest -q tests/test_kernels.py tests/test_gpu.py \
    -k "next_meta or argmax or embed_rows or cuda" >"$OUT/tests.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/tests.log"; pack
engine 1024 next 120 --taus 6.55
pack; archive_only
