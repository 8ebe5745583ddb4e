#!/usr/bin/env bash
# Device call (~4 min, no carry): programmatic dependent launch and the skinny multiply's weight
# prefetch (EngineConfig.pdl: off / decode / all, weight_prefetch: off / tile / l2;
# kernels/launch.py). Runs 49-51 (docs/LOG.md).
# (1) the GPU tests: same bits / same tokens with and without, CUDA graphs included; (2) the
# Qwen3-8B shape at 1k context with each combination, in one process each (the switches are
# process-wide), plain first so that a failure of the new launches still leaves the baseline.
set -u
export PYTHONPATH=$PWD/src:$PWD
timeout "${TESTS_S:-150}" python3 -m pytest -q -p no:cacheprovider tests/test_kernels.py \
    -k "pdl or prefetch or fused_engine or launch" >"$OUT/gpu-tests.log" 2>&1
echo "pytest rc=$?"; tail -3 "$OUT/gpu-tests.log"
for combo in ${COMBOS:-off,off decode,off all,off}; do
    pdl=${combo%,*}; pre=${combo#*,}
    timeout "${ENGINE_S:-110}" python3 bench/engine_speed.py --contexts 1024 --new-tokens 128 \
        --hf-baseline 0 --torch-baseline 0 --profile 0 --batches '' --pdl "$pdl" \
        --weight-prefetch "$pre" --out "$OUT/pdl$pdl-prefetch$pre.json" \
        >"$OUT/pdl$pdl-prefetch$pre.log" 2>&1
    echo "pdl=$pdl prefetch=$pre rc=$?"; grep "ctx 1024:" "$OUT/pdl$pdl-prefetch$pre.log"
done
