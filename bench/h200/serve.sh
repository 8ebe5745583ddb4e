#!/usr/bin/env bash
# Device call: bench/server_speed.py (Qwen3-8B shape, concurrency 1/8/32, spec vs AR through
# `specpilot serve`'s stack). Also parks the first half of the SmolLM2 GGUF (.carry/c1/p1) in ~/sp
# for train_embedded.sh, or the first part (.carry/q1) and the shipped drafter for
# embedded_probe.sh, which must follow while the machine is warm.
set -u
# the H200 image lacks fastapi, uvicorn, pydantic and openai: wheels in .carry/srv (pip download
# --python-version 3.12 of the versions pinned here; see docs/LOG.md run 16)
if [ -d .carry/srv ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site \
        .carry/srv/*.whl || exit 5
fi
export PYTHONPATH=/tmp/site:$PWD/src:$PWD
[ -f .carry/c1/p1 ] && mkdir -p ~/sp && cp .carry/c1/p1 ~/sp/p1
# for embedded_probe.sh: the first part of the GGUF (.carry/q1) and the shipped drafter
if [ -f .carry/q1/g1 ]; then
    mkdir -p ~/sp && cp .carry/q1/g1 ~/sp/g1
    rm -rf ~/sp/drafter-shipped && cp -r src/specpilot/data/smollm2-dflash-b16 ~/sp/drafter-shipped
fi
# the training prompts for a later train_embedded.sh (.carry/q3, see park.sh)
[ -f .carry/q3/mix.jsonl.gz ] && mkdir -p ~/sp && gunzip -c .carry/q3/mix.jsonl.gz >~/sp/mix.jsonl
# GPU tests to run first (TESTS="tests/test_kernels.py -k fused_prefill"), logged beside
if [ -n "${TESTS:-}" ]; then
    timeout "${TESTS_S:-150}" python3 -m pytest -q -p no:cacheprovider $TESTS >"$OUT/gpu-tests.log" 2>&1
    echo "pytest rc=$?"; tail -3 "$OUT/gpu-tests.log"
fi
name=${SERVE_NAME:-server-speed}
timeout "${SERVE_S:-300}" python3 bench/server_speed.py ${SERVE_ARGS:-} --out "$OUT/$name.json" \
    >"$OUT/$name.log" 2>&1
echo "server_speed rc=$?"; grep -v '^{' "$OUT/$name.log" | tail -14
