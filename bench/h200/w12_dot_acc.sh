#!/usr/bin/env bash
# Device call (~9 min, a guess; no carry): the 16-row W12 tiles swept again with today's
# switches. Runs 67-68 chose them (32 weight rows, 2 warps) before ACC_SCALE, ESC_IN_LOOP and
# HALVES existed; run 73 tried ACC_SCALE on that family only, and it is now on for every tile.
# (1) w12_speed --rows 16 --grid dot_acc: W12_DOT_GRID's 180 tensor-core tiles, each with
# ACC_SCALE on and off, at every Qwen3-8B shape, cold L2; (2) end to end at 1k, paired rounds:
# bf16, W12 (today's tiles), W12 with the sweep's winners (arm w12_swept, over the compiled-in
# one-row tiles). Everything comes back in one all.tgz, packed after each step.
set -u
export PYTHONPATH=$PWD/src:$PWD
pack() { (cd "$OUT" && tar czf all.tgz -- *.json *.log 2>/dev/null); }
timeout "${SWEEP_S:-270}" python3 bench/w12_speed.py --rows 16 --grid dot_acc --e2e 0 \
    --out "$OUT/sweep16.json" >"$OUT/sweep16.log" 2>&1
echo "sweep rc=$?"; grep -E "^ *16 " "$OUT/sweep16.log" | cut -c1-220; pack
timeout "${E2E_S:-290}" python3 bench/w12_speed.py --rows '' --e2e 1024 \
    --tiles-from "$OUT/sweep16.json" --tiles-out "$OUT/w12-16row-tiles.json" \
    --paired "${ROUNDS:-6}" --out "$OUT/e2e.json" >"$OUT/e2e.log" 2>&1
echo "e2e rc=$?"; grep -E "^(paired|e2e|swept)" "$OUT/e2e.log" | cut -c1-300; pack
rm -f -- "$OUT"/*.json "$OUT"/*.log
