#!/usr/bin/env bash
# Device call (~9 min, no carry): W12's joined-slice tensor-core tiles (w12_linear WIDE: one
# product of depth 256 a block instead of 8 of depth 32; in the sm_90 SASS the loop's barriers
# drop from 20 to 2). (1) The W12 GPU tests (WIDE tiles against the reference on the GPU);
# (2) the 16-row kernel table with the "wide" column and the sweep with WIDE candidates; (3) end
# to end at 1k, W12 against bf16, without and with WIDE default tiles, one process each.
set -u
export PYTHONPATH=$PWD/src:$PWD
timeout "${TESTS_S:-150}" python3 -m pytest -q -p no:cacheprovider tests/test_w12_kernels.py \
    >"$OUT/gpu-tests.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/gpu-tests.log"
timeout "${SWEEP_S:-200}" python3 bench/w12_speed.py --rows 16 --e2e 0 --out "$OUT/w12-16.json" \
    >"$OUT/w12-16.log" 2>&1
echo "w12 16-row sweep rc=$?"; grep "^ 16 " "$OUT/w12-16.log" | cut -c1-70
for wide in 0 1; do
    timeout "${E2E_S:-150}" python3 bench/w12_speed.py --rows '' --e2e 1024 --wide $wide \
        --out "$OUT/w12-e2e-wide$wide.json" >"$OUT/w12-e2e-wide$wide.log" 2>&1
    echo "e2e wide=$wide rc=$?"; grep "^e2e" "$OUT/w12-e2e-wide$wide.log"
done
