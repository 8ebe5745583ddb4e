#!/usr/bin/env bash
# Device call (~4 min + cold start; no carry): run 228. Timeline variants, bf16, Qwen3-8B 1k:
# one-row o and q|k|v (and down) on "flat" element-wise tiles, the shape of run 227's fastest
# pure read (16 KB a program, 8 warps, no loop): 2 weight rows x all 4096 columns a program
# (bench/h200/flat228/*.json); W12 "all" on the same plan (2 or 4 rows x 16 blocks a program,
# 8 warps; down 2 rows x 16 blocks, 2 steps pipelined). Run 227: the one-row o and q|k|v multiplies take 1.17x / 1.13x
# of a pure read of their bytes (gate|up 1.06x, down 1.07x).
# Prediction: o -0.5 to -1.5 us, q|k|v -0.5 to -1 us a layer in the graph (decode -30..-80 us)
# if the read's shape carries over; level or worse if the products' tail after the loads (all
# in flight at once) costs what the loop's overlap saved.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
t=bench/h200/flat228
V="base|;f2o|--tiles $t/f2o.json;f2q|--tiles $t/f2q.json;f2|--tiles $t/f2.json"
V+=";f4|--tiles $t/f4.json;l2|--tiles $t/l2.json;fd|--tiles $t/fd.json;base2|"
variants "bf16;w12:all" "$V" 420
decode_each "bf16"; decode_each "w12:all"
pack; archive_only
