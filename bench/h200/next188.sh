#!/usr/bin/env bash
# Device call (~1.5 min + cold start; no carry), session 37, after run 186: run 186's
# composed FP8 drafter tiles (bench/h200/tiles187/composed-h200.json: o, q|k|v, gate|up, fc,
# each 2.8-17% faster in its own family's draft graph) in one timeline against the base, so
# that the draft graph is timed with all four at once. Prediction: draft 0.627 -> ~0.606 ms.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.log"
variants bf16 "base|;composed|--tiles bench/h200/tiles187/composed-h200.json;base2|" 80
pack; archive_only
