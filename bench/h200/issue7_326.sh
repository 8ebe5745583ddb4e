#!/usr/bin/env bash
# Device call (~8 min + cold start; no carry): run 326, issue 7: models.fused.SPLIT_SUM_HAND,
# on by default since run 325 (Qwen3-8B's W12 verify graph 4.824 ms against 4.927 / 4.925), on
# Llama-3.1-8B too, and the split sum's launch shape now that it squares and scales as well
# (its programs took 5.3 us exit to exit in run 325 against 1.7 without the hand-off).
# 1. Qwen3-8B's W12 verify graph (every matrix), back to back, traced: base (the defaults),
#    nohand (SPLIT_SUM_HAND 0, run 325's base), sb256 (w12_linear.SPLIT_SUM_BLOCK 256: half
#    the programs, two columns a thread), sw2 (SPLIT_SUM_WARPS 2: 64 threads a program, two
#    columns each), us1 (w12_tc.UNIT_SPLIT 1: o unsplit, 64 units on 64 SMs, so no split sum
#    after it and the norm kernel back; the down keeps its 2 splits: does o alone on half the
#    SMs read near the bandwidth? If o + the norm come near o + its split sum, a hand-off in
#    w12_tc's own epilogue would save the split sum), base2; exit_spacing's verify table.
# 2. Llama-3.1-8B's W12 verify graph: base, nohand, base2, and its verify table.
# 3. End to end at 1k, Llama-3.1-8B, 2 paired rounds over bf16 with the control, token forcing
#    on every arm: w12 (the defaults) and before_325 (SPLIT_SUM_HAND off).
# Prediction (H100): nohand +0.08-0.12 ms on either model's verify (run 325: +0.10); sb256 and
# sw2 within +-0.03 ms of base (the split sum's 5 us is mostly the early-launched multiply's
# loads queued ahead of its reads, run 319's finding, not its own width); us1 +0.03 to +0.1 ms
# (o 10.6 -> ~12-13 us, its split sum's 5.3 gone, a norm's ~4.4 back); Llama spec over bf16
# +1-2% with the hand-off (run 325's Qwen3 paired medians 1,111 against 1,098 tok/s), AR level;
# forcing passes on every arm.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
nohand="--switch models.fused.SPLIT_SUM_HAND=0"
MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" \
    "base|;nohand|$nohand;sb256|$(sw w12_linear.SPLIT_SUM_BLOCK=256);sw2|\
$(sw w12_linear.SPLIT_SUM_WARPS=2);us1|$(sw w12_tc.UNIT_SPLIT=1);base2|" 190
back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
MODEL=qwen3-8b spacing qwen3 13
pack
MODEL=llama3.1-8b variants "w12:qkv,o,gate_up,down" "base|;nohand|$nohand;base2|" 120
back_to_back "$OUT/timeline-variants-1024-llama3.1-8b.json"
MODEL=llama3.1-8b spacing llama 13
pack
w12_e2e e2e-llama llama3.1-8b before_325 2 "${LLAMA_S:-200}"
pack
archive_only
