#!/usr/bin/env bash
# Device call (~5 min, a guess; no carry): run 115's 16-row W12 tiles as the committed default
# (kernels/w12_linear.MEASURED_TILES). (1) the W12 kernel tests on the GPU, the Qwen3-8B tiles
# among them; (2) end to end at 1k, bf16 against W12 in paired rounds, token forcing.
set -u
export PYTHONPATH=$PWD/src:$PWD
pack() { (cd "$OUT" && tar czf all.tgz -- *.json *.log 2>/dev/null); }
timeout "${TESTS_S:-150}" python3 -m pytest -q -p no:cacheprovider tests/test_w12_kernels.py \
    -k "qwen3_8b_tiles or test_w12_linear" >"$OUT/gpu-tests.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/gpu-tests.log"; pack
timeout "${E2E_S:-260}" python3 bench/w12_speed.py --rows '' --e2e 1024 --paired "${ROUNDS:-6}" \
    --out "$OUT/e2e.json" >"$OUT/e2e.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e.log" | cut -c1-300; pack
rm -f -- "$OUT"/*.json "$OUT"/*.log
