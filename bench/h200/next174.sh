#!/usr/bin/env bash
# Device call (~6 min + cold start; no carry), session 34: launch.O_EARLY (one-row forwards: the
# attention's merge lets o launch before its own wait, and o asks for its rows in L2 before its
# wait, during the attention): timeline variants bf16 and W12 "auto" at 1k, then, where its bf16
# one-row forward beats the base's by >= 0.4% back to back, paired, pipelined, 5 rounds (whose
# arms' tokens must equal the base's). No GPU tests: the session's device time left (475 s).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
S="--switch kernels.launch.O_EARLY=1"
variants "bf16;w12:auto" "base|;oe|$S;base2|" 130 | tee "$OUT/variants.txt"
pack
if python3 - "$OUT/variants.txt" <<'PY'
import sys
b2b = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 5 and f[0] == "bf16" and f[2] == "decode":
        b2b[f[1]] = float(f[4])
base = (b2b["base"] + b2b["base2"]) / 2
print("oe / base decode b2b", round(b2b["oe"] / base, 4))
sys.exit(0 if b2b["oe"] <= 0.996 * base else 1)
PY
then
    engine 1024 paired 170 --paired-rounds 5 --paired "base|--pipeline 1;oe|--pipeline 1 $S"
    grep "^paired" "$OUT/engine-paired.log"
fi
pack; archive_only
