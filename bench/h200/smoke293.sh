#!/usr/bin/env bash
# Device call (~2 min + cold start; no carry): run 293 (prepared in session 52, for a short
# window): the first GPU check of the prototypes the CPU emulator ran right. The wgmma probe's
# check, then one call each of w12_row_linear, bf16_row_linear and w12_tc_linear (1 and 16
# rows, pair order) at Qwen3-8B's o shape against the references, each within 60 s (a hang ends
# it). No timing: row287.sh and tc291.sh time them.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
prototype_smoke
pack; archive_only
