#!/usr/bin/env bash
# Device call (~9 min + cold start; no carry): run 323, issue 7 with run 322's winners as the
# defaults (w12_tc.MAX_UNIT_BLOCKS 32: the downs split 2 ways in one wave; launch.O_EARLY 2: in
# one-row forwards the merge lets a W12 o launch before its wait), on the card it lands on.
# 0. w12_tc's GPU tests, every one (the default tile now has units of up to 32 blocks) (~60 s).
# 1. Qwen3-8B's W12 decode and verify graphs (every matrix), back to back, traced: base (the
#    defaults), prev (before run 322: MAX_UNIT_BLOCKS 16, O_EARLY 0), ssn
#    (models.fused.SPLIT_SUM_NORM 1: the split sums of o and down write the norm after them, one
#    launch for two; run 315 lost with 4-slice downs read serially, one program a row; now 2
#    slices), e3 (launch.WIDE_EARLY 3: the split sum, now shorter, no longer early), base2;
#    bench/exit_spacing.py's verify table.
# 2. End to end at 1k, Qwen3-8B (PAIRED rounds, default 4) and Llama-3.1-8B (2 rounds), paired
#    over bf16 with the control, forcing on every arm: w12 (the defaults) and before_322.
# Prediction (H100, as runs 314-322): base's decode 0.02-0.04 ms under prev, its verify
# 0.01-0.04 under prev (run 322: 4.358 / 4.824 against 4.388-4.403 / 4.825-4.833); ssn
# level or worse (its one program a row); e3 level; end to end w12 over before_322 +0.5-1% AR,
# +0.5-1% spec (within the pairs' noise); W12 over bf16 AR ~1.18x, spec ~1.12-1.19x.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="cuda" TESTS_S=150 gpu_tests tests/test_w12_tc.py
grep -E "FAILED" "$OUT/gpu-tests.log" | head -6 | cut -c1-200
prev="$(sw w12_tc.MAX_UNIT_BLOCKS=16) $(sw launch.O_EARLY=0)"
ssn="--switch models.fused.SPLIT_SUM_NORM=1"
e3=$(sw launch.WIDE_EARLY=3)
MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" "base|;prev|$prev;ssn|$ssn;e3|$e3;base2|" 150
back_to_back "$OUT/timeline-variants-1024-qwen3-8b.json"
MODEL=qwen3-8b spacing qwen3 13
pack
w12_e2e e2e-1024 qwen3-8b before_322 "${PAIRED:-4}" "${E2E_S:-230}"
pack
w12_e2e e2e-llama llama3.1-8b before_322 2 "${LLAMA_S:-220}"
pack
archive_only
