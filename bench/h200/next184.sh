#!/usr/bin/env bash
# Device call (~8 min + cold start; no carry), prepared in session 36, not run (session 36 had
# too little device time left). After run 183 (FP8 drafts of 2 and 4 sequences 0.95x the
# loaded drafter's: single unpaired runs in separate processes, and the FP8 tiles were swept
# at 16 rows only) generator.FP8_DRAFT_MAX_ROWS is 16. Here: the drafter's FP8 multiplies swept
# at 32 and 64 rows (fp8_speed, one tiles file), then paired in one process (engine_speed
# --paired-batch) at 2 and 4 sequences: the loaded drafter (default), FP8 up to 64 rows on the
# 16-row tiles, and FP8 on the new tiles. If FP8 wins: FP8_TILES rows 32 and 64, and the limit.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
for rows in 32 64; do
    timeout 140 python3 bench/fp8_speed.py --shapes drafter --rows $rows --repeats 10 \
        --tiles-out "$OUT/fp8-$rows.json" --out "$OUT/fp8-speed-$rows.json" \
        >"$OUT/fp8-speed-$rows.log" 2>&1
    echo "fp8_speed $rows rc=$?"; grep -v '^{"bench"' "$OUT/fp8-speed-$rows.log" | tail -8
    pack
done
python3 - "$OUT" <<'PY'
import sys
from specpilot.kernels import tiles
out = sys.argv[1]
table = {}
for rows in (32, 64):
    table |= tiles.read(f"{out}/fp8-{rows}.json")["fp8"]
tiles.write(f"{out}/fp8-wide.json", {"fp8": table})
print(f"fp8-wide.json: {len(table)} tiles")
PY
S="--switch engine.generator.FP8_DRAFT_MAX_ROWS=64"
A="loaded|;fp8|$S;fp8t|$S --tiles $OUT/fp8-wide.json"
for batch in 2 4; do
    engine 1024 paired-b$batch 85 --paired-rounds 6 --paired-batch $batch --paired "$A"
    grep "^paired" "$OUT/engine-paired-b$batch.log"
    pack
done
archive_only
