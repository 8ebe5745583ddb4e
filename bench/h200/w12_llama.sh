#!/usr/bin/env bash
# Device call (~6 min, a guess; no carry): the W12 tiles at the Llama-3.1-8B shape, never swept
# (run 122: its gate|up 28672 x 4096, down 4096 x 14336 and LM head 128256 x 4096 fall back to
# tile_config's rules, and W12 spec@6.55 ran at 0.84x bf16). (1) the one-row element-wise sweep
# (w12_speed --rows 1 --grid loop_wide), within SWEEP1_S (150); (2) the 16-row tensor-core sweep
# (--rows 16 --grid dot_acc), within SWEEP16_S (300); (3) the winners of both as a tiles file
# (tiles.json, for EngineConfig.tiles / w12_speed --tiles and MEASURED_TILES).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
model="${MODEL:-llama3.1-8b}"
timeout "${SWEEP1_S:-150}" python3 bench/w12_speed.py --model "$model" --rows 1 --grid loop_wide \
    --e2e 0 --out "$OUT/sweep1.json" >"$OUT/sweep1.log" 2>&1
echo "sweep 1 rc=$?"; grep -E "^ +1 " "$OUT/sweep1.log" | cut -c1-240; pack
timeout "${SWEEP16_S:-300}" python3 bench/w12_speed.py --model "$model" --rows 16 --grid dot_acc \
    --e2e 0 --out "$OUT/sweep16.json" >"$OUT/sweep16.log" 2>&1
echo "sweep 16 rc=$?"; grep -E "^ *16 " "$OUT/sweep16.log" | cut -c1-240; pack
python3 bench/w12_speed.py --rows '' --e2e 0 --tiles-from "$OUT/sweep1.json,$OUT/sweep16.json" \
    --tiles-out "$OUT/tiles.json" | cut -c1-600
pack
archive_only
