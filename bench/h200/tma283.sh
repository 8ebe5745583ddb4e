#!/usr/bin/env bash
# Device call (~1 min + cold start; no carry): run 283 (and, with persistent rows added, 284). bench/tma_probe.py: how fast TMA
# streams a W12 plane ([24576, 4096] bytes, gate|up's low plane, copies cycled past the L2) by
# box shape, one program a 64-row stripe, against Triton's cp.async loads of the same stripes.
# Runs 279-282: kernels/w12_ws.py's loads alone (64 x 128-byte boxes) held at ~3.45 TB/s
# whatever its stages, input copies or programs an SM, where bf16's kernel on the same bytes
# drew ~3.86. Prediction: 64 x 128-byte boxes ~3.5 TB/s, 256-byte rows ~3.9, the tl.load
# tiles ~3.9; if the boxes are level with tl.load, the box shape is not what holds w12_ws.
# Run 283: every box 3.90-4.10 TB/s, level with tl.load (3.96-4.04): the box shape is not it.
# Run 284 (the same script): persistent rows too, one or two programs an SM with 4-16 stages
# (w12_ws's loader draws from one program an SM). Prediction: 1/SM with 4 stages of 8 kB
# ~2.5 TB/s, 16 stages (128 kB in flight, w12_ws's) ~4.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
timeout 150 python3 bench/tma_probe.py --out "$OUT/tma-probe.json" >"$OUT/tma-probe.log" 2>&1
echo "tma probe rc=$?"; grep -vE "^\{" "$OUT/tma-probe.log" | tail -16
pack; archive_only
