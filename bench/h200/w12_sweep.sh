#!/usr/bin/env bash
# Device call (no carry): W12 at the Qwen3-8B shape. TESTS_K: first, the tests/test_w12_kernels.py
# tests it selects (pytest -k), within TESTS_S (120). GRID: then a 16-row tile sweep
# (w12_speed.py --rows 16 --grid GRID --e2e 0, cold L2), within SWEEP_S (270). Then end to end
# at 1k, bf16 against W12 in ROUNDS (6) paired rounds, with the sweep's winners as one more arm
# (w12_swept, over the compiled-in tiles) when GRID is set, and W12_ARMS (w12_speed --w12-arms)
# if given, within E2E_S (290). Everything comes back in one all.tgz, packed after each step.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TESTS_S_DEFAULT=120 gpu_tests tests/test_w12_kernels.py
swept=()
if [ -n "${GRID:-}" ]; then
    timeout "${SWEEP_S:-270}" python3 bench/w12_speed.py --rows 16 --grid "$GRID" --e2e 0 \
        --out "$OUT/sweep16.json" >"$OUT/sweep16.log" 2>&1
    echo "sweep rc=$?"; grep -E "^ *16 " "$OUT/sweep16.log" | cut -c1-220; pack
    swept=(--tiles-from "$OUT/sweep16.json" --tiles-out "$OUT/w12-16row-tiles.json")
fi
arms=()
[ -n "${W12_ARMS:-}" ] && arms=(--w12-arms "$W12_ARMS")
timeout "${E2E_S:-290}" python3 bench/w12_speed.py --rows '' --e2e 1024 "${swept[@]}" "${arms[@]}" \
    --paired "${ROUNDS:-6}" --out "$OUT/e2e.json" >"$OUT/e2e.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e|swept)" "$OUT/e2e.log" | cut -c1-300; pack
archive_only
