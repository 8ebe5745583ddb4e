#!/usr/bin/env bash
# Device call (~3 min): where decode time goes. bench/decode_profile.py (Qwen3-8B shape: bf16 and
# W12 multiplies with and without their norm / SwiGLU prologues), then bench/engine_speed.py at
# the embedded pair's shape (SmolLM2-135M + a 3-layer DFlash drafter, synthetic weights, no GGUF
# needed): forward time per width, draft, speculative step breakdown, per-kernel profile.
set -u
export PYTHONPATH=$PWD/src:$PWD
timeout "${PROFILE_S:-120}" python3 bench/decode_profile.py --out "$OUT/decode-profile.json" \
    >"$OUT/decode-profile.log" 2>&1
echo "decode_profile rc=$?"; grep -v '^{' "$OUT/decode-profile.log" | grep "us of"
timeout "${SMOL_S:-150}" python3 bench/engine_speed.py --models smollm2-135m --contexts 512 \
    --hf-baseline 0 --torch-baseline 0 --batches '' --out "$OUT/engine-speed-smollm2.json" \
    >"$OUT/engine-speed-smollm2.log" 2>&1
echo "engine_speed rc=$?"; grep -v '^{' "$OUT/engine-speed-smollm2.log" | tail -12
