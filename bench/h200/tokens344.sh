#!/usr/bin/env bash
# Device call (~4 min + cold start; no carry): run 344, issue 7's spec target.
# kernels/w12_tokens.py (W12 at 1-16 tokens on 16-row mma.sync tiles, the tokens in B's
# columns, x resident in shared memory, no K split; the next norm handed on from its epilogue)
# has run on kernels/emulate.py only: its GPU tests first (`cuda` cases against
# w12_linear_reference, the hand-off, the timeline marks, the fused verify forward taking o, and
# the sm_90a compile), then, if they pass, bench/w12_tokens_speed.py at Qwen3-8B's K-4096
# shapes at 16 and 8 tokens beside w12_tc (the verify's kernel: o split in K with its split-sum
# launch) and cuBLAS bf16, cold L2; then the W12 verify graph back to back (every matrix W12):
# base, tok (w12_tokens.VERIFY 1: the verify's o here), base2.
# Prediction: o at 16 tokens 7-9 us standalone (the one-row MMA tile's pace plus a second mma a
# step and x's 128 kB a program from L2) against w12_tc's ~11-12 with its split sum; the verify
# -0.1 to -0.15 ms (o and its split sum 11.95 us a layer in run 339's verify, H200). If o is not
# under w12_tc's, the tokens' x copies (17 MB from L2 a launch) or the mma chains hold it.
# SPEED_S / VAR_S: the table's and the verify graph's seconds (0: skipped).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="cuda or compiles" TESTS_S=${TESTS_S:-200} gpu_tests_gate tests/test_w12_tokens.py || exit 0
if [ "${SPEED_S:-150}" != 0 ]; then
    timeout "${SPEED_S:-150}" python3 bench/w12_tokens_speed.py --tokens "${TOKENS:-16,8}" \
        --out "$OUT/tokens-speed.json" 2>&1 | tee "$OUT/tokens-speed.log" | grep -v '^{'
    pack
fi
if [ "${VAR_S:-150}" != 0 ]; then
    MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" \
        "base|;tok|$(sw w12_tokens.VERIFY=1);base2|" "${VAR_S:-150}"
    back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
    spacing verify-tok 30
    pack
fi
archive_only
