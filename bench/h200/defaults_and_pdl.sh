#!/usr/bin/env bash
# Device call (~8-9 min, a guess: keep it under the 600 s a call; no carry): (1) the CUDA
# equality tests with today's defaults and the PDL modes' and 8-warp attention's GPU tests; (2)
# today's defaults against the old ones, pdl "chain" and the attention's verify/draft launches
# with 8 warps as arms of one process (engine_speed --paired, interleaved rounds, 95%
# intervals); (3) bench/pdl_pairs.py: two multiplies back to
# back under each PDL mode. Everything comes back in one all.tgz.
set -u
export PYTHONPATH=$PWD/src:$PWD
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py tests/test_kernels.py \
    -k "cuda_bf16 or cuda_fp32 or pdl or eight_warps" >"$OUT/gpu-tests.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/gpu-tests.log"
timeout "${PAIRED_S:-240}" python3 bench/engine_speed.py --contexts 1024 --paired \
    "${PAIRED:-new|;small|--pdl small --swiglu-epilogue 0;chain|--pdl chain;aw|--attention-warps wide=8,merge=8}" \
    --paired-rounds "${ROUNDS:-6}" --out "$OUT/paired.json" >"$OUT/paired.log" 2>&1
echo "paired rc=$?"; grep "^paired" "$OUT/paired.log" | cut -c1-200
timeout "${PAIRS_S:-180}" python3 bench/pdl_pairs.py --out "$OUT/pdl-pairs.json" \
    >"$OUT/pdl-pairs.log" 2>&1
echo "pdl_pairs rc=$?"; grep -v "^{" "$OUT/pdl-pairs.log" | tail -34 | cut -c1-160
(cd "$OUT" && tar czf all.tgz -- *.json *.log && rm -f -- *.json *.log)
