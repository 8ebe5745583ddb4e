#!/usr/bin/env bash
# Device call (~3 min, a guess; no carry): the split attention's loop pipeline depth
# (kernels/attention.SPLIT_STAGES; Triton's default 3 until now). Run 117's Nsight Compute
# counters: the 16-token split kernel holds 115 KB of shared memory for a 3-stage key pipeline
# while at 1k each slice is one loop step. (1) the GPU test of 1 and 2 stages; (2) Qwen3-8B
# shape, paired arms over today's defaults: 1 and 2 stages everywhere, 1 stage in verify and
# draft blocks only. CONTEXTS and ROUNDS as q_rows.sh. Everything comes back in one all.tgz.
set -u
ARMS="new|;st1|--attention-stages 1;st2|--attention-stages 2;w1|--attention-stages wide=1"
export PYTHONPATH=$PWD/src:$PWD
pack() { (cd "$OUT" && tar czf all.tgz -- *.json *.log 2>/dev/null); }
timeout "${TESTS_S:-90}" python3 -m pytest -q -p no:cacheprovider tests/test_kernels.py \
    -k "split_stages" >"$OUT/gpu-tests.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/gpu-tests.log"; pack
for ctx in ${CONTEXTS:-1024 8192}; do
    timeout "${PAIRED_S:-240}" python3 bench/engine_speed.py --contexts "$ctx" \
        --paired "$ARMS" \
        --paired-rounds "${ROUNDS:-6}" --out "$OUT/paired-$ctx.json" >"$OUT/paired-$ctx.log" 2>&1
    echo "paired $ctx rc=$?"; grep "^paired" "$OUT/paired-$ctx.log" | cut -c1-200
    pack
done
rm -f -- "$OUT"/*.json "$OUT"/*.log
