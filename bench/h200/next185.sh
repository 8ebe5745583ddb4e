#!/usr/bin/env bash
# Device call (~9 min + cold start; no carry), prepared in session 36, not run: the target's bf16
# multiplies with the weights as the MMA's left operand (kernels/linear.py W_LEFT: wgmma, where
# today's 16-row tiles compile to mma.sync; it won the FP8 drafter's o and k|v in run 180). In
# run 181's timeline the verify's o, down and q|k|v take 11.3 / 28.3 / 14.3 us a layer against
# bounds of 8.0 / 24.0 / 12.0 (~360 us a forward, ~7% of a step), the one-row o, q|k|v and down
# 9.9 / 13.8 / 24.8 against 8.0 / 12.0 / 24.0 (~160 us: ~4% of AR). Prediction: some shapes
# gain 1-3 us a launch; spec +1-3%, AR +0-2%.
# 1. kernel_sweep --grid left at 16 rows, cold weights: each shape's fastest into left16.json.
# 2. The kernel timeline (one process, in the graphs) with that file and with the W_LEFT
#    families of bench/h200/tiles185/ (16-row and one-row entries each) against the base.
# 3. compose_tiles.py: each shape's fastest variant's tile (>= 1% under the base) into one file.
# 4. That file paired against the base (pipelined, 8 rounds), then issue 3's 1k row with it
#    (token forcing).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
timeout 110 python3 bench/kernel_sweep.py --rows 16 --grid left --tiles-out "$OUT/left16.json" \
    --out "$OUT/sweep-left16.json" >"$OUT/sweep-left16.log" 2>&1
echo "sweep rc=$?"; grep -E "^M=" "$OUT/sweep-left16.log" | cut -c1-240
pack
H=bench/h200/tiles185
V="base|;left16|--tiles $OUT/left16.json"
for f in $H/*.json; do V="$V;$(basename "$f" .json)|--tiles $f"; done
variants bf16 "$V" 170
pack
python3 bench/compose_tiles.py "$OUT/timeline-variants-1024.json" --tiles-out "$OUT/composed.json" \
    --out "$OUT/composed-report.json" >"$OUT/compose.log" 2>&1
echo "compose rc=$?"; grep -v '^{"bench"' "$OUT/compose.log"
pack
engine 1024 paired 100 --paired-rounds 8 --paired "base|;composed|--tiles $OUT/composed.json"
grep "^paired" "$OUT/engine-paired.log"
pack
engine 1024 row 140 --tiles "$OUT/composed.json"
pack; archive_only
