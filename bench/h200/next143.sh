#!/usr/bin/env bash
# Device call (~8 min; no carry): the next session's first call (LOG plan items 3-5). engine_speed
# at 1k with the rope's early tables (token forcing inside the captured graphs); timeline variants
# of the verify attention's slices (WIDE_MAX_SPLITS) and the partials' stride (SLOT_PAD) at the
# Qwen3-8B shape, 1k, 8k and 32k, bf16; the attention defaults of runs 138-140 against the old
# ones at the Llama-3.1-8B shape, 1k.
set -u
here="$(dirname "$0")"
export PYTHONPATH=$PWD/src:$PWD
source "$here/lib.sh"
keep() { cd "$OUT" && tar xzf all.tgz && rm all.tgz && cd - >/dev/null; }
timeout 170 python3 bench/engine_speed.py --contexts 1024 --llama-contexts '' --batches '' \
    --repeats 3 --hf-baseline 0 --profile 0 --torch-baseline 0 \
    --switch kernels.rope.EARLY_TABLES=1 --out "$OUT/engine-early.json" >"$OUT/engine-early.log" 2>&1
echo "engine rc=$?"; grep -E "ctx 1024" "$OUT/engine-early.log" | cut -c1-300; pack
a="--switch kernels.attention"
V="base|;e|--switch kernels.rope.EARLY_TABLES=1;w8|$a.WIDE_MAX_SPLITS=8;w16|$a.WIDE_MAX_SPLITS=16"
V+=";p1|$a.SLOT_PAD=1;base2|"
for ctx in 1024 8192 32768; do
    TESTS_K='' ARMS=bf16 REPLAYS=15 TL_S=130 VARIANTS="$V" CONTEXT=$ctx \
        bash "$here/timeline.sh" | grep -E "^(bf16) .* (decode|verify|draft) +[0-9]"
    keep
done
old="--attention-warps merge=4 --attention-max-splits 0 --attention-min-keys-wide 64"
TESTS_K='' MODEL=llama3.1-8b ARMS=bf16 REPLAYS=15 TL_S=90 VARIANTS="new|;old|$old;new2|" \
    CONTEXT=1024 bash "$here/timeline.sh" | grep -E "^(bf16) .* (decode|verify|draft) +[0-9]"
keep
pack; archive_only
