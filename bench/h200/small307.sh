#!/usr/bin/env bash
# Device call (~5 min + cold start; no carry): run 307, after run 306 (H100) first traced the
# one-row Gluon kernels inside the decode graph (kernels/trace.py marks in w12_row and
# bf16_row): W12 q|k|v 15.60 us against its 12.64 bound and o 11.07 against 8.43, where gate|up
# (54.52 / 50.57) and down (25.78 / 25.27) are near theirs; bf16's o 12.98 against 11.17, the
# rest at their bounds. The small multiplies on their own tile (w12_row.ONE_ROW_SMALL_TILE,
# BF16_ONE_ROW_SMALL_TILE: ROW_TILES 2 = 4 stages, 3 = 10 stages, 4 = 8-row tiles, 5 = 15 stages,
# W12 only: bf16's ring that deep does not fit), decode graph back to back with the per-kernel
# times, W12 every matrix and bf16.
# Prediction: 10 stages (more bytes in flight an SM) take q|k|v and o 1-2 us closer to their
# bounds (W12 decode -50..-100 us), 15 stages a little more; 8-row tiles level; 4 stages +0.5 us
# each.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
s="--switch kernels.w12_row"
MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" "base|;s2|$s.ONE_ROW_SMALL_TILE=2;\
s3|$s.ONE_ROW_SMALL_TILE=3;s4|$s.ONE_ROW_SMALL_TILE=4;s5|$s.ONE_ROW_SMALL_TILE=5;base2|" 200
grep -E "decode:.*each" "$OUT/timeline-variants-1024-qwen3-8b.log" | sed -E "s/ decode: .*\| each:/ decode:/" | cut -c1-300
variants bf16 "base|;s2|$s.BF16_ONE_ROW_SMALL_TILE=2;s3|$s.BF16_ONE_ROW_SMALL_TILE=3;\
s4|$s.BF16_ONE_ROW_SMALL_TILE=4;base2|" 150
grep -E "decode:.*each" "$OUT/timeline-variants-1024.log" | sed -E "s/ decode: .*\| each:/ decode:/" | cut -c1-300
pack; archive_only
