#!/usr/bin/env bash
# Device call (~2-8 min + cold start; no carry): run 298 = row289.sh (prepared in session 51)
# without its GPU tests (bf16_row's passed in run 296), run after runs 296-297 (H100) found
# w12_row's ONE_ROW 4.6% faster inside the decode graph, where standalone (run 294) it was
# level: BF16_ONE_ROW in the decode graph back to back, Qwen3-8B 1k paired (5 rounds), and the
# row arm alone with token forcing. Prediction (row289's): decode -0.10 ms back to back.
TESTS_K='' exec bash "$(dirname "$0")/row289.sh"
