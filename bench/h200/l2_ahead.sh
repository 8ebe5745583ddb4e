#!/usr/bin/env bash
# Device call (~5 min, no carry): EngineConfig.l2_ahead at the Qwen3-8B shape. GPU tests first
# (the same tokens with each mode, bf16 and W12, CUDA graphs, with and without PDL), then one
# engine_speed process per mode (off, o, all) at CONTEXTS (1k), the forward times and AR /
# speculative tok/s side by side.
set -u
export PYTHONPATH=$PWD/src:$PWD
timeout 240 python3 -m pytest -q -x tests/test_kernels.py -k "pdl_engine or l2_ahead" 2>&1 | tail -2
for mode in ${MODES:-off o all}; do
    timeout 150 python3 bench/engine_speed.py --contexts "${CONTEXTS:-1024}" --batches '' \
        --profile 0 --hf-baseline 0 --repeats 3 --l2-ahead "$mode" \
        --out "$OUT/ahead-$mode.json" >"$OUT/ahead-$mode.log" 2>&1
    echo "l2_ahead $mode rc=$?"; grep "ctx [0-9]*:" "$OUT/ahead-$mode.log" | cut -c1-250
    python3 - "$OUT/ahead-$mode.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for name, model in report.items():
    for c in model.get("contexts", []) if isinstance(model, dict) else []:
        ms = {k: round(v["ms"], 3) for k, v in c["forward"].items() if k in ("1", "16")}
        print(f"  {name} ctx {c['context']}: forward ms {ms}, draft {c['draft']['ms']:.3f} ms")
PY
done
