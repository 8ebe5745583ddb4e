#!/usr/bin/env bash
# Device call (~2 min + cold start; no carry), session 39, after run 197 (the certified head
# slower in the graph: one row 328-412 us against the exact head's 272, 16 rows 484-546 against
# 277). Where its time goes, each launch alone (bench/certified_speed.py): the int8 multiply
# without an exact pass (radius x -1e30), with about one candidate a program (x0) and real
# (x1), deferral and the gathered exact pass (COMPACT, new) on and off, on the compiled-in
# tiles, c3 and the element-wise e1, beside the
# FP8 head of the same shape (what an 8-bit multiply reaches). Prediction: the multiply alone
# ~160-180 us; the rest the exact passes' latency (each a 16-step loop of dependent loads),
# which COMPACT cuts to a few us.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.log"
T=bench/h200/certified197
timeout 300 python3 bench/certified_speed.py --tiles "compiled,$T/c3.json,$T/e1.json" \
    --out "$OUT/certified-speed.json" >"$OUT/certified-speed.log" 2>&1
echo "certified_speed rc=$?"; grep -v '^{' "$OUT/certified-speed.log" | grep -v "radius x0" \
    | cut -c1-130
pack
C="--target-head certified"
variants bf16 "exact|;cert|$C;c3|$C --tiles $T/c3.json;e1|$C --tiles $T/e1.json;exact2|" 130
pack; archive_only
