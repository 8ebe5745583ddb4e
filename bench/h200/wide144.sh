#!/usr/bin/env bash
# Device call (~7 min; no carry): run 144. The 16-row multiplies launched with PDL (launch.WIDE_PDL:
# 1 those whose grid fits one wave, 2 every one), with and without padded shared memory for the
# one-wave ones (launch.ONE_WAVE_SHARED, 120 KB: one program an SM), as timeline variants at the
# Qwen3-8B shape, 1k, bf16 and W12; the GPU tests of the switches first; then engine_speed at 1k
# with WIDE_PDL 1 and the padding (token forcing inside the graphs).
set -u
here="$(dirname "$0")"
export PYTHONPATH=$PWD/src:$PWD
source "$here/lib.sh"
keep() { cd "$OUT" && tar xzf all.tgz && rm all.tgz && cd - >/dev/null; }
timeout 200 python3 -m pytest -q -x tests/test_kernels.py -k "one_wave or wide_pdl or pdl_chain" \
    >"$OUT/tests.log" 2>&1
echo "tests rc=$?"; tail -3 "$OUT/tests.log"
s="--switch kernels.launch"
pad="$s.ONE_WAVE_SHARED=122880"
V="base|;wp1|$s.WIDE_PDL=1;wp1s|$s.WIDE_PDL=1 $pad;wp2|$s.WIDE_PDL=2;wp2s|$s.WIDE_PDL=2 $pad;base2|"
TESTS_K='' ARMS="bf16;w12:auto" REPLAYS=15 TL_S=240 VARIANTS="$V" CONTEXT=1024 \
    bash "$here/timeline.sh" | grep -E "^(bf16|w12\S*) .* (decode|verify|draft) +[0-9]"
keep
timeout 190 python3 bench/engine_speed.py --contexts 1024 --llama-contexts '' --batches '' \
    --repeats 3 --hf-baseline 0 --profile 0 --torch-baseline 0 \
    $s.WIDE_PDL=1 $pad --out "$OUT/engine-wide.json" >"$OUT/engine-wide.log" 2>&1
echo "engine rc=$?"; grep -E "ctx 1024" "$OUT/engine-wide.log" | cut -c1-300
pack; archive_only
