#!/usr/bin/env bash
# Device call (~9.5 min + cold start; no carry): run 287 (prepared in session 51, not yet run).
# kernels/w12_row.py, the one-row W12 multiply fed by a TMA ring (one program an SM, a loader
# warp, a warp for the group scales and escapes, 8 warps that decode and multiply), first on a
# GPU: its GPU tests (not a gate: each tile is also checked by the bench), then
# bench/w12_join.py --row at Qwen3-8B's and Llama-3.1-8B's one-row shapes beside w12_linear's
# one-row tiles (plain and ESC_ROWS 4), bf16 and bf16 over 3/4 of K (the 12-bit bytes); and the
# same ring on the bf16 weights (bf16_row_linear) beside skinny_linear's one-row tiles (issue 3:
# its one-row q|k|v and o lose 67 and 75 us a decode to their bounds, run 190).
# Why: issue 7's AR (W12 auto 1.07-1.09x, target 1.25x) needs q|k|v and o in W12 faster than
# bf16 at one row; w12_linear's one-row tiles wait a latency a block (runs 220-225): Qwen3 q|k|v
# 14.3 us, o 10.9, down ~23, gate|up 39.4, against 12-bit floors at 4.07 TB/s of ~9.3, 6.2,
# 18.5 and 37.1 (bench/tma_probe.py, runs 283-284: TMA from one program an SM with ~64 kB in
# flight).
# Prediction: copies bound (16r8w6s2b/copies) within 10% of those floors (q|k|v ~10.5, o ~7.5,
# down ~19.5, gate|up ~38); the checked tiles within 10% of the copies where the 8 warps'
# ~5.4 instructions a weight keep up (SASS: 172 a stage of 2 blocks, 32 weights a thread);
# then q|k|v and o in W12 beat bf16's one-row times (~12.5 and ~9.9). bf16 weights: o ~8.5 us
# against ~9.9, q|k|v ~12.6 against ~12.5-13 (floors 8.2 and 12.4 at 4.07 TB/s).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
# (bench/wgmma_ra_probe.py: W12 pairs decoded straight into wgmma's register operand, the
# groundwork of a 16-row kernel on w12_row's ring; its products against the decoded weights')
timeout 45 python3 bench/wgmma_ra_probe.py --check >"$OUT/wgmma-probe.log" 2>&1
echo "wgmma probe rc=$?"; tail -1 "$OUT/wgmma-probe.log" | cut -c1-400
# first one call of each kernel within 60 s: a kernel that hangs (a barrier's phase wrong) or
# fails here ends the call early, its device time kept for ws286.sh
timeout 60 python3 - >"$OUT/smoke.log" 2>&1 <<'PY'
import torch
from specpilot.formats import w12
from specpilot.kernels import w12_row
from specpilot.kernels.w12_linear import w12_linear_reference
w = (torch.randn(4096, 4096, device="cuda") * 0.02).to(torch.bfloat16)
x = torch.randn(1, 4096, device="cuda").to(torch.bfloat16)
packed = w12.encode(w)
for name, y, ref in (("w12", w12_row.w12_row_linear(x, packed), w12_linear_reference(x, packed)),
                     ("bf16", w12_row.bf16_row_linear(x, w), x.float() @ w.float().T)):
    torch.cuda.synchronize()
    err = (y.float() - ref.float()).abs().max().item() / ref.float().abs().max().item()
    print(name, "relative error", err, "ok" if err < 2**-6 else "WRONG")
PY
rc=$?; echo "smoke rc=$rc"; cat "$OUT/smoke.log" | tail -3
if [ $rc -ne 0 ]; then pack; archive_only; exit 0; fi
TESTS_K="w12_row or bf16_row" TESTS_S=100 gpu_tests tests/test_w12_row.py
grep -E "^FAILED|Error" "$OUT/gpu-tests.log" | head -8 | cut -c1-200
timeout 240 python3 bench/w12_join.py --model qwen3-8b --rows 1 --variants plain,esc4 --row \
    --out "$OUT/row-qwen3-8b.json" >"$OUT/row-qwen3-8b.log" 2>&1
echo "qwen3 rc=$?"
pack
# (session 52) kernels/w12_tc.py at one row too: its decode is ~3 SASS instructions a weight
# against w12_row's ~5.4, its wgmma's 15 padded tokens nearly free; its own call and JSON, so
# that a hang there (the emulator ran every TC_TILES tile right) costs only these 120 s
timeout 120 python3 bench/w12_join.py --model qwen3-8b --rows 1 --variants plain --tc \
    --out "$OUT/tc1-qwen3-8b.json" >"$OUT/tc1-qwen3-8b.log" 2>&1
echo "tc one row rc=$?"
tc_table "$OUT"/tc1-*.json
pack
if [ "${LLAMA:-0}" = 1 ]; then  # (LLAMA=1: Llama-3.1-8B's shapes too, ~2.5 min more)
    timeout 150 python3 bench/w12_join.py --model llama3.1-8b --rows 1 --variants plain,esc4 \
        --row --out "$OUT/row-llama3.1-8b.json" >"$OUT/row-llama3.1-8b.log" 2>&1
    echo "llama rc=$?"
fi
row_table "$OUT"/row-*.json
pack; archive_only
