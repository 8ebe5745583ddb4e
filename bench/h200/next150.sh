#!/usr/bin/env bash
# Device call (~5 min; no carry): where the pipelined speculative step's time goes outside the
# two forwards (LOG plan 5: run 148's step graph 5.73 ms against verify + draft back to back
# 5.36). engine_speed at 1k with --loop-profile 1 (torch.profiler's device timeline of the
# pipelined loop: our kernels, PyTorch's, the idle time between, by pair), once with the
# defaults (EVEN_SHARED 1 now) and once with --step-graph 1 (a whole step one CUDA graph; last
# measured in run 11, 30 engine versions ago: slower then). Token forcing in both.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
for arm in "loop|" "stepgraph|--step-graph 1"; do
    name=${arm%%|*}; opts=${arm#*|}
    # shellcheck disable=SC2086
    engine 1024 "$name" 200 --loop-profile 1 $opts
    grep -E "pipelined step on the device|largest idle" "$OUT/engine-$name.log" | cut -c1-900
    pack
done
archive_only
