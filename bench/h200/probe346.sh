#!/usr/bin/env bash
# Device call (~4.5 min + cold start; no carry): run 346, issue 7. Where w12_tokens' outputs go
# wrong at 16 tokens (runs 344-345, H100: rarely, one output column of a tile off in 13-16
# tokens; at N 4096 2 of 30 runs, each the first run on its data; gate|up's check at N 24576 off
# in both tiles). The emulator, which interleaves the partitions at random, finds no fault
# (session 72: 120 schedules), so it is an ordering the GPU keeps and the emulator does not
# model.
# bench/w12_tokens_probe.py alternates two problems' runs (each run's shared memory last written
# on other data, so a read before its data lands shows), fits each column off to one weight, one
# scale group of its row, one block and its escape sums, and runs each configuration with
# w12_tokens.FENCE 0, 7, 1, 2, 4 (bits: fence.acq_rel.cta at the partitions' hand-offs, a
# fence.mbarrier_init after the barriers' init, a fence.proxy.async before a stage is freed),
# within PROBE_S. Then the 16-token table with FENCE 0 and 7 (its cost; gate|up checked).
# Prediction: FENCE 0 off in several runs a configuration (the alternation shows what
# back-to-back runs hid); if a FENCE value is clean where 0 is not, its fence is the missing
# order (on by default then, its cost from the table); if none is, the fits say where to look
# (a scale group with a = 2^d - 1: the scale words; -1 on the escapes: the escape sums).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
timeout $((${PROBE_S:-200} + 60)) python3 bench/w12_tokens_probe.py \
    --shapes 4096x4096,24576x4096 --tokens 16 --seeds "${SEEDS:-1}" --pairs "${PAIRS:-5}" \
    --fence "${FENCES:-0,7,1,2,4}" --seconds "${PROBE_S:-200}" --out "$OUT/tokens-probe-16.json" \
    2>&1 | tee "$OUT/tokens-probe-16.log" | grep -v "^{" | cut -c1-200
for f in ${SPEED_FENCES:-0 7}; do
    [ "${SPEED_S:-60}" = 0 ] && break
    timeout "${SPEED_S:-60}" python3 bench/w12_tokens_speed.py --tokens 16 --fence "$f" \
        --out "$OUT/tokens-speed-fence$f.json" 2>&1 |
        tee "$OUT/tokens-speed-fence$f.log" | grep -v '^{' | sed "s/^/FENCE $f: /"
done
pack
archive_only
