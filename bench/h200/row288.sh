#!/usr/bin/env bash
# Device call (~9 min + cold start; no carry): run 288 (prepared in session 51, not yet run),
# after row287.sh, and only if kernels/w12_row.py passed its GPU tests there and beat
# w12_linear's one-row tiles at q|k|v and o (else this measures a loss).
# kernels/w12_row.ONE_ROW end to end: w12_linear's one-row W12 multiplies (plain input, with
# their SwiGLU or residual epilogue) on the TMA-fed kernel, its weights' first stages asked for
# before PDL's wait. First the one-row forward back to back (timeline variants, W12 every
# matrix and "auto": base, row, base2), then Qwen3-8B 1k paired over bf16 with token forcing:
# W12 every matrix (q|k|v and o in W12 too), the same with ONE_ROW, and a control arm.
# Prediction (issue 7's AR): with q|k|v ~10.5 us, o ~7.5, down ~19.5, gate|up ~38 a layer the
# W12 "all" decode is ~3.3 ms against bf16's ~4.0 (run 270: auto 3.654): AR ~1.2x bf16.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="w12_row" TESTS_S=60 gpu_tests tests/test_kernels.py
variants "w12:all;w12:auto" "base|;row|--switch kernels.w12_row.ONE_ROW=1;base2|" 200
pack
timeout 330 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-arms row_one,same --paired 5 --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-1024.log" | cut -c1-300
pack; archive_only
