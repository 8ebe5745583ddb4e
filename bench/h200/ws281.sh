#!/usr/bin/env bash
# Device call (~4 min + cold start; no carry): run 281. kernels/w12_ws.py after runs 279-280, where
# every tile was level (gate|up 52.8-61 us against w12_linear's 42.6), its loads-only bound
# (44-45) over w12_linear, and neither the bases issued 3 blocks ahead nor the escapes spread
# over the loop (wrong on the GPU: run 280's tests, 18 failed; taken out) helped. The SASS then
# showed why: ptxas turned the next block's group bases into scales at the top of the loop,
# before its wgmma, so every block waited a DRAM round trip (~1 us: 46 blocks an SM, 44 us),
# whatever the distance (register rotation waits too). Now a unit's bases come in one load
# before its blocks (BASE_SLAB; each block's two picked from registers, no load in the loop)
# and each row's first 4 escapes in two rounds of independent loads (ESC_BATCH). Here: the GPU
# tests (not a gate), bench/w12_join.py --ws at Qwen3-8B's 16-row gate|up and down beside
# today's j2esc4 tiles (64r4s/run279: run 279's kernel) and at one row, and, if w12_ws then
# wins at both 16-row shapes, the W12 auto verify back to back with VERIFY on.
# Prediction: the loads bound 44.0 -> ~39.5 (bf16 over 3/4 of K: 39.5); gate|up 55 -> ~42,
# down 30.5 -> ~25.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="w12_ws" TESTS_S=150 gpu_tests tests/test_w12_ws.py tests/test_kernels.py
grep -E "^FAILED|Error" "$OUT/gpu-tests.log" | head -8 | cut -c1-250
timeout 200 python3 bench/w12_join.py --model qwen3-8b --rows 16 --shapes gate_up,down \
    --variants j2esc4 --ws --out "$OUT/ws-qwen3-8b.json" >"$OUT/ws-qwen3-8b.log" 2>&1
echo "16 rows rc=$?"; grep -vE "^\{" "$OUT/ws-qwen3-8b.log" | tail -3 | cut -c1-220
pack
timeout 120 python3 bench/w12_join.py --model qwen3-8b --rows 1 --shapes gate_up,down \
    --variants plain --ws --out "$OUT/ws-rows1.json" >"$OUT/ws-rows1.log" 2>&1
echo "rows 1 rc=$?"
pack
python3 - "$OUT"/ws-*.json <<'PY' | tee "$OUT/ws-table.log"
import json, sys
wins = []
for path in sys.argv[1:]:
    d = json.load(open(path))
    for s in d["shapes"]:
        best = min((t for t in s["tiles"] if "us" in t), key=lambda t: t["us"])
        print(d["rows"], s["shape"], "w12_linear", best["tile"], best["variant"],
              round(best["us"], 2), "bf16", round(s["bf16_us"], 2), "bf16 3/4 K",
              round(s["bf16_3q_us"], 2))
        for t in s.get("ws", []):
            print(d["rows"], s["shape"], t["tile"], round(t["us"], 2) if "us" in t else t["error"])
        print(d["rows"], s["shape"], "64r4s, escapes emptied", round(s.get("ws_noesc_us", 0), 2))
        if "ws_swiglu_us" in s:
            print(d["rows"], s["shape"], "SwiGLU epilogue: w12_ws", round(s["ws_swiglu_us"], 2),
                  "w12_linear", round(s["w12_swiglu_us"], 2))
        if d["rows"] == 16:
            wins.append(s.get("best_ws", {}).get("us", 1e9) < best["us"])
print("ws wins at 16 rows:", wins)
open("/tmp/ws_wins", "w").write("1" if wins and all(wins) else "0")
PY
pack
if [ "$(cat /tmp/ws_wins)" = 1 ]; then
    variants "w12:auto" "base|;ws|--switch kernels.w12_ws.VERIFY=1;base2|" 120
fi
pack; archive_only
