#!/usr/bin/env bash
# Device call (PART=qwen ~8 min, PART=llama ~5 min, each + cold start; no carry; the
# default, both, runs past one call's 10 minutes): run 322, issue 7 with run 321's defaults
# (launch.WIDE_EARLY 7, w12_linear.SPLIT_SUM_BLOCK 128) on the card it lands on (the targets are
# an H200's; runs 314-321 came on H100s).
# 0. w12_tc's GPU tests at the downs' shapes (K 12288 and 14336, 16 rows), with MAX_BLOCKS 32
#    (units of up to 32 blocks: the downs split 2 ways instead of 4) among them (~40 s).
# 1. Qwen3-8B's W12 decode and verify graphs (every matrix), back to back, traced: base (the
#    defaults), old (before run 319: WIDE_EARLY 0, SPLIT_SUM_BLOCK 1024), mb32
#    (w12_tc.MAX_UNIT_BLOCKS 32), oe (launch.O_EARLY 1: in one-row forwards the merge lets o
#    launch before its wait, so that w12_row's loader asks for o's first stages during the
#    attention, as WIDE_EARLY's merge bit does for w12_tc in the verify; run 174 tried it for
#    bf16's skinny o: lost), ee (w12_tc.EARLY_ESCAPES 1: the escape table read before PDL's
#    wait), base2; bench/exit_spacing.py's verify table.
# 2. End to end at 1k, paired over bf16 for PAIRED rounds (default 4) with the control, forcing
#    on every arm: w12 (the defaults) and before_319.
# 3. Llama-3.1-8B (its down K 14336: w12_tc's 4-way split of 14 blocks), with VERIFY on for
#    the first time on a GPU: the verify graph base / old / base2, then AR and spec end to end
#    with forcing (2 paired rounds).
# Prediction (H200): verify base 0.2-0.3 ms under old; mb32 0.05-0.1 ms under base (the down
# one wave of 128 units of 24 blocks, its split sum of 2 slices ~1.7 us instead of ~3.5); oe's
# decode 0-0.06 ms under base (o 11.6 -> ~10 us a layer, if the attention does not slow); ee
# 0-0.04 ms under base (o and q|k|v a little shorter); spec over bf16 1.08-1.12x (run 299's
# 1.004x before w12_tc's route), AR ~1.11x as run 299; Llama's verify base under old by as much.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
old="$(sw launch.WIDE_EARLY=0) $(sw w12_linear.SPLIT_SUM_BLOCK=1024)"
mb32=$(sw w12_tc.MAX_UNIT_BLOCKS=32)
if [ "${PART:-qwen}" != llama ]; then
TESTS_K="cuda-16-4096-12288 or cuda-16-4096-14336" TESTS_S=90 gpu_tests tests/test_w12_tc.py
grep -E "FAILED" "$OUT/gpu-tests.log" | head -6 | cut -c1-200
oe=$(sw launch.O_EARLY=1)
ee=$(sw w12_tc.EARLY_ESCAPES=1)
MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" \
    "base|;old|$old;mb32|$mb32;oe|$oe;ee|$ee;base2|" 180
back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
MODEL=qwen3-8b spacing qwen3 13
pack
w12_e2e e2e-1024 qwen3-8b before_319 "${PAIRED:-4}" "${E2E_S:-230}"
pack
fi
if [ "${PART:-llama}" != qwen ]; then
MODEL=llama3.1-8b variants "w12:qkv,o,gate_up,down" \
    "base|;old|$old;mb32|$mb32;base2|" 120
back_to_back "$OUT/timeline-variants-1024-llama3.1-8b.json"
MODEL=llama3.1-8b spacing llama 0
pack
w12_e2e e2e-llama llama3.1-8b before_319 2 "${LLAMA_S:-150}"
pack
fi
archive_only
