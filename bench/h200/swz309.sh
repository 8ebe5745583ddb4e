#!/usr/bin/env bash
# Device call (~8-9 min + cold start, or two calls: STEPS="tests table", then STEPS=graph; no
# carry): run 309, kernels/w12_tc.py with its planes through TMA's 128-byte swizzle (session 58,
# CPU). Unswizzled, its multiplying warps' ldmatrix reads of
# the planes have 8-way bank conflicts (Triton's count, aot.bank_conflicts: 7 excess passes; 0
# with the swizzle): ~1,500 shared-memory cycles an SM a 256-column block against ~1,900 for the
# block's bytes at the H100's bandwidth. w12_tc ran at 1.5-2.2 TB/s in run 294 (gate|up 71.7 us
# against w12_linear's 58.1 at 16 rows, H100). (w12_ws's decoders took the same swizzle in run
# 279 with no change, but there the loads alone bound it; here the same warps decode and
# multiply, one warpgroup an SM.)
# 1. GPU tests: at N 4100 / 4104 / 4096 the products (escapes emptied) and the escapes' sums
#    (BOUND 1) apart, which half is wrong; then w12_tc against w12_linear_reference at every
#    cuda case (the SWIZZLE 128 and MMA 2 cases for the first time; N 4100 / 4104 / 4112:
#    tcn308.sh's question) and w12_ws at N 4100.
# 2. bench/w12_join.py --tc at 16 rows, Qwen3-8B: TC_TILES (64r4s/sw, 64r4s/k1/sw, 64r3s/sw
#    beside the unswizzled ones; /mma2: mma.sync a warp, w12_tc.MMA 2; the bounds nodec, nomma,
#    loads and copies: which of the loads, the decode and the multiply holds it) against
#    w12_linear's j2esc4 and bf16.
# 3. Inside the verify graph, W12 every matrix, back to back: base; tc (w12_tc.VERIFY); tcsw
#    (VERIFY with PLANE_SWIZZLE 128); tcmma (and MMA_VERSION 2: each warp's own mma.sync);
#    base2. If tcsw or tcmma beats base by > 0.05 ms, next: `W12_E2E_ARM=tcsw_verify` (or
#    tcmma_verify) `bash bench/h200/e2e304.sh` (end to end, paired, forcing; the arms are
#    bench/w12_speed.W12_ARMS's).
# Prediction: the swizzled tiles 15-30% faster than the unswizzled ones at 16 rows (gate|up
# ~55-60 us on an H100, level with j2esc4 at best), mma2 within 10% of them either way; the
# verify graph: tcsw ~0.5 ms under tc, level with base or slower; N 4100 / 4104 fail and 4112
# passes if the variant without a 16-divisible N is the fault.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
steps=" ${STEPS:-tests table graph} "  # STEPS: a part of them (two calls where one is too long)
if [[ $steps == *" tests "* ]]; then
    # which half goes wrong at N 4100 (the products with the escapes emptied, the escapes'
    # sums alone), with the failures' text, first
    TESTS_K="apart and cuda" TESTS_S=60 gpu_tests tests/test_w12_tc.py
    grep -E "^(FAILED|E  +AssertionError)" "$OUT/gpu-tests.log" | head -12 | cut -c1-200
    mv "$OUT/gpu-tests.log" "$OUT/gpu-tests-apart.log"
    TESTS_K="matches_the_reference and cuda" TESTS_S=${TESTS_S:-150} gpu_tests tests/test_w12_tc.py
    grep -E "^FAILED" "$OUT/gpu-tests.log" | head -24 | cut -c1-160
    mv "$OUT/gpu-tests.log" "$OUT/gpu-tests-tc.log"
    TESTS_K="matches_the_reference and cuda and 4100" TESTS_S=60 gpu_tests tests/test_w12_ws.py
fi
if [[ $steps == *" table "* ]]; then
    only=64r4s,64r4s/k1,64r4s/sw,64r4s/k1/sw,64r4s/sw/mma2,64r4s/k1/sw/mma2,64r4s/sw/nodec
    only=$only,64r4s/sw/nomma,64r4s/sw/loads,64r4s/copies
    timeout 170 python3 bench/w12_join.py --model qwen3-8b --rows 16 --variants j2esc4 --tc \
        --only "$only" --out "$OUT/tc-qwen3-8b.json" >"$OUT/tc-qwen3-8b.log" 2>&1
    echo "tc 16 rows rc=$?"
    sed -n '/^shape/,/^{/p' "$OUT/tc-qwen3-8b.log" | grep -v '^{' | cut -c1-200
    tc_table "$OUT"/tc-qwen3-8b.json
    pack
fi
if [[ $steps == *" graph "* ]]; then
    v="--switch kernels.w12_tc.VERIFY=1"; s="--switch kernels.w12_tc.PLANE_SWIZZLE=128"
    MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" \
        "base|;tc|$v;tcsw|$v $s;tcmma|$v $s --switch kernels.w12_tc.MMA_VERSION=2;base2|" 230
    pack
    python3 - "$OUT/timeline-variants-1024-qwen3-8b.json" <<'PY'
import json, sys
arms = json.load(open(sys.argv[1]))["arms"]
ms = {k.split()[1]: v["verify"]["untraced_back_to_back_ms"] for k, v in arms.items()}
print("verify back to back, ms:", {k: round(v, 3) for k, v in ms.items()})
for arm in ("tcsw", "tcmma"):
    print(arm, "beyond 0.05 ms:", ms.get(arm, 9e9) < min(ms["base"], ms["base2"]) - 0.05)
PY
fi
pack; archive_only
