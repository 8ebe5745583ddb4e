#!/usr/bin/env bash
# Device call (~8 min; no carry): the norm hand-off (fused.NORM_HANDOFF_MAX_ROWS: o and down
# write the next norm's input times its weight and their tiles' sums of squares; q|k|v, gate|up
# and the LM head take them and scale their sums by 1 / RMS: no norm kernel between them). GPU
# tests (the kernels against the norm-then-multiply, the skinny multiply's, a forward and the
# engine with it: token forcing); timeline variants at 1k, bf16: off, one row, up to 16 rows;
# engine_speed at 1k with it up to 16 rows (forcing); paired, pipelined, 6 rounds.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
H=models.fused.NORM_HANDOFF_MAX_ROWS
TESTS_K="norm_handoff or skinny_linear" TESTS_S=150 gpu_tests tests/test_kernels.py
V="off|;h1|--switch $H=1;h16|--switch $H=16"
TESTS_K='' ARMS="bf16" REPLAYS=15 TL_S=120 VARIANTS="$V" CONTEXT=1024 \
    bash "$(dirname "$0")/timeline.sh" | grep -E "^(bf16|w12\S*) .* (decode|verify|draft) +[0-9]"
unpack; pack
engine 1024 h16 110 --taus 6.55 --switch $H=16
pack
engine 1024 paired 180 --paired-rounds 6 --paired "pp|--pipeline 1;\
h1|--pipeline 1 --switch $H=1;h16|--pipeline 1 --switch $H=16"
grep "^paired" "$OUT/engine-paired.log"
pack; archive_only
