#!/usr/bin/env bash
# Device call (~9 min; no carry): the norm hand-off on by default (up to 16 rows; its handed
# multiplies behind an element-wise one launched plainly). GPU tests (the hand-off's, every
# generation path against transformers, the fused engine's token forcing); timeline variants
# at 1k, bf16: the defaults, LATE_TRIGGER 1 (the handing multiply lets the next launch only as
# its programs exit; the handed one then launched with PDL, unpadded), the hand-off off;
# engine_speed 1k (forcing); paired, pipelined, 5 rounds, the same arms.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
H=models.fused.NORM_HANDOFF_MAX_ROWS
L=kernels.launch.LATE_TRIGGER
TESTS_K="norm_handoff or cuda or fused_engine_passes_token_forcing" TESTS_S=120 \
    gpu_tests tests/test_kernels.py tests/test_gpu.py
V="base|;late|--switch $L=1;off|--switch $H=0"
TESTS_K='' ARMS="bf16" REPLAYS=15 TL_S=100 VARIANTS="$V" CONTEXT=1024 \
    bash "$(dirname "$0")/timeline.sh" | grep -E "^(bf16|w12\S*) .* (decode|verify|draft) +[0-9]"
unpack; pack
engine 1024 base 100 --taus 6.55
pack
engine 1024 paired 160 --paired-rounds 5 --paired "pp|--pipeline 1;\
late|--pipeline 1 --switch $L=1;off|--pipeline 1 --switch $H=0"
grep "^paired" "$OUT/engine-paired.log"
pack; archive_only
