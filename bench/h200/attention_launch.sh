#!/usr/bin/env bash
# Device call (~7 min, a guess; no carry): two launch-level changes of the split attention
# from run 117's Nsight Compute counters. SPLIT_STAGES: the 16-token split kernel holds 115 KB
# of shared memory for a 3-stage key pipeline (Triton's default) while at 1k each slice is one
# loop step. EARLY_POSITIONS: the split and merge programs read the positions before their PDL
# wait, one dependent L2 round trip fewer after it (the merge: 4.6-7.2 us isolated for 0.3-9
# MB, a chain of dependent loads). (1) their GPU tests; (2) Qwen3-8B shape, paired arms over
# today's defaults at 1k and 8k. CONTEXTS, ROUNDS, PAIRED_S as q_rows.sh. Everything comes
# back in one all.tgz, packed after each step.
set -u
ARMS="new|;st1|--attention-stages 1;st2|--attention-stages 2;w1|--attention-stages wide=1"
ARMS+=";ep|--attention-early-positions 1;ep1|--attention-early-positions 1 --attention-stages 1"
export PYTHONPATH=$PWD/src:$PWD
pack() { (cd "$OUT" && tar czf all.tgz -- *.json *.log 2>/dev/null); }
timeout "${TESTS_S:-90}" python3 -m pytest -q -p no:cacheprovider tests/test_kernels.py \
    -k "split_stages or early_positions" >"$OUT/gpu-tests.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/gpu-tests.log"; pack
for ctx in ${CONTEXTS:-1024 8192}; do
    timeout "${PAIRED_S:-240}" python3 bench/engine_speed.py --contexts "$ctx" \
        --paired "$ARMS" \
        --paired-rounds "${ROUNDS:-6}" --out "$OUT/paired-$ctx.json" >"$OUT/paired-$ctx.log" 2>&1
    echo "paired $ctx rc=$?"; grep "^paired" "$OUT/paired-$ctx.log" | cut -c1-200
    pack
done
rm -f -- "$OUT"/*.json "$OUT"/*.log
