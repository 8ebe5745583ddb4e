#!/usr/bin/env bash
# Device call (~8 min, no carry): the mechanisms built on the CPU after run 56 (docs/LOG.md),
# each off until this says: (1) their GPU tests first (the kernel counters' memory ordering has
# only run under the interpreter); (2) the 16-row tile sweep with SPLIT_K, and W12's K-split
# sums in the kernel against the split-sum launch; (3) the engine at the Qwen3-8B shape, 1k
# context, one process per arm: default, the attention's in-kernel merge, a draft vocabulary.
set -u
export PYTHONPATH=$PWD/src:$PWD
timeout "${TESTS_S:-200}" python3 -m pytest -q -p no:cacheprovider tests/test_kernels.py \
    tests/test_w12_kernels.py -k "fused_merge or split or draft_vocabulary or pdl or decode_attention" \
    >"$OUT/gpu-tests.log" 2>&1
echo "pytest rc=$?"; tail -3 "$OUT/gpu-tests.log"
timeout 150 python3 bench/kernel_sweep.py --rows 16 --grid quick --l2 cold \
    --out "$OUT/sweep16.json" >"$OUT/sweep16.log" 2>&1
echo "sweep rc=$?"; grep "^M=" "$OUT/sweep16.log"
for how in launch kernel; do
    timeout 90 python3 bench/w12_speed.py --rows 16 --no-sweep --e2e 0 --split-sum "$how" \
        --out "$OUT/w12-sum-$how.json" >"$OUT/w12-sum-$how.log" 2>&1
    echo "w12 split-sum $how rc=$?"; grep "^ 16 " "$OUT/w12-sum-$how.log" | cut -c1-60
done
for arm in default "--merge-rows 8" "--draft-vocab 32768"; do
    name=$(echo "$arm" | tr -d ' -'); flags=${arm#default}
    # shellcheck disable=SC2086
    timeout "${ENGINE_S:-110}" python3 bench/engine_speed.py --contexts 1024 --new-tokens 128 \
        --hf-baseline 0 --torch-baseline 0 --profile 0 --batches '' $flags \
        --out "$OUT/engine-$name.json" >"$OUT/engine-$name.log" 2>&1
    echo "engine $arm rc=$?"; grep "ctx 1024:" "$OUT/engine-$name.log"
done
