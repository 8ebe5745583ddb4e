#!/usr/bin/env bash
# Device call (~6 min; no carry): run 156's norm hand-off lost in one-row forwards because the
# multiplies it puts right after an element-wise multiply (gate|up after o, q|k|v after down)
# take EVEN_SHARED's padding and launch early, and their programs' shared memory keeps the one
# before off the SMs (down 24.3 -> 37.3 us). Timeline variants at 1k, bf16: off, the hand-off
# with EVEN_SHARED 0 (those multiplies launched plainly) up to 1 and 16 rows; then paired,
# pipelined, 6 rounds, the same arms.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
H=models.fused.NORM_HANDOFF_MAX_ROWS
E=kernels.launch.EVEN_SHARED
V="off|;h1e0|--switch $H=1 --switch $E=0;h16e0|--switch $H=16 --switch $E=0"
TESTS_K='' ARMS="bf16" REPLAYS=15 TL_S=120 VARIANTS="$V" CONTEXT=1024 \
    bash "$(dirname "$0")/timeline.sh" | grep -E "^(bf16|w12\S*) .* (decode|verify|draft) +[0-9]"
unpack; pack
engine 1024 paired 200 --paired-rounds 6 --paired "pp|--pipeline 1;\
h1e0|--pipeline 1 --switch $H=1 --switch $E=0;h16e0|--pipeline 1 --switch $H=16 --switch $E=0"
grep "^paired" "$OUT/engine-paired.log"
pack; archive_only
