#!/usr/bin/env bash
# Device call (~2.5 min + cold start; no carry): run 282. What holds kernels/w12_ws.py's loads
# back. Run 281: with the group bases in one load a unit and the escapes batched its GPU tests
# pass (34) and gate|up is 52.0 us (persistent 48.6) against w12_linear's 42.1, but its
# loads-only bound stayed at 44.1 (bf16 over 3/4 of K: 39.9): the loader itself, one program
# an SM with 4 stages of 32 kB (24 kB of weights from HBM, 8 kB of the input from L2, in 7 TMA
# copies). Here, at Qwen3-8B's 16-row gate|up and down (bench/w12_join.py --ws; the products
# of the bounds are wrong and not checked): the weights' bytes alone (BOUND 4: the input not
# copied; 7 with the decode and the multiply out too), the loads with 2 and 6 stages, and two
# programs an SM (MAXNREG 80, 2 stages) beside one.
# Prediction: without the input's copies the loads bound drops to ~37 us at gate|up (the
# weights at ~4.1 TB/s) if the input's L2 traffic holds the loader; level with 6 stages; two
# programs an SM -10% if one loader warp an SM is the limit.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
timeout 200 python3 bench/w12_join.py --model qwen3-8b --rows 16 --shapes gate_up,down \
    --variants j2esc4 --ws --out "$OUT/ws-qwen3-8b.json" >"$OUT/ws-qwen3-8b.log" 2>&1
echo "16 rows rc=$?"
ws_table "$OUT"/ws-*.json
pack
# two programs an SM (80 registers at launch, 98 kB of shared memory each), last and on its own
# (a launch that cannot get its registers would hang: the timeout keeps the rows above)
timeout 100 python3 bench/w12_join.py --model qwen3-8b --rows 16 --shapes gate_up,down \
    --variants j2esc4 --ws --ws-two --out "$OUT/two-qwen3-8b.json" >"$OUT/two-qwen3-8b.log" 2>&1
echo "two an SM rc=$?"
ws_table "$OUT"/two-*.json >/dev/null; mv "$OUT/ws-table.log" "$OUT/two-table.log"
cat "$OUT/two-table.log"
pack; archive_only
