#!/usr/bin/env bash
# Device call (~9 min + cold start; no carry), session 39: the certified LM head
# (formats/certified.py, EngineConfig.target_head "certified"): the argmax from an int8 copy of
# the head (622 MB against 1,245 MB at the Qwen3-8B shape) and the bf16 rows of the candidates
# its bound leaves (the first 2 x SMs tiles' checks deferred to the last tiles).
# 1. tests/test_certified.py on the GPU. 2. The timeline, Qwen3-8B at 1k: the exact head twice,
# the certified head on the rules' tiles and on bench/h200/certified197's (one row: tensor-core
# BLOCK_N 64-256; c1 also 16 rows on BLOCK_N 128; c1 once without the deferral). 3. The fastest
# certified variant (decode + verify back to back, pick_variant.py) paired against the exact
# head (6 rounds, both loops), then issue 3's 1k row with it (token forcing).
# Prediction: the one-token forward 4.08 -> 3.93-3.97 ms (the head 296 -> ~150-170 us), verify
# -100 to -140 us; AR +3-4% (pipelined ~249-253 tok/s), spec@6.55 +2-3%; forcing passes.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.log"
TESTS_K="test_" TESTS_S=100 gpu_tests tests/test_certified.py
T=bench/h200/certified197
declare -A V=([cert]="" [c1]="--tiles $T/c1.json" [c3]="--tiles $T/c3.json"
    [c4]="--tiles $T/c4.json")
C="--target-head certified"
variants bf16 "exact|;cert|$C;c1|$C ${V[c1]};c1nodefer|$C ${V[c1]} --switch \
kernels.certified.DEFER_TILES=0;c3|$C ${V[c3]};c4|$C ${V[c4]};exact2|" 190
pack
best=$(python3 bench/h200/pick_variant.py "$OUT/timeline-variants-1024.json" c | tail -1)
echo "picked: $best"
[ -n "${V[$best]+x}" ] || best=cert
engine 1024 paired 120 --paired-rounds 6 --taus 6.55 --paired "exact|;certified|$C ${V[$best]}"
grep "^paired" "$OUT/engine-paired.log" | cut -c1-300
pack
engine 1024 cert 130 $C ${V[$best]}
pack; archive_only
