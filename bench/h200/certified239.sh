#!/usr/bin/env bash
# Device call (~5 min + cold start; no carry), session 45: run 239.
# Run 238's F16 tiles took the one-row certified head from 203 to 297-304 us in the decode
# graph, all tiles alike (f32k256: 496): either their loop is slow (the x side: squares and
# changes over 16 rows of which one is real, twice the weights' instructions by the SASS) or
# every row reached the exact pass (the exact head's ~280 us). Now a one-row launch sums its
# one row's squares (STAT_ROWS 1). bench/certified_speed.py separates the two: each tile at
# radii x1, x0 and x -1e30 (no exact pass), without a norm prologue (as the engine's handed
# one-row head), beside the FP8 and exact heads; then the decode timeline of the F16 tiles
# against base and base2, and paired pipelined AR of the fastest against base if its decode
# won by 20 us or more.
# Prediction: F16 x -1e30 ~150-165 us (as the FP8 head); if x1 stays ~300, the exact pass is
# the cause (a bound that drops nothing); STAT_ROWS brings the F16 decode head to ~170 us.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="f16 or int8_sums and not 5-True" TESTS_S=200 gpu_tests_gate tests/test_certified.py || exit 0
t=bench/h200/certified238
timeout 200 python3 bench/certified_speed.py --rows 1 --prologue none --iters 20 \
    --tiles "compiled,$t/f64k256.json,$t/f128k256.json,$t/f128k128.json" \
    --out "$OUT/certified-speed.json" >"$OUT/certified-speed.log" 2>&1
echo "certified_speed rc=$?"; grep -E "compact=1 defer=-1|head" "$OUT/certified-speed.log" \
    | grep -v "^{" | cut -c1-150
pack
V="base|"
for v in f64k256 f128k256 f128k128; do V+=";$v|--tiles $t/$v.json"; done
variants bf16 "$V;base2|" 300
grep -E "^bf16 \S+ decode: (span|argmax|attention)" "$OUT/timeline-variants-1024.log" | cut -c1-200
pick=$(python3 - "$OUT/timeline-variants-1024.json" <<'PY'
import json, sys
arms = json.load(open(sys.argv[1]))["arms"]
b2b = {k.split()[1]: v["decode"]["untraced_back_to_back_ms"] for k, v in arms.items()}
base = min(b2b["base"], b2b["base2"])
best = min((k for k in b2b if k.startswith("f")), key=b2b.get)
print(best if b2b[best] < base - 0.020 else "")
PY
)
echo "paired pick: '${pick}'"
if [ -n "$pick" ]; then
    P="--pipeline 1"
    engine 1024 pair 300 --taus 6.55 --paired-rounds 8 \
        --paired "base|$P;$pick|$P --tiles $t/$pick.json"
    grep "^paired" "$OUT/engine-pair.log" | cut -c1-300
fi
pack; archive_only
