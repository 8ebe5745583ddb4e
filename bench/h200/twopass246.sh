#!/usr/bin/env bash
# Device call (~5 min + cold start; no carry), prepared in session 45, not yet run: run 246.
# kernels.certified.TWO_PASS: the candidates' exact pass in a second launch against the final
# floors (the multiply stores the upper bounds, [M, N] fp32). One launch compares against
# floors that rise while its programs run: ~2,600 candidate rows for one input row and
# ~21,000 for a 16-row block in the first wave (bench/certified_head.py's model) where the
# final floors leave ~200 and ~2,800 (the 16-row certified verify head lost in run 238: 370 us
# against exact 277 + argmax 14). GPU tests of test_certified (every kernel test with
# TWO_PASS 0 and 1), then the decode and verify timeline: base; tp (TWO_PASS at one row);
# v16 (the certified head in verify too, 16-row F16 64 x 256 on 4 warps: verify245's tile) with
# and without TWO_PASS; base2; then paired pipelined AR and spec@6.55 of the faster of v16 /
# v16tp against base (8 rounds, a control) if its verify won by 30 us or more.
# Prediction: one-row head 163 -> 150-155 us with tp (the second launch ~5 us, the multiply
# without its exact pass); verify with v16tp 4.32 -> ~4.22 ms (the head ~190 us against
# 291), spec@6.55 ~1.02x.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="kernel or f16 or int8_sums or taller" TESTS_S=300 \
    gpu_tests_gate tests/test_certified.py || exit 0
v=bench/h200/verify245/v16w4.json
S="--switch kernels.certified.TWO_PASS=1"
C="--target-head certified --tiles $v"
variants bf16 "base|;tp|$S;v16|$C;v16tp|$C $S;base2|" 300
grep -E "^bf16 \S+ (decode|verify): (span|attention|argmax)" "$OUT/timeline-variants-1024.log" \
    | cut -c1-170
pick=$(fastest_variant verify 0.030 v16 v16tp)
echo "paired pick: '${pick}'"
if [ -n "$pick" ]; then
    P="--pipeline 1"
    [ "$pick" = v16tp ] && O="$C $S" || O="$C"
    engine 1024 pair 300 --taus 6.55 --paired-rounds 8 --paired "base|$P;$pick|$P $O"
    grep "^paired" "$OUT/engine-pair.log" | cut -c1-300
fi
pack; archive_only
