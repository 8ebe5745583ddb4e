#!/usr/bin/env bash
# Device call (run 113, 384 s; no carry): the verify and draft blocks' attention split into
# programs of WIDE_Q_ROWS query rows, and the split loop at 32 keys a step (SPLIT_KV_STEP)
# (kernels/attention.py; built against ptxas spills that the H200's kernels never had: the
# audit then lacked the launches' divisibility, run 117). (1) the attention GPU tests; (2)
# Qwen3-8B shape, paired arms in one process at 1k and 8k: today's defaults against 16 and 32
# rows a program, 32 keys a step alone and with 16 rows, the merge with 16 rows a program
# (MERGE_PROGRAM_ROWS), and the one-row launches' in-kernel merge (--merge-rows 8). 7 arms x 6
# rounds (bench/h200/paired.sh; its variables apply).
PAIRED="new|;q16|--attention-q-rows 16;q32|--attention-q-rows 32;s32|--attention-kv-step 32"
PAIRED+=";q16s32|--attention-q-rows 16 --attention-kv-step 32"
PAIRED+=";mp16|--attention-merge-program-rows 16;m8|--merge-rows 8"
PAIRED="$PAIRED" TESTS_K="${TESTS_K:-query_row or decode_attention or kv_step}" \
    TESTS_S="${TESTS_S:-200}" CONTEXTS="${CONTEXTS:-1024 8192}" ROUNDS="${ROUNDS:-6}" \
    PAIRED_S="${PAIRED_S:-240}" exec bash "$(dirname "$0")/paired.sh"
