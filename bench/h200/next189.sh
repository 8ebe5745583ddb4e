#!/usr/bin/env bash
# Device call (~1.5 min + cold start; no carry), session 37, after run 187: the FP8 drafter's
# o, gate|up and fc tiles now in linear.FP8_TILES (run 186's in-graph picks; q|k|v's left out,
# slower when all four ran together in run 187). The new defaults against the old tiles
# (bench/h200/tiles187/before-run186.json) in one timeline (base twice), then issue 3's 1k
# row with them (token forcing). Prediction: draft ~0.627 -> ~0.612 ms; the row level.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.log"
variants bf16 "new|;old|--tiles bench/h200/tiles187/before-run186.json;new2|" 80
pack
engine 1024 row 150
pack; archive_only
