#!/usr/bin/env bash
# Device call (~5 min + cold start; no carry): run 255. Run 253's W12 gate|up + down arm, its
# bf16 LM head certified, decoded at 4.232 ms a token against 3.762 with a W12 head: a W12 down
# hands no norm on, and the certified head then normed its row in every program's prologue at
# K 4096 (the plain head takes an rmsnorm launch first there, PROLOGUE_MAX_K). Now it norms as
# the plain head does. GPU gate: the certified and W12 generation tests; then run 253's paired
# arms again (6 rounds over bf16, with a control; forcing on every arm's single run).
# Prediction: gate_up,down decode ~3.71 ms (the certified head ~165 us against W12's ~215 +
# argmax 5): AR ~1.09x, spec@6.55 ~1.04x; "auto" as in run 253 (1.074x / 1.011x).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
TESTS_K="handed_no_norm or head_generation or w12_models or some_matrices" TESTS_S=240 \
    gpu_tests_gate tests/test_certified.py tests/test_w12.py || exit 0
timeout 420 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-matrices 'auto;gate_up,down' --paired 6 --out "$OUT/e2e-1024.json" \
    >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-1024.log" | cut -c1-300
pack; archive_only
