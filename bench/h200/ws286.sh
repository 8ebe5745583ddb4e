#!/usr/bin/env bash
# Device call (~4 min + cold start; no carry): run 286 (prepared in session 50, not yet run).
# Run 285: kernels/w12_ws.py's loader alone (its copies, no consumer waited on) took 39.6 us at
# Qwen3-8B's 16-row gate|up (persistent 38.4), 23.4 at down, against 44.3 / 26.0 with its
# stages freed only when both the decoders and the multiplier were done with them: the
# hand-off, not the copies, held the loads. Now the input has a ring of its own (X_STAGES,
# STAGES + 2), freed by the multiplier, and the planes' stage is freed by the decoders alone
# (64r4s/early: once read into registers, before the decode; 64r4s/x8: 8 input stages), and
# the multiplier can take blocks two at a time, the second's wgmma issued before the first's
# are waited for (64r4s/lag: MMA_LAG), or (64r4s/restore: RESTORE) the decoders raise each
# weight's exponent by its group's 2b so that the multiplier sums every block of exact weights
# into one accumulator, no scaling, each block's wgmma waited for after the next block's issue.
# Here: bench/w12_join.py --ws at gate|up and down (its tiles checked against the reference,
# the bounds not), then the GPU tests (not a gate).
# Prediction: loads bound 44.3 -> ~40; gate|up 52 -> ~46 (persistent 47.5 -> ~43); down ~27.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
timeout 150 python3 bench/w12_join.py --model qwen3-8b --rows 16 --shapes gate_up,down \
    --variants j2esc4 --ws --out "$OUT/ws-qwen3-8b.json" >"$OUT/ws-qwen3-8b.log" 2>&1
echo "16 rows rc=$?"
ws_table "$OUT"/ws-*.json
pack
TESTS_K="w12_ws" TESTS_S=150 gpu_tests tests/test_w12_ws.py tests/test_kernels.py
grep -E "^FAILED" "$OUT/gpu-tests.log" | head -8 | cut -c1-200
pack; archive_only
