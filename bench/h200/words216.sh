#!/usr/bin/env bash
# Device call (~8 min + cold start; no carry), session 42, after run 215's Nsight Compute source
# view of the one-row W12 down: the first use of a group base (a byte load in the step that uses
# it; byte loads cannot go through cp.async) took 8.5% of the stall samples, the most of any
# instruction. BASE_WORDS (kernels/w12_linear.BASE_WORDS_TILES, on): the bases read as 32-bit
# words, one a block and row, inside the loop's cp.async pipeline (sm_90 SASS: LDG.U8 8 -> 0,
# LDGSTS 42 -> 48). (1) GPU tests of the W12 kernels; (2) timeline, W12 "auto", 1k, back to
# back: base (words) / bytes / base2; (3) end to end, W12 "auto" (words) and byte_bases against
# bf16, 6 paired rounds.
# Prediction: the one-row W12 down 23.4 -> 21-22 us and gate|up 40 -> 38-39 in the graph;
# W12 decode -2 to -3% back to back; W12 AR 1.08x -> 1.10-1.11x bf16; spec unchanged (verify
# runs tensor-core tiles, which keep byte bases).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
TESTS_K="base_words or default_tile or loop_stages or measured_tiles or swiglu_epilogue" \
    TESTS_S=150 gpu_tests tests/test_w12_kernels.py
S="--switch kernels.w12_linear.BASE_WORDS_TILES=0"
variants "w12:auto" "base|;bytes|$S;base2|" 170
pack
timeout 280 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-matrices auto --w12-arms byte_bases --paired 6 --out "$OUT/e2e-1024.json" \
    >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^e2e" "$OUT/e2e-1024.log" | cut -c1-300
pack; archive_only
