#!/usr/bin/env bash
# Device call (~6 min, no carry needed): the mechanisms added on the CPU after runs 31-39, each
# on its first GPU run. (1) the fused prefill's kernel test on real Triton; (2) one prompt's
# prefill at the Qwen3-8B shape, PyTorch modules against EngineConfig.prefill = "fused", and the
# drafter's context write (what a server admission costs: 28 ms in run 39); (3) the embedded
# shape with the norm / SwiGLU prologue up to 16 rows against the default rule (one row);
# (4) W12 at 16 rows with the wider tile sweep. Each part has its own time limit.
set -u
export PYTHONPATH=$PWD/src:$PWD
timeout "${TESTS_S:-120}" python3 -m pytest -q -p no:cacheprovider tests/test_kernels.py \
    -k "fused_prefill or wide_steps" tests/test_attention.py >"$OUT/gpu-tests.log" 2>&1
echo "pytest rc=$?"; tail -3 "$OUT/gpu-tests.log"
common=(--hf-baseline 0 --torch-baseline 0 --profile 0 --batches '' --new-tokens 64)
timeout "${PREFILL_S:-150}" python3 bench/engine_speed.py --contexts 1024 --prefill-tokens 420 \
    "${common[@]}" --out "$OUT/prefill-8b.json" >"$OUT/prefill-8b.log" 2>&1
echo "engine_speed 8b rc=$?"; grep -E "prefill|drafter context|ctx 1024" "$OUT/prefill-8b.log"
for rows in default 16; do
    extra=(); [ "$rows" != default ] && extra=(--prologue-rows "$rows")
    timeout "${SMOL_S:-80}" python3 bench/engine_speed.py --models smollm2-135m --contexts 512 \
        --prefill-tokens 420 "${common[@]}" "${extra[@]}" --out "$OUT/smollm2-prologue-$rows.json" \
        >"$OUT/smollm2-prologue-$rows.log" 2>&1
    echo "engine_speed smollm2 prologue $rows rc=$?"
    grep -E "prefill|ctx 512" "$OUT/smollm2-prologue-$rows.log" | head -4
done
timeout "${W12_S:-150}" python3 bench/w12_speed.py --rows 16 --e2e 0 --out "$OUT/w12-16.json" \
    >"$OUT/w12-16.log" 2>&1
echo "w12_speed rc=$?"; grep -v '^{' "$OUT/w12-16.log" | tail -7
