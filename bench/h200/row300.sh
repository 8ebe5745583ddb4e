#!/usr/bin/env bash
# Device call (~2.5 min + cold start; no carry): run 300, after run 299 (H200: BF16_ONE_ROW
# decode 3.959 ms against 4.025 / 4.022, Qwen3 pipelined AR 249.9, spec 1,310): the bf16 route's
# tile inside the decode graph (base and base2: BF16_ONE_ROW on its default tile; t1: 32-row
# tiles on 3 stages; t2: 4 stages; off: skinny_linear), then Qwen3-8B 1k with the fastest tile
# (issue 3's row: pipelined AR and spec@6.55, token forcing).
# Prediction: t1 / t2 within 0.5% of base (run 294's standalone bf16 tiles within 3%).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
s="--switch kernels.w12_row"
on="$s.BF16_ONE_ROW=1"
variants bf16 "base|$on;t1|$on $s.BF16_ONE_ROW_TILE=1;t2|$on $s.BF16_ONE_ROW_TILE=2;off|$s.BF16_ONE_ROW=0;\
base2|$on" 120
best=$(fastest_variant decode 0.01 t1 t2); tile=${best#t}; echo "tile: ${tile:-0}"
engine 1024 row 100 --taus 6.55 $on $s.BF16_ONE_ROW_TILE=${tile:-0}
pack; archive_only
