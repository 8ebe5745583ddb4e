#!/usr/bin/env bash
# Device call: the W12 v2 kernels (first GPU run of their inline PTX), their speed and end to
# end, then the engine's batch-1 speed with and without EngineConfig.pipeline and its batched
# speculative steps (8 and 32 rows, no server). Each part has its own time limit; results in $OUT.
set -u
export PYTHONPATH=$PWD/src:$PWD
nvidia-smi --query-gpu=name,memory.used --format=csv,noheader
timeout "${TESTS_S:-150}" python3 -m pytest -q -p no:cacheprovider tests/test_w12_kernels.py \
    tests/test_kernels.py tests/test_gpu.py >"$OUT/gpu-tests.log" 2>&1
echo "pytest rc=$?"; tail -4 "$OUT/gpu-tests.log"
timeout "${W12_S:-200}" python3 bench/w12_speed.py --rows 1,16 --out "$OUT/w12-speed.json" \
    >"$OUT/w12-speed.log" 2>&1
echo "w12_speed rc=$?"; grep -v '^{' "$OUT/w12-speed.log" | tail -16
timeout "${ENGINE_S:-200}" python3 bench/engine_speed.py --contexts "${CONTEXTS:-1024}" \
    --hf-baseline 0 --torch-baseline 0 --profile 0 --batches 8,32 \
    --out "$OUT/engine-speed.json" >"$OUT/engine-speed.log" 2>&1
echo "engine_speed rc=$?"; grep -v '^{' "$OUT/engine-speed.log" | tail -12
