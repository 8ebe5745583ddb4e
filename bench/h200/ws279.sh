#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), prepared in session 49, not yet run: run 279.
# kernels/w12_ws.py (Gluon): the 16-row W12 multiply with its decode in warps of its own (a
# 1-warp TMA loader, 4 or 8 decoding warps writing bf16 pairs to shared memory, one wgmma
# warpgroup scaling each group's sums), one program an SM. Run 278 (bench/h200/wsq278.sh): its
# tests passed (19) but it was slow, gate|up 55.1 us against w12_linear's 42.9, down 28.4
# against 26.9, level across stages, decoding warps and decoded stages (~21 GB/s a program).
# The suspect: unswizzled 256-byte plane rows, read 8 rows at a time by ldmatrix (8-way bank
# conflicts). Since then: the planes as 128-byte rows in TMA's 128-byte swizzle (64r4s/sw0
# keeps them unswizzled), the escapes before the blocks (64r4s/escafter: after), a persistent
# grid (64r4s/pers), bounds (nodec: no decode, nomma: no multiply, loads: neither, and the
# emptied escape table), SwiGLU and residual epilogues, and the verify forward's route through
# it (VERIFY, off). Here: the GPU tests (w12_ws's and the fused verify's; not a gate), then
# bench/w12_join.py --ws at Qwen3-8B's 16-row shapes beside today's tiles (plain, and j2esc4 as
# JOIN_INPUT runs gate|up and down) and at one row, Nsight Compute at gate|up (counters, SASS
# source view), and the W12 auto verify back to back with VERIFY on.
# Prediction: gate|up ~40 us with the swizzle (-27%), sw0 ~55; down ~24; q|k|v and o no better
# (96 and 64 row tiles: fewer programs than SMs); verify with VERIFY -50 to -150 us if so.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
# not a gate: a failing tile shows as an error in the bench's rows, the others still time
TESTS_K="w12_ws" TESTS_S=150 gpu_tests tests/test_w12_ws.py tests/test_kernels.py
grep -E "^FAILED|Error" "$OUT/gpu-tests.log" | head -8 | cut -c1-250
for model in qwen3-8b; do  # (Llama's shapes next, if it wins: the same kernel)
    timeout 240 python3 bench/w12_join.py --model $model --rows 16 --shapes qkv,o,gate_up,down \
        --variants plain,j2esc4 --ws --out "$OUT/ws-$model.json" >"$OUT/ws-$model.log" 2>&1
    echo "$model rc=$?"; grep -vE "^\{" "$OUT/ws-$model.log" | tail -5 | cut -c1-220
    pack
done
# one row (a decode step's multiplies): w12_ws spends the same decode and bytes on 1 row as on
# 16, so it competes there if it reaches the one-row tiles' ~3.9 TB/s (gate|up 38.97 us in run
# 270's graph)
timeout 120 python3 bench/w12_join.py --model qwen3-8b --rows 1 --shapes gate_up,down \
    --variants plain --ws --out "$OUT/ws-rows1.json" >"$OUT/ws-rows1.log" 2>&1
echo "rows 1 rc=$?"; grep -vE "^\{" "$OUT/ws-rows1.log" | tail -3 | cut -c1-220
pack
python3 - "$OUT"/ws-*.json <<'PY'
import json, sys
for path in sys.argv[1:]:
    d = json.load(open(path))
    for s in d["shapes"]:
        for t in s.get("ws", []):
            print(d["model"], d["rows"], s["shape"], t["tile"],
                  round(t["us"], 2) if "us" in t else t["error"])
        print(d["model"], s["shape"], "64r4s, escapes emptied", round(s.get("ws_noesc_us", 0), 2))
        if "ws_swiglu_us" in s:
            print(d["model"], s["shape"], "SwiGLU epilogue: w12_ws", round(s["ws_swiglu_us"], 2),
                  "w12_linear", round(s["w12_swiglu_us"], 2))
PY
pack
# Nsight Compute: counters of the W12 tile, w12_ws and bf16 at 16 rows, then w12_ws's SASS source
# view at gate|up (where its warps stall, partition by partition)
timeout 100 ncu --profile-from-start off --clock-control none --csv --page raw \
    --metrics "$(python3 bench/ncu_kernels.py metrics)" \
    python3 bench/ncu_kernels.py run --rows 16 --shapes gate_up --ws \
    >"$OUT/ncu-ws.csv" 2>"$OUT/ncu-ws.log"
echo "ncu rc=$?"; tail -2 "$OUT/ncu-ws.log"
python3 bench/ncu_kernels.py table "$OUT/ncu-ws.csv" >"$OUT/ncu-table.log" 2>&1
head -10 "$OUT/ncu-table.log" | cut -c1-220
pack
ncu_source wsgateup _w12_ws_kernel python3 bench/ncu_kernels.py run --shapes gate_up --rows 16 --ws
pack
# the verify forward with kernels/w12_ws.VERIFY (gate|up with SwiGLU and down on w12_ws, the
# norm and the SwiGLU in pair order), back to back against base and base2
variants "w12:auto" "base|;ws|--switch kernels.w12_ws.VERIFY=1;base2|" 120
pack; archive_only
