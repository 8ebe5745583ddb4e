#!/usr/bin/env bash
# Device call (~1 min + cold start; no carry), session 49: run 277.
# The 16-row W12 down against bf16's pattern on the same bytes: run 276, JOIN 2 + esc2 26.44 us
# against bf16 over 3/4 of K 21.80. bf16's down tile is one wave of 128 programs, no K split, 4
# stages of 256 columns (~64 kB in flight an SM); W12's is K split 4 (512 programs) with a sum
# launch, and the deep rings of run 264 ran several waves. bench/w12_join.py --deep at Qwen3-8B's
# down, now with one-wave grids: 64 rows on 4 warps with K split 2, 32 rows on 2 warps without
# one, 3-8 stages; variants noesc, j2esc2, j2esc4.
# Prediction: 64r4w6s/k2 j2esc4 ~24 us (-2.5 against 26.44).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
timeout 150 python3 bench/w12_join.py --model qwen3-8b --rows 16 --shapes down --deep \
    --variants noesc,j2esc2,j2esc4 --out "$OUT/wave-down.json" >"$OUT/wave-down.log" 2>&1
echo "rc=$?"; grep -vE "^\{" "$OUT/wave-down.log" | tail -2 | cut -c1-220
python3 - "$OUT/wave-down.json" <<'PY'
import json, sys
for s in json.load(open(sys.argv[1]))["shapes"]:
    for t in sorted(s["tiles"], key=lambda t: t.get("us", 1e9))[:14]:
        print(f"{t['variant']:<8} {t['tile']:<12} {t.get('us', t.get('error', ''))}")
PY
pack; archive_only
