#!/usr/bin/env bash
# Device call (~3 min + cold start; no carry), session 46: run 252.
# Batched decode with the new defaults: "auto" certifies forwards of up to 16 rows, so the
# decode of 2-16 sequences (one row each) now takes the 16-row certified head with TWO_PASS
# and ROW_STATS (tested on the CPU and in runs 248-250's GPU tests, never measured batched).
# Qwen3-8B 1k, batches 2 and 4 (token forcing on the first rows), then batch 4 paired against
# the old default (--target-head certified-decode), 4 rounds.
# Prediction: forcing passes; batch-4 AR ~1.02x over the old default (its head 4 rows on the
# exact head, ~280 us, against ~185), spec level (its verify blocks are 64 rows: exact both).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
timeout 110 python3 bench/engine_speed.py --contexts 1024 --llama-contexts '' --batches 2,4 \
    --repeats 2 --hf-baseline 0 --profile 0 --torch-baseline 0 --taus 6.55 \
    --out "$OUT/engine-batches.json" >"$OUT/engine-batches.log" 2>&1
echo "batches rc=$?"; grep -E "batch [0-9]" "$OUT/engine-batches.log" | cut -c1-250
pack
engine 1024 paired-b4 80 --taus 6.55 --paired-rounds 4 --paired-batch 4 \
    --paired "base|;cdec|--target-head certified-decode"
grep "^paired" "$OUT/engine-paired-b4.log" | sort -u | cut -c1-300
pack; archive_only
