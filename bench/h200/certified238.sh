#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), session 45: run 238.
# The certified LM head's int8 sums on fp16 tensor cores (F16 tiles: the input rounded to fp16,
# its change bounded, formats/certified.py). Run 235 (Nsight Compute) put the one-row certified
# head's element-wise tile at 65% issue (conversions and products: ~3 instructions a weight),
# 280 us under ncu against the FP8 head's 165 on the same bytes (mma.sync, 0.5 conversions a
# weight); in the decode graph 203-206 us against 136-141 for a read of its int8 bytes. F16
# widens a weight in ~1.25 instructions and multiplies on the tensor cores.
# GPU tests of the certified head (F16 included), then the bf16 decode and verify timeline
# with five one-row F16 tiles and two with verify blocks on the certified head too (16-row F16
# tiles), base2 the control; then paired pipelined AR and spec@6.55 of base against the one-row
# tile with the fastest decode (8 rounds, a control arm).
# Prediction: the one-row head 205 -> 150-170 us (decode -35..-55 us, ~1%); AR 247 -> ~250;
# 16-row certified verify ~200 us against the exact head's 277 + argmax 14.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="kernel or f16 or widen or generation or deferred" TESTS_S=300 \
    gpu_tests_gate tests/test_certified.py || exit 0
t=bench/h200/certified238
V="base|"
for v in f64k256 f128k128 f64k128 f32k256 f128k256; do V+=";$v|--tiles $t/$v.json"; done
for v in v64k256 v128k128; do V+=";$v|--target-head certified --tiles $t/$v.json"; done
variants bf16 "$V;base2|" 360
decode_each bf16
grep -E "^bf16 \S+ (decode|verify):" "$OUT/timeline-variants-1024.log" | cut -c1-200
grep -E "certified_head 1x|certified_head 16x|linear 16x151936|argmax +1 " \
    "$OUT/timeline-variants-1024.log" | cut -c1-120
best=$(python3 - "$OUT/timeline-variants-1024.json" <<'PY'
import json, sys
arms = json.load(open(sys.argv[1]))["arms"]
one = {k.split()[1]: v["decode"]["untraced_back_to_back_ms"] for k, v in arms.items()
       if k.split()[1].startswith("f")}
print(min(one, key=one.get))
PY
)
echo "paired: base against $best"
P="--pipeline 1"
engine 1024 pair 300 --taus 6.55 --paired-rounds 8 \
    --paired "base|$P;$best|$P --tiles $t/$best.json"
grep "^paired" "$OUT/engine-pair.log" | cut -c1-300
pack; archive_only
