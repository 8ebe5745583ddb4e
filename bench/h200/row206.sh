#!/usr/bin/env bash
# Device call (~3 min, warm; no carry), session 41, after runs 203-205 (nothing new taken): one
# more Qwen3-8B 1k row with today's defaults (the certified one-row head: "auto"), token forcing
# on, for the README's range across machines. Prediction: pipelined AR 240-245 (runs 192-200:
# 239.3-243.8), pipelined spec 1,280-1,305.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
engine 1024 row1k 230
pack; archive_only
