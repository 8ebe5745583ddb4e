#!/usr/bin/env bash
# Device call (~4.5 min + cold start; no carry): run 346, issue 7. Where w12_tokens' outputs go
# wrong at 16 tokens (run 345, H100: 2 of 30 runs at N 4096, each the first run on its data,
# one output column of a tile off; the gate_up check at N 24576 off in both tiles).
# bench/w12_tokens_probe.py alternates two problems' runs, so that each run's shared memory was
# last written on other data (a read before its write has landed then shows), and fits each
# column off to one weight, one scale group of its row, one block, and its escape sums; each
# configuration with w12_tokens.FENCE off and on (a fence.acq_rel.cta at every hand-off between
# the partitions).
# Prediction: many more columns off than run 345's first-run-only pair; if the fits say one
# scale group (left ~0, a a power of 2 less 1), the meta warp's scale words are read before
# they are written; the escape fit, its escape sums; neither, the planes. If FENCE on is clean
# where off is not, the partitions' shared-memory hand-offs need the fence.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
timeout "${PROBE_S:-150}" python3 bench/w12_tokens_probe.py --shapes 4096x4096,24576x4096 \
    --tokens 16 --seeds "${SEEDS:-2}" --pairs "${PAIRS:-6}" --out "$OUT/tokens-probe-16.json" 2>&1 | tee "$OUT/tokens-probe-16.log" |
    grep -v "^{"
[ "${NINE_S:-60}" = 0 ] || timeout "${NINE_S:-60}" python3 bench/w12_tokens_probe.py --shapes 4096x4096 --tokens 9,8 --seeds 1 --show 8 \
    --out "$OUT/tokens-probe-9.json" 2>&1 | tee "$OUT/tokens-probe-9.log" | grep -v "^{"
# the table at 16 tokens with FENCE off and on (its cost, and gate|up's check at N 24576)
for f in 0 1; do
    timeout "${SPEED_S:-60}" python3 -c "import runpy, sys
from specpilot.kernels import w12_tokens
w12_tokens.FENCE = bool($f)
sys.argv = ['w12_tokens_speed.py', '--tokens', '16', '--out', '$OUT/tokens-speed-fence$f.json']
runpy.run_path('bench/w12_tokens_speed.py', run_name='__main__')" 2>&1 |
        tee "$OUT/tokens-speed-fence$f.log" | grep -v '^{' | sed "s/^/fence $f: /"
done
pack
archive_only
