#!/usr/bin/env bash
# Device call (~4 min + cold start; no carry; the session's last ~360 s): run 327, issue 7.
# On an H200: issue 7's own numbers with today's defaults (SPLIT_SUM_HAND on since run 325):
# w12_speed's one-row table (the engine's one-row kernel against the copy bandwidth), then end
# to end at 1k, Qwen3-8B, 3 paired rounds over bf16 with the control and before_325, token
# forcing on every arm (the last H200 numbers are run 299's: AR 1.112x, spec 1.004x).
# On an H100: Qwen3-8B's W12 verify graph, back to back, traced: base, pre2 / pre3
# (w12_tc.PRE_STAGES: the stages a multiply asks for before its wait; with the hand-off, only
# the split sum runs between o or the down and the next multiply, and its reads queue behind
# those stages: 1.7 -> 5.4 us exit to exit in runs 325-326; run 320 found PRE 2 losing 0.05 ms
# with a norm kernel there), base2.
# Prediction: H200 AR 1.14-1.17x, spec 1.06-1.10x (the H100's 1.187x / 1.126x, less on the
# H200, where the multiplies' share of a step is smaller); H100 pre2 / pre3 within +-0.03 ms
# of base (the split sum's gain eaten by the multiply's later start).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
if grep -q H200 "$OUT/gpu.log"; then
    timeout 90 python3 bench/w12_speed.py --rows 1 --no-sweep --e2e 0 --out "$OUT/gemv.json" \
        >"$OUT/gemv.log" 2>&1
    echo "gemv rc=$?"; grep -E "w12_row|Error" "$OUT/gemv.log" | cut -c1-200
    pack
    w12_e2e e2e-1024 qwen3-8b before_325 3 200
else
    MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" \
        "base|;pre2|$(sw w12_tc.PRE_STAGES=2);pre3|$(sw w12_tc.PRE_STAGES=3);base2|" 150
    back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
    MODEL=qwen3-8b spacing qwen3 13
fi
pack
archive_only
