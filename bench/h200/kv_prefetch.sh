#!/usr/bin/env bash
# Device call (~6 min, a guess; no carry): the split programs asking L2 for their slices' keys
# and values before the PDL wait (kernels/attention.KV_PREFETCH_KEYS, new). (1) the attention
# GPU tests with it; (2) Qwen3-8B shape, paired arms in one process at 1k, 8k and 32k contexts
# (today's defaults against prefetching the first 128 / 512 keys of each slice: at 1k a slice
# is 64 keys, at 8k 256, at 32k 1,024). Everything comes back in one all.tgz.
set -u
export PYTHONPATH=$PWD/src:$PWD
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_kernels.py \
    -k "kv_prefetch or decode_attention" >"$OUT/gpu-tests.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/gpu-tests.log"
for part in "1024|new|;kv|--attention-kv-prefetch 128" \
            "8192|new|;kv|--attention-kv-prefetch 128;kv512|--attention-kv-prefetch 512" \
            "32768|new|;kv|--attention-kv-prefetch 128;kv512|--attention-kv-prefetch 512"; do
    ctx=${part%%|*}
    timeout "${PAIRED_S:-150}" python3 bench/engine_speed.py --contexts "$ctx" \
        --paired "${part#*|}" --paired-rounds "${ROUNDS:-8}" \
        --out "$OUT/paired-$ctx.json" >"$OUT/paired-$ctx.log" 2>&1
    echo "paired $ctx rc=$?"; grep "^paired" "$OUT/paired-$ctx.log" | cut -c1-200
done
(cd "$OUT" && tar czf all.tgz -- *.json *.log && rm -f -- *.json *.log)
