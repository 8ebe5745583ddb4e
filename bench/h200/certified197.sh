#!/usr/bin/env bash
# Device call A (~4 min + cold start; no carry), session 39: the certified LM head
# (formats/certified.py, EngineConfig.target_head "certified"): the argmax from an int8 copy of
# the head (622 MB against 1,245 MB at the Qwen3-8B shape) and the bf16 rows of the few
# candidates that the bound leaves. 1. tests/test_certified.py on the GPU (the kernel compiled
# for sm_90: tokens against the exact head, packing, generation with token forcing). 2. The
# timeline, Qwen3-8B at 1k: the exact head twice, the certified head on the rules' tile and on
# the tiles of bench/h200/certified197 (one row: tensor-core BLOCK_N 64-256, an element-wise
# tile; 16 rows: BLOCK_N 128 in c1). Prediction: the one-token forward 4.08 -> 3.93-3.97 ms
# (the head 296 -> ~150-170 us), the 16-token forward -100 to -140 us; 60% that some tile
# reaches it, 25% that the epilogue's atomics or the first wave's candidates eat half of it.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.log"
TESTS_K="test_" TESTS_S=200 gpu_tests tests/test_certified.py
C="--target-head certified"
T=bench/h200/certified197
variants bf16 "exact|;cert|$C;c1|$C --tiles $T/c1.json;c1nodefer|$C --tiles $T/c1.json --switch \
kernels.certified.DEFER_TILES=0;c2|$C --tiles $T/c2.json;c3|$C --tiles \
$T/c3.json;c4|$C --tiles $T/c4.json;e1|$C --tiles $T/e1.json;exact2|" 200
pack; archive_only
