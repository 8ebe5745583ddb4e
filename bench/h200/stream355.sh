#!/usr/bin/env bash
# Device calls (runs 355-357, H100, warm after run 354; no carry), issue 7: w12_tokens.STREAM
# end to end, one call a PART (run 355: qwen, 207 s; 356: llama, 162 s; 357: llama_verify,
# 24 s). Each arm's tokens forced against bf16.
# qwen / llama: end to end at 1k, every matrix W12, the arm stream_down paired 3 rounds over
# bf16 with the control. llama_verify: the Llama-3.1-8B verify graph back to back, base,
# stream, base2, stream2, and its exit spacing.
# Prediction (run 354's verify -0.064 ms of ~5.9 ms a spec step): spec +1% over w12; AR level.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
case "${PART:-qwen}" in
qwen) w12_e2e e2e-1024 qwen3-8b stream_down 3 260 ;;
llama) w12_e2e e2e-1024-llama llama3.1-8b stream_down 3 250 ;;
llama_verify)
    verify_table llama3.1-8b verify-llama "$(paired stream w12_tokens.STREAM=1)" 150 ;;
esac
pack
archive_only
