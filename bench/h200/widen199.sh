#!/usr/bin/env bash
# Device call (~8 min + cold start; no carry), session 40: the certified head's int8 weights
# widened without I2F (kernels/certified.widen_int8: the byte under a float's mantissa, the
# offset taken away; the element-wise tiles converted each weight by I2F, 16 a clock per SM:
# run 198's one-row head read 2.4 TB/s in the graph). The tensor-core tiles already had
# Triton's own bf16 trick; for them maxnreg 168 (3 programs an SM, as the FP8 head) is new.
# 1. GPU tests: the widening of every byte (bf16, fp16, fp32), the int8 sums choosing the
#    candidates, the kernel's tokens, handed norm and packing, generation with forcing.
# 2. Timeline, Qwen3-8B at 1k: exact twice, the certified head on the compiled tiles (e1, the
#    rules' 16-row) and on bench/h200/certified200/{a..d} (one-row and 16-row tiles each).
# 3. compose_tiles --kind certified: each row count's fastest tile; paired AR and spec@6.55
#    against the exact head (6 rounds).
# Prediction: the one-row head 262 -> ~180-200 us (decode 4.09 -> ~4.02 ms: AR +1.5-2%);
# 16 rows 344 -> ~300 (verify still over the exact head's 291).
set -u
export PYTHONPATH=$PWD/src:$PWD
source "$(dirname "$0")/lib.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.log"
TESTS_K="widen or int8_sums or exact_heads or handed or generation" TESTS_S=110 \
    gpu_tests tests/test_certified.py
T=bench/h200/certified200
C="--target-head certified"
variants bf16 "exact|;cert|$C;a|$C --tiles $T/a.json;b|$C --tiles $T/b.json;\
c|$C --tiles $T/c.json;d|$C --tiles $T/d.json;exact2|" 200
pack
python3 bench/compose_tiles.py "$OUT/timeline-variants-1024.json" --kind certified --base cert \
    --tiles-out "$OUT/certified-composed.json" --out "$OUT/compose.json" 2>&1 | grep -v '^{'
pack
engine 1024 paired 170 --paired-rounds 6 --taus 6.55 \
    --paired "exact|;certified|$C --tiles $OUT/certified-composed.json"
grep "^paired" "$OUT/engine-paired.log" | cut -c1-300
pack; archive_only
