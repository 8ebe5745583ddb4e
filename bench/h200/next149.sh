#!/usr/bin/env bash
# Device call (~8 min; no carry): engine_speed at 32k with the defaults of runs 143-145 (issue
# 3's 32k row; run 147's 32k ran past its 190 s: building and filling a 32k cache is slow).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
engine 32768 32768 560
pack; archive_only
