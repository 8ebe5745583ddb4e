#!/usr/bin/env bash
# Device call (~3 min + cold start; no carry), prepared in session 44, not yet run: run 237.
# Where a pipelined AR token's time goes beyond its forward (runs 229-230: the one-token forward
# 4.000 ms back to back, the pipelined AR loop 247.4 tok/s = 4.04 ms a token: ~40 us a token,
# 1%, the margin to issue 3's 250): the device's time line of the pipelined AR loop
# (engine_speed --loop-profile 3: per step our kernels' busy time, PyTorch's work between the
# graphs by name, the idle time by the pair of activities around it), beside the speculative
# loop's, Qwen3-8B 1k.
# Prediction: ours ~4.00-4.02 ms a step (the context grows to 1,151 keys), others ~5-10 us (the
# positions' add and minimum, the ids' copy), idle ~20-30 us, most of it between one step's
# graph and the next (the replay's launch) rather than inside the graph.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
engine 1024 loop 300 --taus 6.55 --loop-profile 3
grep -E "pipelined step on the device|largest idle|others a step" "$OUT/engine-loop.log" \
    | cut -c1-400
pack; archive_only
