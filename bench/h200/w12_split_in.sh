#!/usr/bin/env bash
# Device call (~7 min, a guess; no carry): the 16-row W12 tiles with K split inside the program
# (kernels/w12_linear SPLIT_IN: a batched tl.dot over K ranges, no partials in memory, no sum
# launch) against today's K-split tiles, where W12 still loses to bf16 at 16 rows (run 115:
# q|k|v 16.6, o 13.8, down 29.3 us against bf16's 15.0 / 11.5 / 28.2): the W12 kernel tests
# on the GPU, w12_speed --grid split_in (24 tiles a shape), then end to end with the winners
# and, as one more arm, today's K-split sums added in the multiply instead of a second launch
# (SPLIT_SUM_IN_KERNEL: level in runs 57 and 72, before pdl "chain") (bench/h200/w12_sweep.sh;
# its variables apply).
GRID=split_in TESTS_K="${TESTS_K:-split_inside or qwen3_8b_tiles}" SWEEP_S="${SWEEP_S:-200}" \
    W12_ARMS="${W12_ARMS:-sum_in_kernel}" E2E_S="${E2E_S:-300}" \
    exec bash "$(dirname "$0")/w12_sweep.sh"
