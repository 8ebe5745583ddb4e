#!/usr/bin/env bash
# Device call (~9 min on an H200 + cold start, ~1.5 on another card; no carry): run 358, issue 7.
# Session 74 put the verify's down on w12_tokens (STREAM, runs 352-357 on an H100); the q|k|v
# after it then starts 1.3-1.7 us a layer later (exit to exit; w12_tokens' 219 kB of shared
# memory leaves no room for q|k|v's programs to be resident early, where the split sum's did),
# so w12_tc.HANDED_RSTD_LATE (no gain in run 352, behind a split sum) may pay here. Any card:
# the W12 verify graph back to back, Qwen3-8B, base (STREAM on), late, base2, late2, and its
# exit spacing. On an H200 (issue 7's card) then: issue 7's end to end on both models with the
# defaults, tc_verify_o beside (final350.sh's half: E2E_S seconds a model, 220).
# Prediction: late -0.02 to -0.05 ms (q|k|v's first stage no longer behind the squares' load);
# on the H200 AR as runs 338 / 340 (1.172x / 1.175x), spec ~1.13x (1.10x in run 338; +2-4%
# from the verify's o and down on the H100).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
verify_table qwen3-8b verify-358 "$(paired late w12_tc.HANDED_RSTD_LATE=1)" "${VAR_S:-120}"
pack
if grep -q H200 "$OUT/gpu.log"; then
    w12_e2e e2e-1024 qwen3-8b "${ARMS:-tc_verify_o}" 3 "${E2E_S:-220}"
    pack
    w12_e2e e2e-1024-llama llama3.1-8b "${ARMS:-tc_verify_o}" 3 "${E2E_S:-220}"
    pack
fi
archive_only
