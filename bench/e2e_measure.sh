#!/usr/bin/env bash
# bench -> compare -> score against our own server on the embedded model (CPU, fp32)
set -euo pipefail
export PYTHONPATH="$(cd "$(dirname "$0")/.." && pwd)/src"
SP="python -m specpilot.cli"
T=$(python -c "from specpilot.models.embedded import default_target; print(default_target())")
run_arm() {  # name, extra serve args
  $SP serve --port 0 --device cpu --dtype float32 --max-running 2 "${@:2}" > serve-$1.log 2>&1 &
  pid=$!
  for i in $(seq 120); do grep -q "serving" serve-$1.log && break; sleep 1; done
  url=$(grep -o "http://127.0.0.1:[0-9]*" serve-$1.log | head -1)
  $SP bench --url $url --dataset humaneval --num-prompts 4 --max-tokens 128 --warmup 1 --out bench-$1.json | tail -4
  kill -TERM $pid; wait $pid || true
}
run_arm spec
run_arm ar --target "$T"
$SP compare speed --ar bench-ar.json --final bench-spec.json --out-md compare.md --out-png compare.png | tail -8
$SP score bench-spec.json bench-ar.json | tail -6
