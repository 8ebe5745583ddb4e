#!/usr/bin/env bash
# Device call (~2 min + cold start; no carry), session 48: run 263. Runs 259 and 262: neither
# JOIN (2 warpgroup waits a block, no operand re-packing) nor BASE_EARLY (the bases in the
# pipeline) moves the 16-row W12 gate|up off ~3.4 TB/s of 12-bit bytes. Two bounds tell the
# decode from the access pattern: NO_DECODE (the same tile with the planes' words taken as the
# weights, wrong products) and bf16's kernel on 3/4 of K (W12's bytes in bf16's pattern).
# Prediction: if nodecode ~4 TB/s the decode chain limits (then: fewer instructions a weight);
# if ~3.4, the tile's loads (3 plane streams a row, the 3-stage ring) do.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
timeout 200 python3 bench/w12_join.py --rows 16 --variants plain,j2,nodecode,j2nodecode \
    --out "$OUT/bound-16.json" >"$OUT/bound-16.log" 2>&1
echo "bound rc=$?"; grep -vE "^\{" "$OUT/bound-16.log" | tail -5 | cut -c1-200
pack; archive_only
