#!/usr/bin/env bash
# Device call (~8 min, no carry): one-row multiplies whose loop pipelines its loads through
# shared memory (LOOP_STAGES, kernels/linear.py and kernels/w12_linear.py). (1) their GPU tests;
# (2) the one-row W12 sweep of element-wise tiles with LOOP_STAGES (w12_speed --grid loop) and
# (3) the bf16 one (kernel_sweep --grid loop); (4) end to end at 1k: bf16, W12, W12 with (2)'s
# winners and bf16 with (3)'s, then PAIRED interleaved rounds of the four (95% intervals).
set -u
export PYTHONPATH=$PWD/src:$PWD
timeout "${TESTS_S:-90}" python3 -m pytest -q -p no:cacheprovider tests/test_w12_kernels.py \
    tests/test_kernels.py -k "loop" >"$OUT/gpu-tests.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/gpu-tests.log"
timeout "${W12_S:-120}" python3 bench/w12_speed.py --rows 1 --grid loop --e2e 0 \
    --out "$OUT/w12-loop.json" >"$OUT/w12-loop.log" 2>&1
echo "w12 sweep rc=$?"; grep -E "^ +1 " "$OUT/w12-loop.log" | cut -c1-220
timeout "${BF16_S:-100}" python3 bench/kernel_sweep.py --rows 1 --grid loop \
    --out "$OUT/bf16-loop.json" >"$OUT/bf16-loop.log" 2>&1
echo "bf16 sweep rc=$?"; grep "^M=" "$OUT/bf16-loop.log" | cut -c1-220
timeout "${E2E_S:-300}" python3 bench/w12_speed.py --rows '' --e2e 1024 --paired "${PAIRED:-6}" \
    --tiles-from "$OUT/w12-loop.json,$OUT/bf16-loop.json" --out "$OUT/e2e.json" \
    >"$OUT/e2e.log" 2>&1
echo "e2e rc=$?"; grep -E "^e2e|^swept" "$OUT/e2e.log" | cut -c1-400
