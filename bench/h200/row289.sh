#!/usr/bin/env bash
# Device call (~8 min + cold start; no carry): run 289 (prepared in session 51, not yet run),
# after row287.sh, and only if bf16_row_linear passed its GPU tests there and beat
# skinny_linear's one-row tiles at q|k|v and o (issue 3: those lose 67 and 75 us a decode to
# their bounds, run 190; AR 247-250 tok/s against the target 250).
# kernels/w12_row.BF16_ONE_ROW end to end: skinny_linear's one-row multiplies on the TMA-fed
# kernel (its weights' first stages asked for before PDL's wait), the norm in the prologue of
# q|k|v and gate|up instead of handed on. First its engine test, the one-row forward back to
# back (timeline variants: base, row, base2), then Qwen3-8B 1k paired (5 rounds), then the row
# arm alone with token forcing of its AR and spec@6.55 outputs.
# Prediction: decode -0.10 ms back to back (q|k|v and o near their floors, the hand-off's
# multiplies' gaps gone), pipelined AR ~255 against ~248.
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
TESTS_K="${TESTS_K-bf16_row}" TESTS_S=60 gpu_tests tests/test_kernels.py  # row298.sh: none
variants bf16 "base|;row|--switch kernels.w12_row.BF16_ONE_ROW=1;base2|" 150
pack
engine 1024 paired 200 --paired-rounds 5 --taus 6.55 \
    --paired "base|;row|--switch kernels.w12_row.BF16_ONE_ROW=1"
grep "^paired" "$OUT/engine-paired.log" | cut -c1-300
pack
# the row arm alone: its report's AR and spec@6.55 outputs through token forcing
engine 1024 row 120 --taus 6.55 --switch kernels.w12_row.BF16_ONE_ROW=1
python3 - "$OUT/engine-row.json" <<'PY'
import json, sys
def walk(node, path=""):  # every token_forcing's verdict in the report
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "token_forcing" and isinstance(value, dict):
                print(path, "token forcing passed:", value.get("passed"))
            else:
                walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            walk(value, f"{path}/{i}")
walk(json.load(open(sys.argv[1])))
PY
pack; archive_only
