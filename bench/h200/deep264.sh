#!/usr/bin/env bash
# Device call (~2 min + cold start; no carry), session 48: run 264. Run 263: the 16-row W12
# tiles are not limited by their decode (NO_DECODE level: gate|up 44.99 against 45.54 us) and
# bf16's kernel reads the same bytes 11% (gate|up) to 26% (down) faster. Two suspects: the load
# ring (no sweep went past 4 stages; x takes a third of the W12 gate|up tile's shared memory)
# and the escapes (their dependent loads at the first step and after the loop, where every
# program of a one-wave grid waits at once; an emptied table ran 3-9% faster in run 126).
# --deep: gate|up and down tiles of 3-8 stages; noesc: the escape table emptied (a bound).
# Prediction: noesc gate|up ~42 us, down ~27; a deeper ring no better than 3 stages.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
timeout 240 python3 bench/w12_join.py --rows 16 --deep --shapes gate_up,down \
    --variants plain,noesc,j2 --out "$OUT/deep-16.json" >"$OUT/deep-16.log" 2>&1
echo "deep rc=$?"; grep -vE "^\{" "$OUT/deep-16.log" | tail -3 | cut -c1-200
python3 - "$OUT/deep-16.json" <<'PY'
import json, sys
for s in json.load(open(sys.argv[1]))["shapes"]:
    for t in s["tiles"]:
        print(s["shape"], t["tile"], t["variant"], round(t.get("us", 0), 2), t.get("error", "")[:60])
PY
pack; archive_only
