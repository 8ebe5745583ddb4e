#!/usr/bin/env bash
# Device call (~6 min; no carry): run 140. Timeline variants (bench/timeline.py --variants) at the
# Qwen3-8B shape: the one-row merge on 1 or 2 warps taking its slices MERGE_SPLIT_CHUNK at a time
# (33 slices kept), against run 139's best (1 warp, MAX_SPLITS 32), all with verify slices of at
# least 128 keys; bf16 and W12 "auto" at 1k, bf16 at 8k and 32k.
set -u
here="$(dirname "$0")"
source "$here/lib.sh"
w="--attention-min-keys-wide 128 --attention-warps merge=1"
V="base|;m1s|$w --attention-max-splits 32;c16|$w --attention-merge-chunk 16"
V+=";c32|$w --attention-merge-chunk 32;c8|$w --attention-merge-chunk 8"
V+=";c16w2|--attention-min-keys-wide 128 --attention-warps merge=2 --attention-merge-chunk 16"
V+=";c16s|$w --attention-merge-chunk 16 --attention-max-splits 32;base2|"
keep() { cd "$OUT" && tar xzf all.tgz && rm all.tgz && cd - >/dev/null; }
TESTS_K='' ARMS="bf16;w12:auto" REPLAYS=20 TL_S=260 VARIANTS="$V" CONTEXT=1024 \
    bash "$here/timeline.sh" | grep -E "^(arm|w12:auto|bf16) .* (decode|verify|draft) +[0-9]"
keep
TESTS_K='' ARMS=bf16 REPLAYS=20 TL_S=130 VARIANTS="$V" CONTEXT=8192 \
    bash "$here/timeline.sh" | grep -E "^(bf16) .* (decode|verify|draft) +[0-9]"
keep
TESTS_K='' ARMS=bf16 REPLAYS=10 TL_S=150 VARIANTS="$V" CONTEXT=32768 \
    bash "$here/timeline.sh" | grep -E "^(bf16) .* (decode|verify|draft) +[0-9]"
keep
for f in "$OUT"/timeline-variants-*.log; do  # attention and merge runs, us in the graph
    grep -E "^\S+ \S+ (decode|verify|draft): " "$f" | sed -E 's/ \| each.*//; s/linear [0-9.]+ //'
done | grep -E "attention [0-9]" | sed -E 's/ rmsnorm.*//'
pack; archive_only
