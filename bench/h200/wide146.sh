#!/usr/bin/env bash
# Device call (~7 min; no carry): run 146, after run 145 with launch.WIDE_PDL 2 and
# ONE_WAVE_SHARED 120 KB as defaults. The GPU tests of the launch rules, every generation path
# against transformers (tests/test_gpu.py) and the fused engine's token forcing (bf16, W12,
# mixed); then W12 "auto" against bf16 end to end at 1k, 5 paired rounds (issue 7).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
timeout 260 python3 -m pytest -q tests/test_kernels.py tests/test_gpu.py \
    -k "pdl or wide or shared or cuda or fused_engine_passes_token_forcing" >"$OUT/tests.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/tests.log"
timeout 280 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-matrices auto --paired 5 --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-1024.log" | cut -c1-300
pack; archive_only
