#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), session 35: next178.sh's commands again after
# run 178 (spec 0.884x: the drafter's 1k prompt context went through ~100 skinny launches of
# 64 rows; now its FP8 weights are widened for cuBLAS past 64 rows, and bench/fp8_speed.py
# times each multiply inside a CUDA graph, where run 178 timed the host's launches).
exec bash "$(dirname "$0")/next178.sh"
