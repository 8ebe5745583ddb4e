#!/usr/bin/env bash
# Device call (~10.5 min + cold start; no carry): run 318, issue 7 with today's defaults (w12_tc's
# verify route and swizzled planes on since run 314) on the card it lands on (the targets are
# an H200's; runs 314-317 came on H100s).
# 1. The decode and verify graphs, W12 every matrix, back to back: base (the defaults), lin
#    (--switch kernels.w12_tc.VERIFY=0: the verify on w12_linear's tiles), base2. w12_tc now
#    marks the kernel timeline (session 61), so the verify's table gives each 16-row shape's
#    time against its bound for the first time inside the graph.
# 2. (runs last; E2E_S=0 skips it) End to end at 1k, paired over bf16 for PAIRED rounds (default 5) with the control, forcing
#    on every arm: w12 (defaults), linear_verify, same (run 317's arms).
# Prediction (H200): verify base ~2% under lin (H100: 2.9%); AR ~1.11x as run 299; spec
# 1.02-1.04x for w12, ~1.00x for linear_verify. In the verify table, q|k|v and o furthest from
# their bounds (H100 standalone: 71% and 59%), gate|up nearest (89%).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
# 0. w12_tc's GPU tests (~60 s): its new traced case and Llama-3.1-8B's down shape (K 14336)
TESTS_K="cuda" TESTS_S=120 gpu_tests tests/test_w12_tc.py
grep -E "FAILED" "$OUT/gpu-tests.log" | head -8 | cut -c1-200
MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" \
    "base|;lin|--switch kernels.w12_tc.VERIFY=0;base2|" 120
back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
grep -E "^  (w12_tc|w12_linear|w12_row) " "$OUT/timeline-variants-1024-qwen3-8b.log" | head -24 \
    | cut -c1-120
pack
# 3. (before the end-to-end step) o and down at 16 rows standalone, w12_tc's K splits (split_plan's: o 2,
#    down 4) and its bounds (no decode; loads only; the escapes emptied), against w12_linear's
#    j2esc4 and bf16. Standalone, time ~ 10.9 us + 0.45 us a block of a unit (run 314, H100:
#    o's 8 blocks 14.49 us, q|k|v's 16 18.06): what the fixed part is (the escapes' chain of
#    loads in the meta warp, the fill, the split sum) decides the next change.
only=64r4s/sw,64r4s/k2/sw,64r4s/k4/sw,64r4s/k6/sw,64r4s/k8/sw,64r4s/sw/nodec,64r4s/sw/loads,64r4s/copies
timeout 100 python3 bench/w12_join.py --model qwen3-8b --rows 16 --shapes o,down \
    --variants j2esc4 --tc --only "$only" --out "$OUT/tc-qwen3-8b.json" >"$OUT/tc-qwen3-8b.log" 2>&1
echo "tc 16 rows rc=$?"
python3 - "$OUT/tc-qwen3-8b.json" <<'PY'
import json, sys
for s in json.load(open(sys.argv[1]))["shapes"]:
    tc = " ".join(f"{t['tile']} {t['us']:.2f}" for t in s["tc"] if "us" in t)
    noesc = round(s.get("tc_noesc_us", 0), 2)  # the default tile (swizzled), escapes emptied
    print(s["shape"], "bf16", round(s["bf16_us"], 2), "j2esc4", round(s["best_j2esc4"]["us"], 2),
          "| tc", tc, "| tc escapes emptied", noesc)
PY
pack
if [ "${E2E_S:-330}" -gt 0 ]; then
    w12_e2e e2e-1024 qwen3-8b linear_verify,same "${PAIRED:-5}" "${E2E_S:-330}"
    pack
fi
archive_only
