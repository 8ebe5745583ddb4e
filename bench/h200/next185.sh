#!/usr/bin/env bash
# Device call (~8 min + cold start; no carry), prepared in session 36, not run: the target's
# 16-row bf16 multiplies (verify) with the weights as the MMA's left operand (kernels/linear.py
# W_LEFT: wgmma, where today's 16-row tiles compile to mma.sync; it won the FP8 drafter's o and
# k|v in run 180). The verify's o, down and q|k|v lose ~360 us a forward to their bounds (run
# 181's timeline: 11.3 / 28.3 / 14.3 us a layer against 8.0 / 24.0 / 12.0). First the sweep of
# LEFT_GRID at 16 rows, cold weights (kernel_sweep --grid left, its fastest tile a shape into a
# tiles file), then the kernel timeline with and without that file (in the graphs: decode,
# verify and draft back to back), then paired end to end (pipelined, 8 rounds, token forcing
# by the row's own check: run `engine 1024 row` with the file if it wins).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
timeout 200 python3 bench/kernel_sweep.py --rows 16 --grid left --tiles-out "$OUT/left16.json" \
    --out "$OUT/sweep-left.json" >"$OUT/sweep-left.log" 2>&1
echo "sweep rc=$?"; grep -E "^M=16" "$OUT/sweep-left.log" | cut -c1-240
pack
T="--tiles $OUT/left16.json"
variants bf16 "base|;left|$T" 70
pack
engine 1024 paired 130 --paired-rounds 8 --paired "base|;left|$T"
grep "^paired" "$OUT/engine-paired.log"
pack; archive_only
