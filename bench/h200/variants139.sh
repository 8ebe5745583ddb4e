#!/usr/bin/env bash
# Device call (~5 min; no carry): run 139. Timeline variants (bench/timeline.py --variants) at the
# Qwen3-8B shape around run 138's best (verify slices of at least 128 keys, the merge on 2 warps):
# the merge on 1 or 2 warps, with and without MAX_SPLITS 32, and the one-row split launch on 2
# warps; bf16 and W12 "auto" at 1k, bf16 at 8k.
set -u
here="$(dirname "$0")"
w="--attention-min-keys-wide 128"
V="base|;m2|$w --attention-warps merge=2;m1|$w --attention-warps merge=1"
V+=";m1s|$w --attention-warps merge=1 --attention-max-splits 32"
V+=";m2s|$w --attention-warps merge=2 --attention-max-splits 32"
V+=";n2|$w --attention-warps merge=2,narrow=2;n1|$w --attention-warps merge=1,narrow=2;base2|"
TESTS_K='' ARMS="bf16;w12:auto" REPLAYS=20 TL_S=300 VARIANTS="$V" CONTEXT=1024 \
    bash "$here/timeline.sh" | grep -E "^(arm|w12:auto|bf16) .* (decode|verify|draft) +[0-9]"
cd "$OUT" && tar xzf all.tgz && rm all.tgz && cd - >/dev/null
TESTS_K='' ARMS=bf16 REPLAYS=20 TL_S=170 VARIANTS="$V" CONTEXT=8192 \
    bash "$here/timeline.sh" | grep -E "^(arm|bf16) .* (decode|verify|draft) +[0-9]"
cd "$OUT" && tar xzf all.tgz && rm all.tgz && cd - >/dev/null
for f in "$OUT"/timeline-variants-*.log; do  # attention and merge runs, us in the graph
    grep -E "^\S+ \S+ (decode|verify|draft): " "$f" | sed -E 's/ \| each.*//; s/linear [0-9.]+ //'
done | grep -E "attention [0-9]"
source "$here/lib.sh"; pack; archive_only
