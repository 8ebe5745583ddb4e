#!/usr/bin/env bash
# Device call (~3 min + cold start; no carry), prepared in session 44, not yet run: run 233.
# W12 one-row o on tiles that fill the H200 in whole waves. sm_90 ptxas (aot.usage,
# session 44): W12 "all"'s one-row o tile (4 rows x 16 blocks a program, 128 registers) holds
# 4 programs an SM: 1,024 programs are 1.94 waves of all-loads-then-products programs, and it
# takes 1.46x a pure read of its bytes (run 227) where bf16's one-wave o takes 1.17x
# (bench/ptxas_audit.py's waves column). Variants (bench/h200/waves233/*.json, each the rules'
# tile with these changes): o8s2 (8 blocks a step, 2 steps pipelined: 64 registers, 0.97
# waves), o4s3 (4 blocks, 3 stages: 48 registers, 0.78), o8x4 (8 rows x 4 blocks, 3 stages:
# 0.48), o16 (gate|up's loop tile: 16 rows x 2 blocks, 3 stages: ~0.3); base2 the control.
# Prediction: o 10.9 -> 9-10 us a layer on o8s2 or o4s3 (W12 "all" decode -30..-70 us); if
# o wins, W12 o could join "auto" (cost_model --matrices).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
t=bench/h200/waves233
V="base|"
for v in o8s2 o4s3 o8x4 o16; do V+=";$v|--tiles $t/$v.json"; done
variants "w12:all" "$V;base2|" 300
decode_each "w12:all"
pack; archive_only
