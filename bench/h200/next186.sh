#!/usr/bin/env bash
# Device call (~9 min + cold start; no carry), session 37, after run 184 (next185.sh, on an
# H100): every W_LEFT tiles file there made the FP8 draft 0.806 -> ~0.93 ms, because
# skinny_linear built an FP8 tile over the shape's bf16 tile (tiles file included); fixed by
# linear.fp8_tile_config. Here, on whatever card comes (print it):
# 1. the GPU tests not run since their last change (wide-path test, fused FP8 drafter);
# 2. run 184's composed W_LEFT tiles (bench/h200/tiles186/composed-h100.json) paired against
#    the base again, the draft now untouched: run 184 read spec 0.987x with the leak;
# 3. next184.sh's paired check without its sweeps: loaded drafter against FP8 up to 64 rows
#    (16-row tiles) at 2 and 4 sequences;
# 4. issue 7's end-to-end pair (W12 "auto" against bf16, 1k, 4 paired rounds) on this card.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.log"
TESTS_K="wide_blocks or fused_fp8" TESTS_S=60 gpu_tests tests/test_fp8.py
C=bench/h200/tiles186/composed-h100.json
engine 1024 paired 100 --paired-rounds 8 --paired "base|;composed|--tiles $C"
grep "^paired" "$OUT/engine-paired.log"
pack
S="--switch engine.generator.FP8_DRAFT_MAX_ROWS=64"
for batch in 2 4; do
    engine 1024 paired-b$batch 80 --paired-rounds 5 --paired-batch $batch --paired "loaded|;fp8|$S"
    grep "^paired" "$OUT/engine-paired-b$batch.log"
    pack
done
timeout 170 python3 bench/w12_speed.py --rows '' --e2e 1024 --model qwen3-8b \
    --w12-matrices auto --paired 4 --out "$OUT/e2e-1024.json" >"$OUT/e2e-1024.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e-1024.log" | cut -c1-300
pack; archive_only
