#!/usr/bin/env bash
# Device call (~3 min + cold start; no carry): run 258. Issue 7's spec is flat (run 255: W12
# gate|up + down verify16 4.313 ms against bf16's 4.307) though the 16-row W12 gate|up beats
# bf16's (45.0 against 53.6 us a layer, run 226's table). Where the 16-row W12 forward's time
# goes now: timeline variants of bf16 and W12 "auto" (gate|up + down, the head bf16 and
# certified), Qwen3-8B 1k: base; ho (models.fused.NORM_HANDOFF_W12: the norm handed through
# W12 multiplies too; run 161 level, with the W12 head); base2.
# Prediction: W12 verify ~4.30 ms against bf16 ~4.26 back to back, its gate|up -8 us and down +2
# us a layer, the rest in its norm launches and gaps (+~5 us a layer); ho: the W12 verify -30 to
# -60 us (o's hand-off into gate|up kept; the 16-row down is a K split and hands nothing).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
variants "bf16;w12:auto" "base|;ho|--switch models.fused.NORM_HANDOFF_W12=1;base2|" 170
grep -E "^(bf16|w12:auto) \S+ (decode|verify): (span|attention)" \
    "$OUT/timeline-variants-1024.log" | cut -c1-400
pack; archive_only
