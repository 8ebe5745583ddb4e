#!/usr/bin/env bash
# Device call (~6.5 min + cold start; no carry): run 352, issue 7 (the spec target).
# Session 74 (CPU): w12_tokens with x streamed (TILE keys XS, TILES: x through a ring of XS
# stages beside the planes', rounds of 2 tiles stage by stage) takes a K past max_k: the
# verify's down (K 12288) without w12_tc's K split and its split-sum launch (w12_tokens.STREAM,
# off). This call: w12_tokens' GPU tests (the streamed down shape among them; three runs the
# same bits, other data before each), the race probe on the streamed tile (N 4096, K 12288,
# FENCE 4 and 0), then the W12 verify graph back to back, Qwen3-8B: base, late
# (w12_tc.HANDED_RSTD_LATE), stream (w12_tokens.STREAM), base2, late2, stream2, and the verify's
# exit spacing (us a layer, each kernel). The stream arms only if the tests passed.
# Prediction: tests pass; the probe clean with FENCE 4; stream's down ~20-21 us a layer exit
# to exit on an H100 (run 349: w12_tc's ~26 + its split sum ~2.7; x's L2 reads are 0.67 of the
# planes' bytes, which may cost), the verify -0.03 to -0.1 ms; late -0.03 to -0.07 ms.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="cuda and w12_tokens" TESTS_S=${TESTS_S:-170} gpu_tests tests/test_w12_tokens.py
stream="stream|$(sw w12_tokens.STREAM=1);"
stream2="stream2|$(sw w12_tokens.STREAM=1);"
if tests_passed; then
    PROBE_S=80 probe probe-stream --shapes 4096x12288 --fence 4,0
else
    grep -E "Error|assert|FAILED" "$OUT/gpu-tests.log" | head -12 | cut -c1-250
    stream="" stream2=""
fi
pack
verify_table qwen3-8b verify-352 "base|;late|$(sw w12_tc.HANDED_RSTD_LATE=1);\
${stream}base2|;${stream2}late2|$(sw w12_tc.HANDED_RSTD_LATE=1)" "${VAR_S:-200}"
pack
archive_only
