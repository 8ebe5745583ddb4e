#!/usr/bin/env bash
# Device call: GPU tests (kernels, engine vs transformers, W12 kernels) and bench/w12_speed.py.
# Also parks the first half of the SmolLM2 GGUF (.carry/c1/p1) in ~/sp for the training call.
# Run from the repository root on the H200; results go to $OUT.
set -u
export PYTHONPATH=$PWD/src:$PWD
mkdir -p ~/sp && { [ -f .carry/c1/p1 ] && cp .carry/c1/p1 ~/sp/p1; ls -la ~/sp; }
nvidia-smi --query-gpu=name,memory.used,clocks.max.sm --format=csv,noheader
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_kernels.py tests/test_gpu.py \
    tests/test_w12_kernels.py >"$OUT/gpu-tests.log" 2>&1
echo "pytest rc=$?"; tail -4 "$OUT/gpu-tests.log"
timeout 330 python3 bench/w12_speed.py --rows 1,16 --out "$OUT/w12-speed.json" \
    >"$OUT/w12-speed.log" 2>&1
echo "w12_speed rc=$?"; grep -v '^{' "$OUT/w12-speed.log" | tail -25
