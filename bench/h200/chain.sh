#!/usr/bin/env bash
# Device call (~7 min, a guess; no carry): pdl "chain" as the 8B default (run 107: AR 1.023x
# over "kernels" in one process). (1) Qwen3-8B shape, one process: today's defaults ("chain")
# against "kernels" and the old "small" without the epilogue; (2) the same at the Llama-3.1-8B
# shape (new against kernels); (3) the one-row and 16-row floors under "chain": every kernel
# but the multiplies left out (g), rope + attention left out (na), one process each (ablated
# outputs are meaningless, the times are the point; bench/h200/arms.sh); (4) W12 against
# bf16 end to end with today's defaults, paired rounds. Everything comes back in one all.tgz.
set -u
export PYTHONPATH=$PWD/src:$PWD
for part in "qwen3-8b|new|;kern|--pdl kernels;small|--pdl small --swiglu-epilogue 0" \
            "llama3.1-8b|new|;kern|--pdl kernels"; do
    model=${part%%|*}
    timeout 200 python3 bench/engine_speed.py --contexts 1024 --models "$model" \
        --paired "${part#*|}" --paired-rounds "${ROUNDS:-8}" \
        --out "$OUT/paired-$model.json" >"$OUT/paired-$model.log" 2>&1
    echo "paired $model rc=$?"; grep "^paired" "$OUT/paired-$model.log" | cut -c1-200
done
ARMS="g|--ablate norm,swiglu,rope,attention;na|--ablate rope,attention" bash bench/h200/arms.sh
timeout "${E2E_S:-240}" python3 bench/w12_speed.py --rows '' --e2e 1024 --paired "${W12_ROUNDS:-6}" \
    --out "$OUT/w12-e2e.json" >"$OUT/w12-e2e.log" 2>&1
echo "w12 e2e rc=$?"; grep -E "^(e2e|paired)" "$OUT/w12-e2e.log" | cut -c1-250
(cd "$OUT" && tar czf all.tgz -- *.json *.log arms.tgz && rm -f -- *.json *.log arms.tgz)
