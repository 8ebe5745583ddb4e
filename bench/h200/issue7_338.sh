#!/usr/bin/env bash
# Device call (~2 min + cold start on an H100, ~4 on an H200; no carry): run 338, issue 7.
# On an H200: issue 7's own numbers, Qwen3-8B end to end at 1k, 3 paired rounds over bf16 with
# the control and the arm stages_of_4 (w12_row.ROW_TILES 7: run 337's decode graph, H100, 4.277
# ms against 4.293 / 4.294), token forcing on every arm (the last H200 ones: run 299, AR
# 1.112x, spec 1.004x).
# On an H100: Qwen3-8B's W12 decode graph, back to back, traced: base, rb2 (w12_row.ROW_BOUND 2:
# the hand-off alone, still waiting on the meta warp's scale words and escape sums), rb18
# (ROW_BOUND 18: the same without the meta warp), rb18nb (that without the norm prologue too,
# NORM_BOUND 1: the ring alone; its LM head's certificate fails, read the multiplies' rows),
# slots4 (META_SLOTS 4: the meta warp up to 3 tiles ahead, not 1), sb4s3 (ONE_ROW_TILE 7,
# again), base2; the exit-spacing table.
# PART=pipelined (any card, ~4 min): Qwen3-8B end to end, 3 paired rounds, every arm with
# EngineConfig.pipeline (the engine's default on CUDA; issue 7's runs so far all used the
# host-synchronous loop, ~0.3 ms of host time a step in both arms).
# Prediction: H200 AR 1.19-1.23x, spec 1.10-1.15x (H100 run 335: 1.215x / 1.151x); H100 rb18
# q|k|v ~13 us a layer against rb2's ~14.3 if the meta warp holds the ring back (then its chain,
# not the ring, is what W12 loses; decode -0.05 to -0.1 ms against rb2), level with rb2 if not
# (then the ring's round trips a stage); rb18nb a further ~1 us at q|k|v and gate|up (run 330's
# NORM_BOUND: the prologue ~2.3 us a layer, ~1.3 of it since taken by NORM_WEIGHT_EARLY), at
# its bound (12.6 / 50.3) if the ring itself keeps up; slots4 takes part of rb18's gain to rb2
# (if the meta warp's chain is the loss, its slot hand-off with the multiplying warps is part of
# it); sb4s3 -0.01 to -0.02 ms against base /
# base2. Pipelined: both arms lose the host's ~0.3 ms a step, so the ratios rise: AR ~1.22-1.23x,
# spec ~1.16x on an H100 (1.215x / 1.151x unpipelined).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
if [ "${PART:-}" = pipelined ]; then  # any card: the same with EngineConfig.pipeline in every arm
    w12_e2e e2e-pipelined qwen3-8b "" 3 300 --pipeline 1
    pack
elif [ "${PART:-}" != bounds ] && grep -q H200 "$OUT/gpu.log"; then  # (PART=bounds: any card)
    w12_e2e e2e-1024 qwen3-8b stages_of_4 3 280
    pack
else
    rb18=$(sw w12_row.ROW_BOUND=18)
    arms="base|;rb2|$(sw w12_row.ROW_BOUND=2);rb18|$rb18;rb18nb|$rb18 $(sw w12_row.NORM_BOUND=1)"
    # SHORT=1 (little device time left): those four alone
    [ "${SHORT:-0}" = 1 ] || arms="$arms;slots4|$(sw w12_row.META_SLOTS=4);sb4s3|$(sw w12_row.ONE_ROW_TILE=7);base2|"
    MODEL=qwen3-8b variants "w12:qkv,o,gate_up,down" "$arms" 200
    decode_table w12
fi
archive_only
