#!/usr/bin/env bash
# Device call (~7 min, no carry): W12's joined-slice tensor-core tiles (w12_linear WIDE: one
# product of depth 256 a block instead of 8 of depth 32; in the sm_90 SASS the loop's barriers
# drop from 20 to 2). (1) The W12 GPU tests (WIDE tiles against the reference on the GPU);
# (2) the 16-row kernel table with the "wide" column (default tiles, no sweep); (3) end to end
# at 1k, W12 against bf16, without and with WIDE default tiles, one process each. SWEEP=1 adds
# the 16-row sweep with WIDE candidates (~3-4 min more: then skip the end to end, E2E=0);
# BF16_SWEEP=1 adds the bf16 16-row sweep, whose candidates now include TRANS tiles (~2 min).
set -u
export PYTHONPATH=$PWD/src:$PWD
timeout "${TESTS_S:-150}" python3 -m pytest -q -p no:cacheprovider tests/test_w12_kernels.py \
    >"$OUT/gpu-tests.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/gpu-tests.log"
sweep=--no-sweep; [ "${SWEEP:-0}" = 1 ] && sweep=
timeout "${SWEEP_S:-280}" python3 bench/w12_speed.py --rows 16 $sweep --e2e 0 \
    --out "$OUT/w12-16.json" >"$OUT/w12-16.log" 2>&1
echo "w12 16-row table rc=$?"; grep "^ 16 " "$OUT/w12-16.log" | cut -c1-80
if [ "${BF16_SWEEP:-0}" = 1 ]; then
    timeout 200 python3 bench/kernel_sweep.py --rows 16 --grid quick --l2 cold \
        --out "$OUT/sweep16.json" >"$OUT/sweep16.log" 2>&1
    echo "bf16 sweep rc=$?"; grep "^M=" "$OUT/sweep16.log"
fi
[ "${E2E:-1}" = 1 ] || exit 0
for wide in 0 1; do
    timeout "${E2E_S:-170}" python3 bench/w12_speed.py --rows '' --e2e 1024 --wide $wide \
        --out "$OUT/w12-e2e-wide$wide.json" >"$OUT/w12-e2e-wide$wide.log" 2>&1
    echo "e2e wide=$wide rc=$?"; grep "^e2e" "$OUT/w12-e2e-wide$wide.log"
done
