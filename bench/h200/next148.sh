#!/usr/bin/env bash
# Device call (~6 min; no carry): the next session's first call. Timeline variants at the
# Qwen3-8B shape, 1k, bf16 and W12: launch.EVEN_SHARED (a multiply of several waves right after
# a multiply launched with PDL, spread to at most ceil(programs / SMs) programs an SM: the
# one-row down behind the element-wise gate|up, W12's split-K 16-row down), after the GPU test
# that its padded launch gives the same bits; then engine_speed at 1k with --profile 1 (the
# eager speculative step's kernels, PyTorch's among them). 32k: bench/h200/next149.sh.
set -u
here="$(dirname "$0")"
export PYTHONPATH=$PWD/src:$PWD
source "$here/lib.sh"
timeout 120 python3 -m pytest -q tests/test_kernels.py -k "shared or wide_pdl" >"$OUT/tests.log" 2>&1
echo "tests rc=$?"; tail -2 "$OUT/tests.log"
python3 -c "import torch; p = torch.cuda.get_device_properties(0); print('shared a SM', \
getattr(p, 'shared_memory_per_multiprocessor', None), 'opt-in', p.shared_memory_per_block_optin)"
V="base|;ev|--switch kernels.launch.EVEN_SHARED=1;base2|"
TESTS_K='' ARMS="bf16;w12:auto" REPLAYS=15 TL_S=150 VARIANTS="$V" CONTEXT=1024 \
    bash "$here/timeline.sh" | grep -E "^(bf16|w12\S*) .* (decode|verify|draft) +[0-9]"
unpack
pack
engine 1024 profile 200 --profile 1  # the eager step's kernels, PyTorch's included (LOG plan 5)
grep -E "^qwen3-8b (step|verify|draft) forward" "$OUT/engine-profile.log" | cut -c1-300
pack; archive_only
