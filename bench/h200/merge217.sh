#!/usr/bin/env bash
# Device call (~3 min + cold start; no carry), session 42: the one-row attention's merge inside
# the split launch (attention.FUSED_MERGE_MAX_ROWS: the last split program of each KV head merges
# its slices; no merge launch) against today's merge kernel, timeline variants (bf16, Qwen3-8B,
# 1k, back to back). Run 113 measured it under pdl "chain" before the merge ran on one warp
# (runs 138-140) and before PDL's other changes: AR 0.956x. A recheck under today's defaults.
# Prediction: 30% that the one-token forward is >= 20 us shorter (the merge's 48 us and its
# gaps' 17 against the last program's serial merge).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
variants "bf16" "base|;fm|--merge-rows 4;base2|" 170
pack; archive_only
