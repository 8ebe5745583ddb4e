#!/usr/bin/env bash
# Device call (~3 min + cold start; no carry): run 229. Timeline variants, bf16, Qwen3-8B 1k: the
# 16-row (verify) down and o on tiles not yet tried in the graph (bench/h200/verify229/*.json:
# 8 warps, 6 load stages, 512-column steps 4 deep, K split 2 or 3). Run 219's verify: down 28.2
# us a layer against the one-row down's 24.4 and its read floor's ~24.3 (run 227), o 11.4
# against 9.9: 137 + 54 us a verify, ~3.7% of a speculative step (issue 3's spec@6.55 is 1.4%
# short of 1,300).
# Prediction: most level or worse (run 163 swept BLOCK_N 16, 128- and 512-column steps); a K
# split may win 1-2 us a layer at the down (256 programs instead of 128 on 132 SMs).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
t=bench/h200/verify229
V="base|"
for v in d8w ds6 dk5s4 dsk2 dsk3 o8w os6 osk2; do V+=";$v|--tiles $t/$v.json"; done
variants "bf16" "$V;base2|" 420
python3 - "$OUT/timeline-variants-1024.json" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
for arm, v in d["arms"].items():
    s = v["verify"]["shapes"]
    each = {k.split()[1]: round(x["run_us_each"], 2) for k, x in s.items() if k.startswith("linear 16")}
    print(arm, "verify b2b", round(v["verify"]["untraced_back_to_back_ms"], 3), each)
P
pack; archive_only
