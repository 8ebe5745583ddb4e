#!/usr/bin/env bash
# Device call (~2-6 min; no carry): the kernel timeline (bench/timeline.py) of the decode, verify
# and draft forwards inside their CUDA graphs, for ARMS (default "bf16;w12:auto") at MODEL
# (qwen3-8b) and CONTEXT (1024), REPLAYS (30) replays each, one process for each tiles file of
# TILES ("-": the compiled-in tiles; default "-"), each within TL_S (420) seconds; with VARIANTS
# (timeline.py --variants: engine_speed --paired arms) instead one process that measures each arm
# with each variant on the same models; first the GPU tests that TESTS_K selects in
# tests/test_trace.py (default: all of them; '' for none).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
TESTS_K="${TESTS_K-trace or timeline or marks}" TESTS_S_DEFAULT=150 gpu_tests tests/test_trace.py
for tiles in ${TILES:--}; do
    name=$(basename "$tiles" .json); [ "$tiles" = - ] && name=compiled && tiles=
    chosen=(--tiles "$tiles")
    [ -n "${VARIANTS:-}" ] && name=variants-${CONTEXT:-1024}${MODEL:+-$MODEL} \
        && chosen=(--variants "$VARIANTS")
    timeout "${TL_S:-420}" python3 bench/timeline.py --model "${MODEL:-qwen3-8b}" \
        --context "${CONTEXT:-1024}" --arms "${ARMS:-bf16;w12:auto}" --replays "${REPLAYS:-30}" \
        "${chosen[@]}" --out "$OUT/timeline-$name.json" >"$OUT/timeline-$name.log" 2>&1
    echo "timeline $name rc=$?"
    if [ -n "${VARIANTS:-}" ]; then  # the closing table only
        sed -n '/^arm .*forward/,/^{/p' "$OUT/timeline-$name.log" | grep -v '^{' | cut -c1-240
    else
        grep -E "^(bf16|w12|  linear 1x|  w12_linear 1x|  [a-z_]+ +[0-9])|b2b| (decode|verify|draft) " \
            "$OUT/timeline-$name.log" | cut -c1-200
    fi
    pack
done
archive_only
