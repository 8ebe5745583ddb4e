#!/usr/bin/env bash
# Device call (~4.5 min + cold start; no carry): run 344 (again), issue 7.
# kernels/w12_tokens.py (W12 at 1-16 tokens on 16-row mma.sync tiles, the tokens in B's
# columns, x resident in shared memory, no K split; the next norm handed on from its epilogue;
# since session 71 its planes and x swizzled and read conflict-free, WORDS16) has run on
# kernels/emulate.py only since its first GPU test (run 344: one tile of 256 off at 16 tokens,
# unswizzled form, cause not found). Its GPU tests first (`cuda` cases against
# w12_linear_reference, three runs the same bits, naming every tile and token off; the
# hand-off, the timeline marks, the fused verify forward taking o, the sm_90a compile), then,
# if they pass, bench/w12_tokens_speed.py at Qwen3-8B's K-4096 shapes at 16, 8 and 1 tokens
# beside w12_tc (the verify's kernel: o split in K with its split-sum launch), w12_row at one
# token (the decode's FFMA tile) and cuBLAS bf16, cold L2; then the W12 decode and verify
# graphs back to back (every matrix W12): base, tok (w12_tokens.VERIFY 1: the verify's o here),
# mma4 / mma4d (w12_row.ONE_ROW_TILE 12 / 14: the MMA tiles, since session 71 reading their
# planes swizzled and conflict-free; their GPU tests gate this call too), base2.
# Prediction: o at 16 tokens 7-9 us standalone against w12_tc's ~11-12 with its split sum, at
# one token level with w12_row or better (the MMA decode's 2.6 instructions a weight, now
# without run 343's 8-way conflicted reads); the verify -0.1 to -0.15 ms; mma4 level with base
# or better (run 343: +0.38 ms with the conflicts). If o at one token and mma4 still lose to
# w12_row's FFMA tile, the MMA decode is not the way for the decode.
# Session 72: bench/w12_tokens_probe.py after the tests (PROBE_S seconds, FENCES: w12_tokens.FENCE
# values), pass or fail.
# SPEED_S / VAR_S: the table's and the graphs' seconds (0: skipped). ~6 min + cold start in all.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="(cuda or compiles) and (w12_tokens or mma or tile16 or tile17 or tile18 or tile19"
TESTS_K="$TESTS_K or tile20 or tile21)" TESTS_S=${TESTS_S:-200} \
    gpu_tests tests/test_w12_tokens.py tests/test_w12_row.py tests/test_emulate.py
# where w12_tokens' outputs go wrong, if they do: 16 tokens at N 4096 and 24576, PDL on and off,
# runs alternating two problems, each column off explained (runs 344-345's race)
timeout $((${PROBE_S:-90} + 40)) python3 bench/w12_tokens_probe.py --fence "${FENCES:-0}" \
    --seconds "${PROBE_S:-90}" --out "$OUT/tokens-probe.json" 2>&1 | tee "$OUT/tokens-probe.log" |
    grep -v '^{' | cut -c1-200 | tail -30
if ! tests_passed; then
    grep -E "Error|assert|FAILED" "$OUT/gpu-tests.log" | head -20 | cut -c1-250
    pack; archive_only; exit 0
fi
if [ "${SPEED_S:-150}" != 0 ]; then
    timeout "${SPEED_S:-150}" python3 bench/w12_tokens_speed.py --tokens "${TOKENS:-16,8,1}" \
        --out "$OUT/tokens-speed.json" 2>&1 | tee "$OUT/tokens-speed.log" | grep -v '^{'
    pack
fi
if [ "${VAR_S:-200}" != 0 ]; then
    MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" \
        "base|;tok|$(sw w12_tokens.VERIFY=1);mma4|$(sw w12_row.ONE_ROW_TILE=12);mma4d|\
$(sw w12_row.ONE_ROW_TILE=14);base2|" "${VAR_S:-200}"
    back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
    MODEL=qwen3-8b spacing verify-tok 30
    python3 bench/exit_spacing.py --forward decode "$OUT/timeline-variants-1024-qwen3-8b.json" \
        >"$OUT/spacing-decode-tok.log"
    head -13 "$OUT/spacing-decode-tok.log" | cut -c1-175
    pack
fi
archive_only
