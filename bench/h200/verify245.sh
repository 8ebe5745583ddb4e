#!/usr/bin/env bash
# Device call (~3 min + cold start; no carry), prepared in session 45, not yet run: run 245.
# Issue 3's last row is spec@6.55 (1,279-1,299 on runs 241-244's machines against 1,300): the
# verify forward's LM head (exact: 277 us + argmax 14) is the one large multiply it has not
# tried on F16 since STAT_ROWS and 2 warps (run 238, F16 on 4 warps before them: 370 us with
# every verify block certified, "--target-head certified"). Verify timeline, Qwen3-8B 1k:
# base (exact verify head) against the certified head on 16-row F16 tiles (64 x 256 on 4 and 2
# warps, 128 x 256), each with the first wave's checks deferred (default, DEFER_TILES -1) and
# not (0), base2. The verify forward has 16 real rows, so STAT_ROWS does not apply: the exact
# pass over the union of ~2,800-4,400 candidate rows (16 rows' floors) is the suspect.
# Prediction: certified verify 300-370 us, no win: then the exact pass needs its own launch
# against the final floors (plan item 0 (a)).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
t=bench/h200/verify245
C="--target-head certified"
V="base|"
for v in v16w4 v16w2 v16n128; do
    V+=";$v|$C --tiles $t/$v.json;${v}d0|$C --tiles $t/$v.json --switch kernels.certified.DEFER_TILES=0"
done
variants bf16 "$V;base2|" 300
grep -E "^bf16 \S+ verify: (span|attention|argmax)" "$OUT/timeline-variants-1024.log" | cut -c1-160
pack; archive_only
