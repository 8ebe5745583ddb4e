#!/usr/bin/env bash
# Device call (~8 min, no carry): docs/LOG.md's plan step 2 after run 83. (1) the one-row W12
# sweep around run 83's loop tiles for o and down (w12_speed --grid loop_wide, 108 tiles);
# (2) the one-row bf16 loop sweep at the Llama-3.1-8B shapes (kernel_sweep --grid loop --model
# llama3.1-8b); (3) end to end at 1k (Qwen3-8B shape): bf16, W12, and W12 with (1)'s winners
# (arm w12_swept), PAIRED interleaved rounds; (4) the winners of both sweeps as a tiles file
# (tiles.json: EngineConfig.tiles) for MEASURED_TILES.
set -u
export PYTHONPATH=$PWD/src:$PWD
timeout "${W12_S:-200}" python3 bench/w12_speed.py --rows 1 --grid loop_wide --e2e 0 \
    --out "$OUT/w12-loop-wide.json" >"$OUT/w12-loop-wide.log" 2>&1
echo "w12 sweep rc=$?"; grep -E "^ +1 " "$OUT/w12-loop-wide.log" | cut -c1-220
timeout "${BF16_S:-100}" python3 bench/kernel_sweep.py --rows 1 --grid loop --model llama3.1-8b \
    --out "$OUT/bf16-loop-llama.json" >"$OUT/bf16-loop-llama.log" 2>&1
echo "bf16 llama sweep rc=$?"; grep "^M=" "$OUT/bf16-loop-llama.log" | cut -c1-220
timeout "${E2E_S:-220}" python3 bench/w12_speed.py --rows '' --e2e 1024 --paired "${PAIRED:-5}" \
    --tiles-from "$OUT/w12-loop-wide.json" --out "$OUT/e2e.json" >"$OUT/e2e.log" 2>&1
echo "e2e rc=$?"; grep -E "^e2e|^swept" "$OUT/e2e.log" | cut -c1-300
python3 bench/w12_speed.py --rows '' --e2e 0 --tiles-out "$OUT/tiles.json" \
    --tiles-from "$OUT/w12-loop-wide.json,$OUT/bf16-loop-llama.json" | cut -c1-300
# then, at the Llama shape: python3 bench/engine_speed.py --models "" --llama --contexts "" --tiles tiles.json
