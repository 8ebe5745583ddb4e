#!/usr/bin/env bash
# Device call (~9 min, a guess; no carry): the verify and draft blocks' attention split into
# programs of WIDE_Q_ROWS query rows, and the split loop at 32 keys a step (SPLIT_KV_STEP)
# (kernels/attention.py; ptxas: the 64-row launches' 752-900 spilled bytes a thread fall to
# 32-40 with 16-32 rows a program and to 0 with both). (1) the attention GPU tests and the
# engine test with them; (2) Qwen3-8B shape, paired arms in one process at 1k and 8k: today's
# defaults against 16 and 32 rows a program, 32 keys a step alone and with 16 rows, the merge
# with 16 rows a program (MERGE_PROGRAM_ROWS; ptxas: 56 registers, 9 programs an SM, against
# 229 and 2), and the one-row launches' in-kernel merge (--merge-rows 8: level in run 57
# under pdl "decode", not measured under "chain"). 7 arms x 6 rounds: PAIRED_S 240 a context.
# Everything comes back in one all.tgz.
set -u
ARMS="new|;q16|--attention-q-rows 16;q32|--attention-q-rows 32;s32|--attention-kv-step 32"
ARMS+=";q16s32|--attention-q-rows 16 --attention-kv-step 32;mp16|--attention-merge-program-rows 16"
ARMS+=";m8|--merge-rows 8"
export PYTHONPATH=$PWD/src:$PWD
# all.tgz is redone after each step, so a call cut at the device's limit still brings back
# what finished (a call returns at most 8 files)
pack() { (cd "$OUT" && tar czf all.tgz -- *.json *.log 2>/dev/null); }
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_kernels.py \
    -k "query_row or decode_attention or kv_step" >"$OUT/gpu-tests.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/gpu-tests.log"; pack
for ctx in ${CONTEXTS:-1024 8192}; do
    timeout "${PAIRED_S:-240}" python3 bench/engine_speed.py --contexts "$ctx" \
        --paired "$ARMS" \
        --paired-rounds "${ROUNDS:-6}" --out "$OUT/paired-$ctx.json" >"$OUT/paired-$ctx.log" 2>&1
    echo "paired $ctx rc=$?"; grep "^paired" "$OUT/paired-$ctx.log" | cut -c1-200
    pack
done
rm -f -- "$OUT"/*.json "$OUT"/*.log
