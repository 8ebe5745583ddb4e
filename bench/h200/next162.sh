#!/usr/bin/env bash
# Device call (~7 min; no carry), prepared in session 32 for the next: the drafter's own loop
# profile (engine_speed --loop-profile 2: a deployment's step, no replay glue; fixed after run
# 155, never run), then launch.HANDED_PDL (the norm hand-off's handed multiplies behind an
# element-wise one launched early at their own occupancy instead of plainly): timeline
# variants at 1k, bf16, and paired, pipelined, 6 rounds.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
P=kernels.launch.HANDED_PDL
engine 1024 loop 150 --loop-profile 2 --taus 6.55
grep -E "pipelined step on the device|others a step|largest idle" "$OUT/engine-loop.log" | cut -c1-600
pack
V="base|;hp|--switch $P=1"
TESTS_K='' ARMS="bf16" REPLAYS=15 TL_S=100 VARIANTS="$V" CONTEXT=1024 \
    bash "$(dirname "$0")/timeline.sh" | grep -E "^(bf16|w12\S*) .* (decode|verify|draft) +[0-9]"
unpack; pack
engine 1024 paired 170 --paired-rounds 6 --paired "pp|--pipeline 1;hp|--pipeline 1 --switch $P=1"
grep "^paired" "$OUT/engine-paired.log"
pack; archive_only
