#!/usr/bin/env bash
# Device call (~6 min, a guess; no carry): the verify and draft blocks' attention split into
# programs of WIDE_Q_ROWS query rows (kernels/attention.py; ptxas: the causal 64-row launch's
# 752 spilled bytes a thread fall to 32-40). (1) the attention GPU tests and the engine test
# with it; (2) Qwen3-8B shape, paired arms in one process at 1k and 8k: today's defaults
# against 16 and 32 rows a program, and the one-row launches' in-kernel merge (--merge-rows 8:
# level in run 57, under pdl "decode"; not measured under "chain"). Everything comes back in one all.tgz.
set -u
export PYTHONPATH=$PWD/src:$PWD
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_kernels.py \
    -k "query_row or decode_attention" >"$OUT/gpu-tests.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/gpu-tests.log"
for ctx in ${CONTEXTS:-1024 8192}; do
    timeout "${PAIRED_S:-170}" python3 bench/engine_speed.py --contexts "$ctx" \
        --paired "new|;q16|--attention-q-rows 16;q32|--attention-q-rows 32;m8|--merge-rows 8" \
        --paired-rounds "${ROUNDS:-8}" --out "$OUT/paired-$ctx.json" >"$OUT/paired-$ctx.log" 2>&1
    echo "paired $ctx rc=$?"; grep "^paired" "$OUT/paired-$ctx.log" | cut -c1-200
done
(cd "$OUT" && tar czf all.tgz -- *.json *.log && rm -f -- *.json *.log)
