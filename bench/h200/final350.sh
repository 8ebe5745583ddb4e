#!/usr/bin/env bash
# Device call (~7.5 min on an H200, ~2 on an H100, + cold start; no carry): run 350, issue 7.
# On an H200 (issue 7's card): its numbers with the defaults of the day (since session 74:
# w12_tokens.VERIFY and STREAM on, the verify's o and down on w12_tokens), Qwen3-8B then
# Llama-3.1-8B end to end at 1k, every matrix W12, paired 3 over bf16 with the control and
# token forcing; arm tc_verify_o (VERIFY off, and with it STREAM's route: session 68's
# defaults of runs 338 / 340 otherwise) beside. Prediction: AR as run 338 / 340 (1.172x /
# 1.175x; neither takes a one-row multiply), spec +2-4% over tc_verify_o (H100, runs 347 /
# 355: +2.1% for o, +1.2-3.6% more for the down): 1.10x -> ~1.13x.
# ARMS: w12_speed's arms beside w12 (tc_verify_o; e.g. tc_verify_o,tc_down). E2E_S: seconds a
# model (250; two models must fit the call's 600).
# On another card: the race probe at 3 seeds (w12_tokens with its fence and without, w12_tc at
# 16 and 8 tokens, w12_row's decode tile), runs alternating two problems. Prediction: w12_tokens
# FENCE 4, w12_tc and w12_row clean; FENCE 0 off. OTHER=none: on another card, nothing.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
if grep -q H200 "$OUT/gpu.log"; then
    w12_e2e e2e-1024 qwen3-8b "${ARMS:-tc_verify_o}" 3 "${E2E_S:-250}"
    pack
    w12_e2e e2e-1024-llama llama3.1-8b "${ARMS:-tc_verify_o}" 3 "${E2E_S:-250}"
elif [ "${OTHER:-probe}" = probe ]; then
    probe probe-tokens --fence 4,0
    probe probe-tc --kernel tc --tokens 16,8
    probe probe-row --kernel row --tokens 1
fi
pack
archive_only
