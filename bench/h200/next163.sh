#!/usr/bin/env bash
# Device call (~7 min + cold start; no carry), session 33: in-graph variants at 1k, one process
# a weight arm (bench/timeline.py --variants, back to back): the one-row norm hand-off's two
# sites alone (models.fused.NORM_HANDOFF_ONE_ROW_SITES 1: o -> gate|up, 2: down -> q|k|v), and
# 16-row tiles under today's launch rules (bench/h200/tiles163/: bf16 o, down and q|k|v; W12
# "auto" down and gate|up), which the isolated cold-L2 sweeps chose before WIDE_PDL's padding.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
T=bench/h200/tiles163
S=models.fused.NORM_HANDOFF_ONE_ROW_SITES
V="base|;s1|--switch $S=1;s2|--switch $S=2"
for t in o16 ok512 ok128 d16 dk512 dk128 q32; do V="$V;$t|--tiles $T/$t.json"; done
V="$V;base2|"
TESTS_K='' ARMS="bf16" REPLAYS=15 TL_S=280 VARIANTS="$V" CONTEXT=1024 \
    bash "$(dirname "$0")/timeline.sh" | grep -E "^(bf16|w12\S*) .* (decode|verify|draft) +[0-9]"
unpack; mv "$OUT/timeline-variants-1024.json" "$OUT/timeline-bf16.json"
mv "$OUT/timeline-variants-1024.log" "$OUT/timeline-bf16.log"; pack
V="base|"
for t in wds2 wds8 wdacc wd64 wg2; do V="$V;$t|--tiles $T/$t.json"; done
TESTS_K='' ARMS="w12:auto" REPLAYS=15 TL_S=200 VARIANTS="$V" CONTEXT=1024 \
    bash "$(dirname "$0")/timeline.sh" | grep -E "^(bf16|w12\S*) .* (decode|verify|draft) +[0-9]"
unpack; pack; archive_only
