#!/usr/bin/env bash
# Device call (~3 min; no carry): run 133. The bf16 forwards' timeline with the dot1 tiles under
# EngineConfig.pdl PDLS (default "auto all decode"): whether the one-row down multiply, launched
# plainly after gate|up under "chain" (1.3 us gaps against 0.45 with PDL), gains with PDL.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
for pdl in ${PDLS:-auto all decode}; do
    timeout 150 python3 bench/timeline.py --arms bf16 --tiles bench/h200/dot1.json --pdl "$pdl" \
        --replays 20 --out "$OUT/timeline-pdl-$pdl.json" >"$OUT/timeline-pdl-$pdl.log" 2>&1
    echo "pdl $pdl rc=$?"
    grep -E "^(bf16  |  linear 1x4096x12288|  linear 1x24576|  (rmsnorm|rope|merge|attention) )" \
        "$OUT/timeline-pdl-$pdl.log" | cut -c1-160
    pack
done
archive_only
