#!/usr/bin/env bash
# Device call (~5 min, no carry): attention slices of at least N keys (kernels/attention.
# MIN_SPLIT_KEYS) at the Qwen3-8B shape, 1k and 8k contexts. GPU tests first (attention, the
# in-kernel merge, W12 one-row tiles), then engine_speed per N (one process each).
set -u
export PYTHONPATH=$PWD/src:$PWD
timeout 120 python3 -m pytest -q -x tests/test_kernels.py -k "attention or fused_merge" 2>&1 | tail -2
for keys in ${KEYS:-64 256 512 1024}; do
    timeout 120 python3 bench/engine_speed.py --contexts "${CONTEXTS:-1024,8192}" --batches '' \
        --profile 0 --hf-baseline 0 --repeats 3 --attention-min-keys "$keys" \
        --out "$OUT/keys-$keys.json" >"$OUT/keys-$keys.log" 2>&1
    echo "min keys $keys rc=$?"; grep "ctx [0-9]*:" "$OUT/keys-$keys.log" | cut -c1-250
done
