#!/usr/bin/env bash
# Device call (~9 min + cold start; no carry), prepared in session 36, not run: the target's bf16
# multiplies with the weights as the MMA's left operand (kernels/linear.py W_LEFT: wgmma, where
# today's 16-row tiles compile to mma.sync; it won the FP8 drafter's o and k|v in run 180). In
# run 181's timeline the verify's o, down and q|k|v take 11.3 / 28.3 / 14.3 us a layer against
# bounds of 8.0 / 24.0 / 12.0 (~360 us a forward), the one-row o and q|k|v 9.9 / 13.8 against
# 8.0 / 12.0 (~130 us: 3% of AR). The sweep of LEFT_GRID at 16 rows and at one row (on 16-row
# tiles), cold weights (kernel_sweep --grid left, each shape's fastest tile into a tiles file),
# then the kernel timeline with each file, then paired end to end (pipelined, 8 rounds). If a
# file wins: its tiles into MEASURED_TILES and issue 3's row with token forcing.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
for rows in 16 1; do
    timeout 110 python3 bench/kernel_sweep.py --rows $rows --grid left \
        --tiles-out "$OUT/left$rows.json" --out "$OUT/sweep-left$rows.json" \
        >"$OUT/sweep-left$rows.log" 2>&1
    echo "sweep $rows rc=$?"; grep -E "^M=" "$OUT/sweep-left$rows.log" | cut -c1-240
    pack
done
A="base|;left16|--tiles $OUT/left16.json;left1|--tiles $OUT/left1.json"
variants bf16 "$A" 80
pack
engine 1024 paired 150 --paired-rounds 8 --paired "$A"
grep "^paired" "$OUT/engine-paired.log"
pack; archive_only
