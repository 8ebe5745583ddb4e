#!/usr/bin/env bash
# Device call (~3 min + cold start; no carry): bench/read_floor.py. How fast the H200 only reads
# (2 GiB, and each one-row multiply's bytes in bf16 and W12, cold, 20 calls a graph) next to the
# engine's one-row multiplies in the same process, and a decode's multiplies alone back to back
# against the same bytes read (36 layers + head, plain launches).
# Prediction: reads reach 4.5-4.7 TB/s on 2 GiB (the exact bf16 head read 1.24 GB at ~4.6 in
# the decode graph, run 198), so the copy bound (4.25) understates the floor by ~8-10%; gate|up
# and down one-row within 5-10% of their read floor, q|k|v and o 15-30% over theirs (ramps).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
timeout 420 python3 bench/read_floor.py --out "$OUT/read-floor.json" >"$OUT/read-floor.log" 2>&1
echo "read floor rc=$?"
grep -E "^NVIDIA|Error" "$OUT/read-floor.log" | cut -c1-200
sed -n '/^shape    format/,$p' "$OUT/read-floor.log" | grep -v '^{' | cut -c1-200
pack; archive_only
