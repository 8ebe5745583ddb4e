#!/usr/bin/env bash
# Device call (~9 min + cold start; no carry): run 288 (prepared in session 51, not yet run),
# after row287.sh, and only if kernels/w12_row.py passed its GPU tests there and beat
# w12_linear's one-row tiles at q|k|v and o (else this measures a loss).
# kernels/w12_row.ONE_ROW end to end: w12_linear's one-row W12 multiplies (plain input, with
# their SwiGLU or residual epilogue) on the TMA-fed kernel, its weights' first stages asked for
# before PDL's wait, the norm in its prologue. First the one-row forward back to back (timeline
# variants, W12 q|k|v, o, gate|up and down with the head bf16 and certified, and "auto": base,
# row, base2), then Qwen3-8B 1k paired over bf16 with token forcing: W12 q|k|v, o, gate|up and
# down (the head certified, as in the bf16 arm: a W12 head reads 1.5 bytes a weight where the
# certified head reads 1), the same with ONE_ROW, and the same again (the W12 arms' spread).
# Prediction (issue 7's AR): with q|k|v ~10.5 us, o ~7.5, down ~19.5, gate|up ~38 a layer and
# no norm launches before q|k|v and gate|up, the W12 decode is ~3.3 ms against bf16's ~4.0
# (run 270: auto 3.654): AR ~1.2x bf16.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="w12_row" TESTS_S=60 gpu_tests tests/test_kernels.py
variants "w12:qkv,o,gate_up,down;w12:auto" \
    "base|;row|--switch kernels.w12_row.ONE_ROW=1;base2|" 200
pack
timeout 330 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-base qkv,o,gate_up,down --w12-arms row_one,same --paired 5 \
    --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-1024.log" | cut -c1-300
pack; archive_only
