#!/usr/bin/env bash
# Device call (~4 min warm; no carry), session 36: issue 7's end-to-end row (W12 "auto" against
# bf16, 1k, 5 paired rounds) now that both arms draft with the FP8 drafter and head (the CUDA
# default since run 180): W12 helps only the target's forwards. Run 160 before FP8: AR 1.088x,
# spec@6.55 1.039x.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
timeout 330 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-matrices auto --paired 5 --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-1024.log" | cut -c1-300
pack; archive_only
