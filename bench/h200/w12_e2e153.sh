#!/usr/bin/env bash
# Device call (~3 min warm; no carry): run 153, W12 "auto" and every matrix against bf16 end to
# end at 1k, 5 paired rounds (issue 7), after EVEN_SHARED 1 and kernels/tokens.py became
# defaults (run 146's second half; run 153 ran these lines as one command, warm after run 152).
set -u
export PYTHONPATH=$PWD/src:$PWD
timeout 330 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-matrices auto --paired 5 --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-1024.log" | cut -c1-300
