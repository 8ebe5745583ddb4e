#!/usr/bin/env bash
# Device call: engine arms in ONE process on one model, interleaved rounds (engine_speed
# --paired): each arm's AR and replayed spec@6.55 speed-up over the first arm with a 95%
# bootstrap interval, for differences of 1-2% that separate processes cannot tell apart.
# PAIRED: "name|options;name|options;..." (engine options and module switches only, e.g.
# "base|;pk|--pdl kernels;ep|--swiglu-epilogue 0"); ROUNDS (8), CONTEXTS (1024; several: one
# process each), MODELS (qwen3-8b), PAIRED_S: each process's timeout in seconds (420).
# TESTS_K: first, the tests/test_kernels.py tests it selects (pytest -k), within TESTS_S (90).
# Everything comes back in one all.tgz, packed after each step (a call cut at the device's
# limit keeps what finished; a call returns at most 8 files).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
gpu_tests tests/test_kernels.py
for ctx in ${CONTEXTS:-${CONTEXT:-1024}}; do
    timeout "${PAIRED_S:-420}" python3 bench/engine_speed.py --contexts "$ctx" \
        --models "${MODELS:-qwen3-8b}" --paired "$PAIRED" --paired-rounds "${ROUNDS:-8}" \
        --out "$OUT/paired-$ctx.json" >"$OUT/paired-$ctx.log" 2>&1
    echo "paired $ctx rc=$?"; grep "^paired" "$OUT/paired-$ctx.log" | cut -c1-200
    pack
done
archive_only
