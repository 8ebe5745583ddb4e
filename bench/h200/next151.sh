#!/usr/bin/env bash
# Device call (~5 min; no carry): run 150's loop profile again, now read step by step (whole
# steps between the loop's result copies; run 150 differenced two runs and its prefill noise
# made nonsense), with the defaults and with --step-graph 1; then the two loops (host-
# synchronous, pipelined) with and without the step graph as paired arms at 1k (6 rounds).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
for arm in "loop|" "stepgraph|--step-graph 1"; do
    name=${arm%%|*}; opts=${arm#*|}
    # shellcheck disable=SC2086
    engine 1024 "$name" 200 --loop-profile 1 --taus 6.55 $opts
    grep -E "pipelined step on the device|largest idle|others a step" "$OUT/engine-$name.log" \
        | cut -c1-1500
    pack
done
engine 1024 loops 240 --paired-rounds 6 \
    --paired "base|;sg|--step-graph 1;pp|--pipeline 1;ppsg|--pipeline 1 --step-graph 1"
pack; archive_only
