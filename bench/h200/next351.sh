#!/usr/bin/env bash
# Device call (~6.5 min + cold start; no carry): run 351, issues 7 and 3 (the bf16 baseline).
# Session 73 (CPU): bench/sass_inflight.py finds bf16_row's residual decode tile (the bf16 o and
# down) freeing a ring stage with 2 ldmatrix loads of it still in flight, the order whose lack
# made w12_tokens race (run 346); w12_row's FENCE is now on for bf16 tiles (-1), untimed. This
# call: the probe on bf16_row's residual tile (N 4096 at K 4096 and 12288, one token, 3 seeds,
# PDL on and off, runs alternating two problems) with the fence (-1) and without (0); then the
# bf16 decode graph back to back with it (base, base2) and without (BF16_ONE_ROW_TILE 16: nof,
# nof2), Qwen3-8B. Then w12_tc.HANDED_RSTD_LATE (the handed norm's 1 / RMS summed at each
# unit's end, its squares' loads in flight over the first unit: gate|up and q|k|v in the
# verify) in the W12 verify graph back to back: base, late, base2, late2.
# Prediction: with the fence 0 runs off; without, a few or none (the w12_tokens race showed at
# 16 tokens, where a stage's last mmas read after the free; bf16_row's FMAs read the ldmatrix
# registers soon after); the fence's cost under 0.02 ms a decode (36 x 2 launches, a stage's
# wait for loads the FMAs need next anyway); late 0.03-0.07 ms under base / base2 (run 349's
# gate|up and q|k|v wait ~1 us longer after the kernel before than the down), if the squares'
# loads are what holds them.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
PROBE_S=110 probe probe-bf16row --kernel bf16row --tokens 1 --fence=-1,0 \
    --shapes 4096x4096,4096x12288
pack
MODEL=qwen3-8b variants "bf16" "base|;nof|$(sw w12_row.BF16_ONE_ROW_TILE=16);base2|;nof2|\
$(sw w12_row.BF16_ONE_ROW_TILE=16)" "${VAR_S:-150}" | grep decode
back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
for f in "$OUT"/timeline-variants-1024-qwen3-8b.*; do  # (the next variants write the same names)
    mv "$f" "${f/variants-1024-qwen3-8b/bf16-fence}"
done
pack
MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" "base|;late|$(sw w12_tc.HANDED_RSTD_LATE=1);\
base2|;late2|$(sw w12_tc.HANDED_RSTD_LATE=1)" "${VAR_S:-150}" | grep verify
back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
pack
archive_only
