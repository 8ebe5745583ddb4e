#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), prepared in session 33 for the next: the side
# stream's L2 requests for each layer's o weights (launch.SIDE_AHEAD_BYTES, 8 MB) in forwards
# of more than one row only (verify and draft; run 165: those -0.2% bf16 / -0.45% W12 "auto"
# back to back, one-row forwards +0.9%): GPU tests, timeline variants (bf16 and W12 "auto"),
# then paired, pipelined, 6 rounds, bf16. First (session 34): bench/h200/probe_cond.py, whether
# a graph's conditional node can hold our PDL launches.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
timeout 60 python3 bench/h200/probe_cond.py > "$OUT/probe-cond.log" 2>&1; echo "probe rc=$?"; tail -c 1500 "$OUT/probe-cond.log"
TESTS_K="pdl_engine_gives_the_same_tokens or l2_ahead" TESTS_S=200 gpu_tests tests/test_kernels.py
S="--switch kernels.launch.SIDE_AHEAD_BYTES=8388608"
variants "bf16;w12:auto" "base|;s8|$S;base2|" 150; pack
engine 1024 paired 200 --paired-rounds 6 --paired "base|--pipeline 1;s8|--pipeline 1 $S"
grep "^paired" "$OUT/engine-paired.log"
pack; archive_only
