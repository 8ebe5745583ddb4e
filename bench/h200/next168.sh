#!/usr/bin/env bash
# Device call (~2 min + cold start; no carry), session 33: the drafter's 16-row k|v multiply
# (16 x 2048 x 4096: the rules' 32-row tile gives 64 programs on 132 SMs; 7.7 us a call against
# a 3.9 us bound, run 163) on 16-row tiles (bench/h200/tiles168/): timeline variants, 1k, bf16.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
T=bench/h200/tiles168
V="base|"
for t in kv16 kv16k512 kv32k512; do V="$V;$t|--tiles $T/$t.json"; done
V="$V;base2|"
TESTS_K='' ARMS="bf16" REPLAYS=15 TL_S=200 VARIANTS="$V" CONTEXT=1024 \
    bash "$(dirname "$0")/timeline.sh" | grep -E "^(bf16|w12\S*) .* (decode|verify|draft) +[0-9]"
unpack; pack; archive_only
