#!/usr/bin/env bash
# Device call (~4.5 min + cold start; no carry): run 332, issue 7: the one-row multiplies' last
# wave. w12_row / bf16_row run one persistent program an SM over 16-row tiles: Qwen3-8B's
# gate|up has 1,536 tiles, so on 132 SMs 84 programs take 12 and 48 take 11, and the launch
# ends on a partial wave (q|k|v 384 tiles: 120 x 3 and 12 x 2; o and the down 256: 124 x 2 and
# 8 x 1). Run 330's decode (H100, us a layer exit to exit, nw): gate|up 53.2 against a 50.3
# bound, q|k|v 15.5 against 12.6, o 9.6 against 8.4, the down 25.9 against 25.2.
# 1. Qwen3-8B's W12 decode and verify graphs, back to back, traced: base, even
#    (w12_row.EVEN_PROGRAMS 1: 128 programs of equal counts at every one of those shapes; the 4
#    free SMs take the next multiply's first programs under PDL), base2; the decode's
#    exit-spacing table. 2. The same for bf16 weights (base / even): the mechanism is bf16_row's
#    too, and issue 7's ratio is over bf16.
# Prediction (H100): even -0.5 to -1.5 us at gate|up and level to -0.5 elsewhere (decode -0.02
# to -0.07 ms, W12 and bf16 alike); or level, if the last wave's 84 SMs already draw the full
# bandwidth. Verify untouched (w12_tc / the 16-row bf16 tiles).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
even=$(sw w12_row.EVEN_PROGRAMS=1)
MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" "base|;even|$even;base2|" 130
back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
python3 bench/exit_spacing.py --forward decode "$OUT/timeline-variants-1024-qwen3-8b.json" \
    >"$OUT/spacing-decode-w12.log"
head -13 "$OUT/spacing-decode-w12.log" | cut -c1-175
for f in "$OUT"/timeline-variants-1024-qwen3-8b.*; do mv "$f" "${f/qwen3-8b/qwen3-8b-w12}"; done
pack
MODEL=qwen3-8b variants "bf16" "base|;even|$even" 100
back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
python3 bench/exit_spacing.py --forward decode "$OUT/timeline-variants-1024-qwen3-8b.json" \
    >"$OUT/spacing-decode-bf16.log"
head -13 "$OUT/spacing-decode-bf16.log" | cut -c1-175
pack
archive_only
