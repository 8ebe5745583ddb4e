#!/usr/bin/env bash
# Device call (~8 min; no carry): run 145, the new defaults launch.WIDE_PDL 2 (the larger 16-row
# grids too, but one right after a multiply) and ONE_WAVE_SHARED 120 KB. GPU tests (the launch
# rules, every generation path against transformers); timeline variants at the Qwen3-8B shape,
# 1k, bf16 and W12 (new, old = WIDE_PDL 0, w1 = WIDE_PDL 1) and at the Llama-3.1-8B shape, bf16;
# engine_speed at 1k with the defaults (token forcing inside the graphs).
set -u
here="$(dirname "$0")"
export PYTHONPATH=$PWD/src:$PWD
source "$here/lib.sh"
keep() { cd "$OUT" && tar xzf all.tgz && rm all.tgz && cd - >/dev/null; }
timeout 240 python3 -m pytest -q -x tests/test_kernels.py tests/test_gpu.py \
    -k "pdl or wide or shared or cuda" >"$OUT/tests.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/tests.log"
s="--switch kernels.launch.WIDE_PDL"
V="new|;old|$s=0;w1|$s=1;new2|"
TESTS_K='' ARMS="bf16;w12:auto" REPLAYS=15 TL_S=200 VARIANTS="$V" CONTEXT=1024 \
    bash "$here/timeline.sh" | grep -E "^(bf16|w12\S*) .* (decode|verify|draft) +[0-9]"
keep
TESTS_K='' MODEL=llama3.1-8b ARMS=bf16 REPLAYS=15 TL_S=100 VARIANTS="new|;old|$s=0;new2|" \
    CONTEXT=1024 bash "$here/timeline.sh" | grep -E "^(bf16) .* (decode|verify|draft) +[0-9]"
keep
timeout 190 python3 bench/engine_speed.py --contexts 1024 --llama-contexts '' --batches '' \
    --repeats 3 --hf-baseline 0 --profile 0 --torch-baseline 0 \
    --out "$OUT/engine-defaults.json" >"$OUT/engine-defaults.log" 2>&1
echo "engine rc=$?"; grep -E "ctx 1024" "$OUT/engine-defaults.log" | cut -c1-300
pack; archive_only
