#!/usr/bin/env bash
# Device call (~7.5 min + cold start; no carry): run 334, issue 7: where the one-row W12
# multiplies lose to bf16_row per byte on the same ring. Run 330's decode (H100, exit to exit
# against the copy-bandwidth bounds): W12 q|k|v 15.5 us against 12.6 (82%), gate|up 53.2 against
# 50.3 (94%), the down 25.9 against 25.2; bf16_row's q|k|v 16.6 against 16.7, gate|up 66.7
# against 66.9, the down 31.9 against 33.4 (~100%).
# 0. GPU tests: EARLY_ESCAPES's and PRE's bits against without (~30 s).
# 1. Qwen3-8B's W12 decode graph, back to back, traced: base, rb8 (w12_row.ROW_BOUND 8: every
#    one-row launch's copies alone, a bound with wrong outputs), rb2 (ROW_BOUND 2: the hand-off
#    alone, the multiplying warps waiting for each stage and freeing it, reading nothing), ee
#    (w12_row.EARLY_ESCAPES 1: the meta warp's escape lists beside the scale words' bases, their
#    first entries before PDL's wait; same bits), ea (EARLY_ESCAPES 2: the meta warp a tile
#    ahead, the next tile's constants asked for before this tile's inputs; same bits), s10
#    (w12_row.ONE_ROW_TILE 3: 10 stages, ~120 kB in flight, all asked for before PDL's wait),
#    s10p6 (ONE_ROW_TILE 6: the same ring, 6 stages before the wait, the rest after), base2;
#    the decode's exit-spacing table.
#    2. The same for bf16 weights (base / rb8 / rb2 / s10p6: BF16_ONE_ROW_TILE 6).
# (The bounds' LM head reads wrong hidden states: its certificate fails and its exact pass reads
# the whole head, as NORM_BOUND's did in run 330: read the multiplies' rows, not the span.)
# Prediction (H100): W12 rb8 within 0.5 us of the bounds at gate|up and the down and ~1 us over
# at q|k|v (the feed is not the limit); rb2 like rb8 (the hand-off is not either); so the
# multiplying warps' decode or the meta warp's escapes are what W12 loses: bf16's rb8 / rb2
# level with its base. ee: q|k|v and gate|up -0.5 to -1.5 us a layer (decode -0.02 to -0.07 ms)
# if the meta warp's chain of loads is on the tiles' path, ea up to twice that; level if not.
# s10 slower (run 313's deeper rings for q|k|v and o lost 1-2 us), s10p6 level to -1 us at
# gate|up if the bytes in flight hold W12 back and the early requests were what lost.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="(early_escapes or fewer_stages) and cuda" TESTS_S=90 gpu_tests tests/test_w12_row.py
grep -E "FAILED|^E " "$OUT/gpu-tests.log" | head -8 | cut -c1-200
rb8=$(sw w12_row.ROW_BOUND=8)
rb2=$(sw w12_row.ROW_BOUND=2)
ee=$(sw w12_row.EARLY_ESCAPES=1)
ea=$(sw w12_row.EARLY_ESCAPES=2)
s10=$(sw w12_row.ONE_ROW_TILE=3)
s10p6=$(sw w12_row.ONE_ROW_TILE=6)
MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" \
    "base|;rb8|$rb8;rb2|$rb2;ee|$ee;ea|$ea;s10|$s10;s10p6|$s10p6;base2|" 270
decode_table w12
MODEL=qwen3-8b variants "bf16" "base|;rb8|$rb8;rb2|$rb2;s10p6|$(sw w12_row.BF16_ONE_ROW_TILE=6)" 140
decode_table bf16
archive_only
