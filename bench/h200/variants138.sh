#!/usr/bin/env bash
# Device call (~7 min; no carry): run 138. Timeline variants (bench/timeline.py --variants) at the
# Qwen3-8B shape: the attention's slice count and minimums (MAX_SPLITS, WIDE_MIN_SPLIT_KEYS, the
# merge's warps, query-row blocks) and element-wise one-row o and q|k|v tiles, bf16 and W12
# "auto" at 1k; then the attention variants, bf16, at 8k.
set -u
here="$(dirname "$0")"
t="bench/h200/small_tiles"
V="base|;mkw128|--attention-min-keys-wide 128;ms32|--attention-max-splits 32"
V+=";ms16|--attention-max-splits 16;ms32w|--attention-max-splits 32 --attention-min-keys-wide 128"
V+=";ms16w|--attention-max-splits 16 --attention-min-keys-wide 128"
V+=";mw2|--attention-max-splits 32 --attention-min-keys-wide 128 --attention-warps merge=2"
V+=";mw8|--attention-max-splits 32 --attention-min-keys-wide 128 --attention-warps merge=8"
V+=";q32|--attention-min-keys-wide 128 --attention-q-rows 32;mkw192|--attention-min-keys-wide 192"
A="$V;te|--tiles $t""_e.json;tf|--tiles $t""_f.json;tg|--tiles $t""_g.json;th|--tiles $t""_h.json"
TESTS_K='' ARMS="bf16;w12:auto" REPLAYS=20 TL_S=380 VARIANTS="$A;base2|" CONTEXT=1024 \
    bash "$here/timeline.sh" | grep -E "^(arm|w12|bf16) .* (decode|verify|draft) +[0-9]"
cd "$OUT" && tar xzf all.tgz && rm all.tgz && cd - >/dev/null
TESTS_K='' ARMS=bf16 REPLAYS=20 TL_S=170 VARIANTS="$V;base2|" CONTEXT=8192 \
    bash "$here/timeline.sh" | grep -E "^(arm|bf16) .* (decode|verify|draft) +[0-9]"
