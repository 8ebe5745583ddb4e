#!/usr/bin/env bash
# Device call (~3 min + cold start; no carry), session 33: Llama-3.1-8B shape (issue 3's Llama
# AR: pipelined 246.7 tok/s in run 159, target 250), in-graph tile variants at 1k, bf16
# (bench/h200/tiles166/): one-row gate|up on the tensor-core tile alone, one-row down and LM
# head element-wise variants, and Qwen3's swept 16-row tiles at Llama's gate|up and LM head.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
T=bench/h200/tiles166
V="base|"
for t in gu1dot dn1ls4 dn1k1024 dn1n16 lm1ls3 gu16q lm16q dn16k512; do V="$V;$t|--tiles $T/$t.json"; done
V="$V;base2|"
TESTS_K='' MODEL=llama3.1-8b ARMS="bf16" REPLAYS=15 TL_S=300 VARIANTS="$V" CONTEXT=1024 \
    bash "$(dirname "$0")/timeline.sh" | grep -E "^(bf16|w12\S*) .* (decode|verify|draft) +[0-9]"
unpack; pack; archive_only
