#!/usr/bin/env bash
# Device calls (~5.5 min + cold start, then PART=llama ~3.5 min warm; no carry): run 333, issue
# 7's own numbers, best on an H200 (the last H200 ones: run 299, AR 1.112x, spec 1.004x).
# 1. w12_speed's one-row table (issue 7's GEMV target, >= 85% of the copy bandwidth): the
#    engine's one-row kernels w12_row and bf16_row at each Qwen3-8B shape, launched alone (each
#    call after the one before has drained: run 331, H100, q|k|v 69%, o 62%, gate|up 90%, down
#    85%, a layer by its bytes ~82%) and chained as the decode graph launches them (PDL
#    "chain" in a one-row forward; run 332's decode graph, exit to exit against the bounds: ~92%
#    a layer); a layer's four matrices weighed by their bytes.
# 2. On an H200 only: end to end at 1k, Qwen3-8B, 3 paired rounds over bf16 with the control,
#    token forcing on every arm. PART=llama: the same at Llama-3.1-8B's shape.
# Prediction: chained within 2 points of the graph's exit-to-exit shares (H100: q|k|v ~82%, o
# ~87%, gate|up ~94%, down ~97%; a layer ~92%); alone as in run 331. H200: AR 1.17-1.21x, spec
# 1.08-1.13x (H100 run 331: 1.193x / 1.145x).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
if [ "${PART:-qwen}" = llama ]; then
    w12_e2e e2e-llama llama3.1-8b "" 3 260
else
    timeout 170 python3 bench/w12_speed.py --rows 1 --no-sweep --e2e 0 --out "$OUT/gemv.json" \
        >"$OUT/gemv.log" 2>&1
    echo "gemv rc=$?"; grep -E "w12_row|weighed|Error" "$OUT/gemv.log" | cut -c1-330
    pack
    if grep -q H200 "$OUT/gpu.log"; then w12_e2e e2e-1024 qwen3-8b "" 3 260; fi
fi
pack
archive_only
