#!/usr/bin/env bash
# Device call (~2 min + cold start; no carry): run 293 (prepared in session 52, for a short
# window): the first GPU check of the prototypes the CPU emulator ran right. The wgmma probe's
# check, then one call each of w12_row_linear, bf16_row_linear and w12_tc_linear (1 and 16
# rows, pair order) at Qwen3-8B's o shape against the references, each within 60 s (a hang ends
# it). No timing: row287.sh and tc291.sh time them.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
timeout 45 python3 bench/wgmma_ra_probe.py --check >"$OUT/wgmma-probe.log" 2>&1
echo "wgmma probe rc=$?"; tail -1 "$OUT/wgmma-probe.log" | cut -c1-300
timeout 90 python3 - >"$OUT/smoke.log" 2>&1 <<'PY'
import torch
from specpilot.formats import w12
from specpilot.kernels import w12_row, w12_tc
from specpilot.kernels.w12_linear import w12_linear_reference
w = (torch.randn(4096, 4096, device="cuda") * 0.02).to(torch.bfloat16)
packed = w12.encode(w)
for m in (1, 16):
    x = torch.randn(m, 4096, device="cuda").to(torch.bfloat16)
    ref = w12_linear_reference(x, packed)
    runs = [("w12_tc", lambda: w12_tc.w12_tc_linear(x, packed))]
    if m == 1:
        runs = [("w12_row", lambda: w12_row.w12_row_linear(x, packed)),
                ("bf16_row", lambda: w12_row.bf16_row_linear(x, w))] + runs
    for name, run in runs:
        y = run()
        torch.cuda.synchronize()
        err = (y.float() - ref.float()).abs().max().item() / ref.float().abs().max().item()
        print(name, m, "relative error", err, "ok" if err < 2**-6 else "WRONG", flush=True)
PY
echo "smoke rc=$?"; cat "$OUT/smoke.log" | tail -6
pack; archive_only
