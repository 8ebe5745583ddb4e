#!/usr/bin/env bash
# Device call: one engine_speed process per arm, the arms' summary lines and forward times side by
# side. ARMS: "name|engine_speed arguments;name|arguments;..." (each after the common ones:
# --batches '' --profile 0 --hf-baseline 0 --repeats 3, CONTEXTS, default 1024). TESTS: a
# pytest -k expression of tests/test_kernels.py to run first ("" for none). ARM_S: each arm's
# timeout in seconds (150). The arms' JSON and logs (only theirs) come back as one arms.tgz (a
# call returns at most 8 files: run 103 lost four arms' files).
set -u
export PYTHONPATH=$PWD/src:$PWD
if [ -n "${TESTS:-}" ]; then
    timeout 240 python3 -m pytest -q -x tests/test_kernels.py -k "$TESTS" 2>&1 | tail -2
fi
IFS=';' read -ra arms <<<"$ARMS"
files=()
for arm in "${arms[@]}"; do
    name=${arm%%|*}
    files+=("$name.json" "$name.log")
    read -ra extra <<<"${arm#*|}"
    timeout "${ARM_S:-150}" python3 bench/engine_speed.py --contexts "${CONTEXTS:-1024}" \
        --batches '' --profile 0 --hf-baseline 0 --repeats 3 "${extra[@]}" \
        --out "$OUT/$name.json" >"$OUT/$name.log" 2>&1
    echo "$name (${arm#*|}) rc=$?"; grep "ctx [0-9]*:" "$OUT/$name.log" | cut -c1-250
    python3 - "$OUT/$name.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for name, model in report.items():
    for c in model.get("contexts", []) if isinstance(model, dict) else []:
        ms = {k: round(v["ms"], 3) for k, v in c["forward"].items() if k in ("1", "16")}
        print(f"  {name} ctx {c['context']}: forward ms {ms}, draft {c['draft']['ms']:.3f} ms")
PY
done
(cd "$OUT" && tar czf arms.tgz --ignore-failed-read -- "${files[@]}" && rm -f -- "${files[@]}")
