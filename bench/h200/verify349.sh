#!/usr/bin/env bash
# Device call (~5 min + cold start; no carry): run 349, issue 7. Whether w12_tokens.VERIFY (the
# verify's o on w12_tokens, with run 346's proxy fence now in it) goes on by default. Run 347's
# end to end (H100, paired 3): Qwen3-8B spec 1.181x over bf16 with it against W12 base's
# 1.157x; run 348's Llama-3.1-8B 1.096x both, their intervals wide. The verify graph back to
# back is the finer measure: base, tok, base2, tok2 (every matrix W12) for Qwen3-8B, then
# Llama-3.1-8B, within VAR_S seconds each.
# Prediction: tok's verify 0.05-0.07 ms under base / base2 on both (run 345, Qwen3-8B: 4.614
# against 4.676 / 4.675), the decode level (VERIFY takes no one-row multiply).
set -u
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
source "$(dirname "$0")/lib.sh"
card
for model in qwen3-8b llama3.1-8b; do
    MODEL=$model variants "w12:qkv,o,gate_up,down" \
        "base|;tok|$(sw w12_tokens.VERIFY=1);base2|;tok2|$(sw w12_tokens.VERIFY=1)" \
        "${VAR_S:-170}" | grep verify
    back_to_back "$OUT/timeline-variants-1024-$model.json"
    pack
done
archive_only
