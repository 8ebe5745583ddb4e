#!/usr/bin/env bash
# Device call (~1.5 min + cold start; no carry), session 41, with the session's last device
# time. The one-row certified head with today's defaults (no deferred checks, DEFER_MIN_ROWS 2):
# the candidates' exact pass on the tile's rows masked (COMPACT=0) instead of gathered, and the
# deferral put back (DEFER_MIN_ROWS=1: run 207's finding again, through the new knob).
# Prediction: defer1 ~10 us slower a head (run 207); COMPACT=0 slower (run 198 at 16 rows).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
variants bf16 "base|;compact0|--switch kernels.certified.COMPACT=0;defer1|--switch \
kernels.certified.DEFER_MIN_ROWS=1;base2|" 150
grep -E "decode: attention" "$OUT/timeline-variants-1024.log" | cut -c1-90
pack; archive_only
