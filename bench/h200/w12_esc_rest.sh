#!/usr/bin/env bash
# Device call (~7 min, a guess; no carry): each row's escapes after its first, several at once
# (kernels/w12_linear.ESC_REST). (1) the W12 GPU tests of it and of run 123's tiles; (2) the
# kernel table at 1 and 16 rows, default tiles (no sweep): each shape's default, with ESC_REST 2
# and 4, and with the escape table emptied (a bound), within TABLE_S (150); (3) end to end at
# 1k: bf16, W12 and W12 with ESC_REST 2 and 4 (arms w12_esc_rest2/4, the same models) in ROUNDS
# (4) paired rounds, within E2E_S (330). (Run 126 ran this call with ESC_AHEAD in its place.)
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TESTS_S_DEFAULT=150 TESTS_K="${TESTS_K-several_at_once or measured_tiles or unswept}" \
    gpu_tests tests/test_w12_kernels.py
timeout "${TABLE_S:-150}" python3 bench/w12_speed.py --rows 1,16 --no-sweep --e2e 0 \
    --out "$OUT/table.json" >"$OUT/table.log" 2>&1
echo "table rc=$?"; grep -E "M=" "$OUT/table.log" | cut -c1-160; pack
timeout "${E2E_S:-330}" python3 bench/w12_speed.py --rows '' --e2e 1024 \
    --w12-arms esc_rest2,esc_rest4 --paired "${ROUNDS:-4}" --out "$OUT/e2e.json" \
    >"$OUT/e2e.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e)" "$OUT/e2e.log" | cut -c1-300; pack
archive_only
