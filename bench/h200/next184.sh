#!/usr/bin/env bash
# Device call (~3 min + cold start; no carry), session 36, after run 183 (FP8 drafts of 2 and 4
# sequences 0.95x the loaded drafter's, single unpaired runs in separate processes): now
# generator.FP8_DRAFT_MAX_ROWS is 16, so 2 and 4 sequences draft on the loaded drafter. The
# same comparison paired in one process (engine_speed --paired-batch, new): FP8 up to 64 rows
# (the switch) against the default, 2 sequences then 4, 6 rounds each.
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
A="loaded|;fp8|--switch engine.generator.FP8_DRAFT_MAX_ROWS=64"
engine 1024 paired-b2 85 --paired-rounds 6 --paired-batch 2 --paired "$A"
grep "^paired" "$OUT/engine-paired-b2.log"
pack
engine 1024 paired-b4 85 --paired-rounds 6 --paired-batch 4 --paired "$A"
grep "^paired" "$OUT/engine-paired-b4.log"
pack; archive_only
