#!/usr/bin/env bash
# Device call (~8.5 min + cold start; no carry): run 347, issue 7. Run 346 found w12_tokens'
# race: FENCE 0 off in 25 of 40 alternating runs at 16 tokens, FENCE 4 (a fence.proxy.async
# before a ring stage is freed) and 1 clean in 40 each; the SASS shows why (bench/
# sass_inflight.py: without the fence the stage's last LDS.128 are still in flight at the
# arrive that frees it). FENCE 4 is now the default. This call: w12_tokens' GPU tests; the
# probe with FENCE 4 and 0 (4 clean, 0 not, again); the probe on the engine's other kernels
# that free TMA-fed ring stages, as the engine runs them (w12_tc at 16 and 8 tokens, the
# verify's; w12_row's decode tile at one token: their SASS has only bf16 x reads and meta-warp
# slot reads in flight at an arrive, which no TMA copy overwrites); the 16-token table with the
# fence (its cost beside w12_tc in the same call); then, if the tests pass and FENCE 4 is
# clean, the Qwen3-8B end to end with w12_tokens.VERIFY (arm tokens_verify) paired 3 times
# against W12 base, with token forcing.
# Prediction: FENCE 4 clean, 0 off in most N-24576 runs; tc and row clean (0 columns off);
# table o at 16 tokens ~12.5 us (run 346's FENCE 7: 12.56); the end to end's spec +0.5-1.5%
# (run 345's verify graph -0.06 ms of ~4.7), AR unchanged, forcing passed.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="(cuda or compiles) and w12_tokens" TESTS_S=${TESTS_S:-150} \
    gpu_tests tests/test_w12_tokens.py
PROBE_SEEDS=1 PROBE_S=${PROBE_S:-60}
probe probe-tokens --fence 4,0
probe probe-tc --kernel tc --tokens 16,8
probe probe-row --kernel row --tokens 1
pack
timeout "${SPEED_S:-50}" python3 bench/w12_tokens_speed.py --tokens 16 \
    --out "$OUT/tokens-speed.json" 2>&1 | tee "$OUT/tokens-speed.log" | grep -v '^{'
pack
clean=$(python3 -c "import json; r = json.load(open('$OUT/probe-tokens.json'))['results']; \
c = [f for f in r if 'runs' in f and f['fence'] == 4]; \
print(int(bool(c) and sum(f['columns_off'] for f in c) == 0))" 2>/dev/null)
if tests_passed && [ "$clean" = 1 ] && [ "${E2E_S:-240}" != 0 ]; then
    w12_e2e e2e-1024 qwen3-8b tokens_verify "${PAIRED:-3}" "${E2E_S:-240}"
else
    echo "no end to end: tests passed? $(tests_passed && echo yes || echo no), FENCE 4 clean? $clean"
    grep -E "Error|assert|FAILED" "$OUT/gpu-tests.log" | head -10 | cut -c1-250
fi
pack
archive_only
