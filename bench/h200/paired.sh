#!/usr/bin/env bash
# Device call: engine arms in ONE process on one model, interleaved rounds (engine_speed
# --paired): each arm's AR and replayed spec@6.55 speed-up over the first arm with a 95%
# bootstrap interval, for differences of 1-2% that separate processes cannot tell apart.
# PAIRED: "name|options;name|options;..." (engine options and module switches only, e.g.
# "base|;pk|--pdl kernels;ep|--swiglu-epilogue 0"); ROUNDS (8), CONTEXT (1024), MODELS
# (qwen3-8b), PAIRED_S: the process's timeout in seconds (420).
set -u
export PYTHONPATH=$PWD/src:$PWD
timeout "${PAIRED_S:-420}" python3 bench/engine_speed.py --contexts "${CONTEXT:-1024}" \
    --models "${MODELS:-qwen3-8b}" --paired "$PAIRED" --paired-rounds "${ROUNDS:-8}" \
    --out "$OUT/paired.json" >"$OUT/paired.log" 2>&1
echo "paired rc=$?"; grep "^paired" "$OUT/paired.log" | cut -c1-200
