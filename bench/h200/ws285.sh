#!/usr/bin/env bash
# Device call (~1 min + cold start; no carry): run 285. Runs 283-284 (bench/tma_probe.py): TMA
# streams a W12 plane at 3.9-4.2 TB/s in every box shape tried, and one program an SM with 64 kB
# in flight at 4.07, where kernels/w12_ws.py's loads alone (BOUND 3) ran at ~3.45 (44 us at
# Qwen3-8B's 16-row gate|up). Here, at gate|up and down (bench/w12_join.py --ws --ws-loader;
# the bounds' products are wrong and not checked): its loader's copies with no consumer waited
# on (BOUND 8: each stage reissued once its copies landed, as tma_probe's ring) beside its
# loads with the decoders' and the multiplier's hand-offs (BOUND 3).
# Prediction: the copies alone ~38 us at gate|up (~4 TB/s): then the hand-offs, not the
# copies, hold the loads.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
timeout 200 python3 bench/w12_join.py --model qwen3-8b --rows 16 --shapes gate_up,down \
    --variants j2esc4 --ws --ws-loader --out "$OUT/ws-qwen3-8b.json" >"$OUT/ws-qwen3-8b.log" 2>&1
echo "16 rows rc=$?"
ws_table "$OUT"/ws-*.json
pack; archive_only
