#!/usr/bin/env bash
# Device call (~8 min + cold start; no carry), session 41. The one-row certified head is 213.5
# us in the graph against 148.3 for its int8 bytes (run 204's timeline); run 198 put ~25 us in
# the candidates' exact pass, the rest in the int8 multiply and its epilogue. Each of the
# 4,748 programs of the 32-row tile ends in a chain of dependent atomics (the row's floor, the
# deferred tile's flag, the key, the counter): fewer, wider programs pay that tail fewer times.
# 1. Timeline, Qwen3-8B at 1k (certified-decode, today's "auto"): base twice, the one-row tiles
#    of bench/h200/certified207 (BLOCK_N 64 and 128; the base tile with 6 load stages), and the
#    base tile with no deferred check (DEFER_TILES=0) and with four a multiprocessor (528).
# 2. compose_tiles --kind certified; if a tile is taken, paired AR (8 rounds) against today's.
# Prediction: 40% that a wider tile brings the head under ~195 us (decode -15 us or more).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
card
T=bench/h200/certified207
V="base|"
for f in n64k128 n64k256 n64k256w8 n128k128w8 n32k256s6; do V="$V;$f|--tiles $T/$f.json"; done
V="$V;nodefer|--switch kernels.certified.DEFER_TILES=0;defer528|--switch \
kernels.certified.DEFER_TILES=528;base2|"
variants bf16 "$V" 230
pack
python3 bench/compose_tiles.py "$OUT/timeline-variants-1024.json" --kind certified --base base \
    --tiles-out "$OUT/certified-composed.json" --out "$OUT/compose.json" 2>&1 | grep -v '^{'
pack
if grep -q '"kernel"' "$OUT/certified-composed.json" 2>/dev/null; then
    engine 1024 paired 170 --paired-rounds 8 --taus 6.55 \
        --paired "base|;composed|--tiles $OUT/certified-composed.json"
    grep "^paired" "$OUT/engine-paired.log" | cut -c1-300
fi
pack; archive_only
