#!/usr/bin/env bash
# Device call (~8 min; no carry): kernels/tokens.py (the embedding gathers, the argmaxes, and
# the verify's argmax + accept + packing, each one launch in the PDL chain instead of
# PyTorch's 20.6 + 24.8 us and ~8 launches a step in run 151's loop profile). The GPU tests
# (the kernels against torch, every generation path against transformers, the fused engine's
# token forcing); timeline variants at 1k (bf16 and W12: tokens.ON 1 against 0); engine_speed
# at 1k with the loop profile (forcing, pipelined); paired at 1k, both loops, ON against OFF.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
timeout 200 python3 -m pytest -q tests/test_kernels.py tests/test_gpu.py \
    -k "argmax or embed_rows or cuda or fused_engine_passes_token_forcing" >"$OUT/tests.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/tests.log"; pack
V="on|;off|--switch kernels.tokens.ON=0"
TESTS_K='' ARMS="bf16;w12:auto" REPLAYS=15 TL_S=130 VARIANTS="$V" CONTEXT=1024 \
    bash "$(dirname "$0")/timeline.sh" | grep -E "^(bf16|w12\S*) .* (decode|verify|draft) +[0-9]"
unpack; pack
engine 1024 loop 110 --loop-profile 1 --taus 6.55
grep -E "pipelined step on the device|others a step" "$OUT/engine-loop.log" | cut -c1-700
pack
engine 1024 paired 150 --paired-rounds 6 --paired "pp|--pipeline 1;\
ppoff|--pipeline 1 --switch kernels.tokens.ON=0;base|;off|--switch kernels.tokens.ON=0"
pack; archive_only
