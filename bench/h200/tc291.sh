#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry): run 291 (prepared in session 51, not yet run),
# after row287.sh's `bench/wgmma_ra_probe.py --check` came out right.
# kernels/w12_tc.py, the 1-16-row W12 multiply whose warpgroup decodes each block's words
# straight into wgmma's register operand (bench/wgmma_ra_probe.py: 2.95 SASS instructions a
# weight, no shared-memory round trip; since session 52 its input in w12_ws's pair order, which
# the engine's rmsnorm and SwiGLU epilogues write), fed by w12_row's kind of TMA ring with a
# meta warp for the scale words and escapes: a 60 s smoke, its GPU tests, then
# bench/w12_join.py --tc at Qwen3-8B's 16-row shapes beside w12_linear's JOIN 2 + ESC_ROWS 4
# tiles (the verify's) and bf16. On the CPU (session 52) every test and every TC_TILES tile ran
# right on kernels/emulate.py. If it wins: tc292.sh (the verify forward end to end).
# Why: issue 7's spec target needs the 16-row W12 multiplies near their 12-bit floor (gate|up
# ~37 us, down ~18.5, q|k|v ~9.3, o ~6.2 at 4.07 TB/s) where w12_linear takes 42.1 / 26.7 and
# w12_ws 48.6-52 / 27.9 (runs 276-281).
# Prediction: gate|up ~40, down ~21, q|k|v ~11, o ~8 (the loads as in w12_row's copies bound,
# the decode at ~25% of the SMs' issue rate).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
timeout 60 python3 - >"$OUT/smoke.log" 2>&1 <<'PY'
import torch
from specpilot.formats import w12
from specpilot.kernels import w12_tc
from specpilot.kernels.w12_linear import w12_linear_reference
w = (torch.randn(4096, 4096, device="cuda") * 0.02).to(torch.bfloat16)
x = torch.randn(16, 4096, device="cuda").to(torch.bfloat16)
packed = w12.encode(w)
y, ref = w12_tc.w12_tc_linear(x, packed), w12_linear_reference(x, packed)
torch.cuda.synchronize()
err = (y.float() - ref.float()).abs().max().item() / ref.float().abs().max().item()
print("w12_tc relative error", err, "ok" if err < 2**-6 else "WRONG")
PY
rc=$?; echo "smoke rc=$rc"; tail -3 "$OUT/smoke.log"
if [ $rc -ne 0 ]; then pack; archive_only; exit 0; fi
TESTS_K="w12_tc" TESTS_S=120 gpu_tests tests/test_w12_tc.py
grep -E "^FAILED|Error" "$OUT/gpu-tests.log" | head -8 | cut -c1-200
timeout 240 python3 bench/w12_join.py --model qwen3-8b --rows 16 --variants j2esc4 --tc \
    --out "$OUT/tc-qwen3-8b.json" >"$OUT/tc-qwen3-8b.log" 2>&1
echo "qwen3 rc=$?"
tc_table "$OUT"/tc-*.json
pack; archive_only
