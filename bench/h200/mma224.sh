#!/usr/bin/env bash
# Device call (~4 min + cold start; no carry), prepared in session 43 after run 223: the mma
# kernel as committed (run 223's register loads, the cp.async path deleted): (1) its GPU tests;
# (2) bench/w12_mma_speed.py, default tiles, one and four rows; (3) timeline variants, W12
# "all": base / mma (w12_linear.MMA_ROWS=1) / mma with launch.EVEN_SHARED=0 (no shared-memory
# padding of one-row multiplies launched early): whether run 220's in-graph loss (down 35.9 us
# against 24.2 standalone) is the padding's or PDL's.
# Prediction: tests pass; the table as run 223's REGS rows (+-3%); mma in the graph still slower
# than base, EVEN_SHARED=0 recovering part of it.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="mma" TESTS_S=200 gpu_tests tests/test_w12_mma.py
if ! tail -1 "$OUT/gpu-tests.log" | grep -q "passed" || tail -1 "$OUT/gpu-tests.log" | grep -q "failed"; then
    grep -E "Error|assert|FAILED" "$OUT/gpu-tests.log" | head -20 | cut -c1-250
    pack; archive_only; exit 0
fi
timeout 120 python3 bench/w12_mma_speed.py --rows 1,4 --no-sweep --out "$OUT/mma-speed.json" \
    >"$OUT/mma-speed.log" 2>&1
echo "mma speed rc=$?"; grep -v "^{" "$OUT/mma-speed.log" | tail -9 | cut -c1-200
pack
S="--switch kernels.w12_linear.MMA_ROWS=1"
variants "w12:all" "base|;mma|$S;mma_even0|$S --switch kernels.launch.EVEN_SHARED=0" 200
grep -E "^w12:all (base|mma)\S* decode:.*each" "$OUT/timeline-variants-1024.log" | cut -c1-330
pack; archive_only
