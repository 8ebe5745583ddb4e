#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), session 34: W12 "auto"'s one-row down and gate|up
# tiles in the graph (bench/h200/tiles172/; never measured in the graph; the one-row loop sweeps
# of runs 83 and 88 had no K split): down split over 2-4 programs (a split-sum launch after it),
# gate|up 4 load stages or 2 warps. Timeline variants at 1k; then, where a down tile and/or a
# gate|up tile beats the base's decode by >= 0.4% back to back with its verify no slower, W12
# against bf16 end to end with them (w12_speed, 5 paired rounds; run 160 without: AR 1.088x).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
T=bench/h200/tiles172
V="base|"
for t in ds2 ds3 ds4 ds2n4 gs4 gw2; do V="$V;$t|--tiles $T/$t.json"; done
variants "w12:auto" "$V;base2|" 260 | tee "$OUT/variants.txt"
pack
python3 - "$OUT/variants.txt" "$T" "$OUT/tiles172-best.json" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 5 and f[2] in ("decode", "verify"):
        rows.setdefault(f[1], {})[f[2]] = float(f[4])  # the b2b column
base = {k: (rows["base"][k] + rows["base2"][k]) / 2 for k in ("decode", "verify")}
tiles = []
for group in (("ds2", "ds3", "ds4", "ds2n4"), ("gs4", "gw2")):
    ok = [(rows[v]["decode"], v) for v in group if v in rows
          and rows[v]["decode"] <= 0.996 * base["decode"] and rows[v]["verify"] <= base["verify"] * 1.001]
    if ok:
        best = min(ok)[1]
        print("winner", best, rows[best], "base", base)
        tiles += json.load(open(f"{sys.argv[2]}/{best}.json"))["tiles"]
if tiles:
    json.dump({"tiles": tiles}, open(sys.argv[3], "w"))
else:
    print("no winner; base", base)
PY
if [ -f "$OUT/tiles172-best.json" ]; then
    timeout 300 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
        --w12-matrices auto --paired 5 --tiles "$OUT/tiles172-best.json" \
        --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
    echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-1024.log" | cut -c1-300
fi
pack; archive_only
