#!/usr/bin/env bash
# Device call (~5 min, no carry): W12 on the H200. (1) The W12 GPU tests (TESTS_K: only those
# a pytest -k expression selects); (2) the kernel table at ROWS (default 1 and 16; empty: none)
# with the default tiles; SWEEP=1 adds the tile sweep (GRID: full, ~1-3 min a row count, or a
# small family with variants, e.g. GRID=acc,esc,halves,all; in 16 processes); (3) end to end
# at 1k, W12 against bf16, plus the W12 arms named in W12_ARMS (comma-separated:
# sum_in_kernel, acc_scale, esc_in_loop, halves, all, old_one_row, none; ~1 min each); PAIRED=N
# then N interleaved rounds of every arm (speed-ups with 95% intervals; ~1 s a round an arm);
# KPROF=1 each arm's GPU time by kernel of eager forwards. E2E=0 skips (3).
set -u
export PYTHONPATH=$PWD/src:$PWD
timeout "${TESTS_S:-240}" python3 -m pytest -q -p no:cacheprovider tests/test_w12_kernels.py \
    ${TESTS_K:+-k "$TESTS_K"} >"$OUT/gpu-tests.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/gpu-tests.log"
sweep=--no-sweep; [ "${SWEEP:-0}" = 1 ] && sweep="--grid ${GRID:-full}"
timeout "${TABLE_S:-280}" python3 bench/w12_speed.py --rows "${ROWS-1,16}" $sweep --e2e 0 \
    --out "$OUT/w12-table.json" >"$OUT/w12-table.log" 2>&1
echo "w12 table rc=$?"; grep -E "^ +(1|16) " "$OUT/w12-table.log" | cut -c1-240
[ "${E2E:-1}" = 1 ] || exit 0
timeout "${E2E_S:-420}" python3 bench/w12_speed.py --rows '' --e2e 1024 \
    --w12-arms "${W12_ARMS:-}" --paired "${PAIRED:-0}" --kernel-profile "${KPROF:-0}" \
    --out "$OUT/w12-e2e.json" \
    >"$OUT/w12-e2e.log" 2>&1
echo "e2e rc=$?"; grep "^e2e" "$OUT/w12-e2e.log" | cut -c1-300
