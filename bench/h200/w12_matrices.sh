#!/usr/bin/env bash
# Device call (~8 min, a guess; no carry): W12 for some matrices only (EngineConfig.w12_matrices).
# At 16 rows W12 loses to bf16 on q|k|v, o and down (run 119: 16.8 / 13.7 / 29.1 us against
# 15.2 / 11.5 / 27.5) and wins on gate_up (44.5 against 48.5) and the LM head (240 against
# 280); at one row it wins on all but o (run 88). (1) the fused engine's token-forcing tests on
# the GPU, mixed arm included (TESTS_K; '' skips them); (2) MODEL's shape (qwen3-8b, or
# llama3.1-8b) at each of CONTEXTS (1024), bf16 against W12 (every matrix) and the MATRICES arms,
# ROUNDS (6) paired rounds (ROUNDS_LONG above 4k, else ROUNDS), within E2E_S (360) each.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TESTS_S_DEFAULT=150 TESTS_K="${TESTS_K-fused_engine_passes_token_forcing}" \
    gpu_tests tests/test_kernels.py
MATRICES="${MATRICES:-gate_up,lm_head;gate_up,lm_head,down;qkv,gate_up,down,lm_head,fc}"
for ctx in ${CONTEXTS:-1024}; do
    rounds="${ROUNDS:-6}"; [ "$ctx" -gt 4096 ] && rounds="${ROUNDS_LONG:-$rounds}"
    timeout "${E2E_S:-360}" python3 bench/w12_speed.py --rows '' --e2e "$ctx" \
        --model "${MODEL:-qwen3-8b}" --w12-matrices "$MATRICES" --paired "$rounds" \
        --out "$OUT/e2e-$ctx.json" >"$OUT/e2e-$ctx.log" 2>&1
    echo "e2e $ctx rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-$ctx.log" | cut -c1-300; pack
done
archive_only
