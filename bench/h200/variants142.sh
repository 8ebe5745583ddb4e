#!/usr/bin/env bash
# Device call (~3 min; no carry): run 142. Timeline variants (bench/timeline.py --variants) at the
# Qwen3-8B shape, 1k, bf16: the RMSNorm on 1 or 2 warps (elementwise.NORM_WARPS) and the rope
# kernel's position and table rows read before its PDL wait (rope.EARLY_TABLES).
set -u
here="$(dirname "$0")"
n="--switch kernels.elementwise.NORM_WARPS"
r="--switch kernels.rope.EARLY_TABLES=1"
V="base|;n1|$n=1;n2|$n=2;re|$r;n1re|$n=1 $r;base2|"
TESTS_K='' ARMS=bf16 REPLAYS=20 TL_S=240 VARIANTS="$V" CONTEXT=1024 \
    bash "$here/timeline.sh" | grep -E "^(arm|bf16) .* (decode|verify|draft) +[0-9]"
cd "$OUT" && tar xzf all.tgz && rm all.tgz && cd - >/dev/null
grep -E "^\S+ \S+ (decode|verify|draft): " "$OUT"/timeline-variants-1024.log \
    | sed -E 's/ \| each.*//; s/linear [0-9.]+ //' | grep -E "attention [0-9]"
source "$here/lib.sh"; pack; archive_only
