#!/usr/bin/env bash
# Device call (~5 min + cold start; no carry), session 34: the host's launch of a graph of 200
# PDL kernels (bench/h200/probe_cond.py; what a window step's launch after its booking costs),
# then EngineConfig.step_graph (a whole speculative step one graph: one launch after the booking
# instead of the draft graph's, and no eager glue) with BOOK_AT_LAUNCH: paired, pipelined, 8
# rounds, against two graphs (run 151, before BOOK_AT_LAUNCH: level, 1.062x against 1.059x).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
timeout 60 python3 bench/h200/probe_cond.py > "$OUT/probe-cond.log" 2>&1; echo "probe rc=$?"
tail -c 600 "$OUT/probe-cond.log"
engine 1024 paired 260 --paired-rounds 8 \
    --paired "two|--pipeline 1;one|--pipeline 1 --step-graph 1"
grep "^paired" "$OUT/engine-paired.log"
pack; archive_only
