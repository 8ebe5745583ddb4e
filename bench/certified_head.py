"""How many rows the certified LM head reads twice (formats/certified.py), on real weights and at
the 8B shapes; runs on a CPU.

- `smollm2`: the embedded SmolLM2-135M-Instruct (real weights, its tied 49,152 x 576 head in
  bf16): greedy chat generations, then every position's head input (the last layer's output
  after the final norm) through the certified procedure;
- `qwen3-8b` / `llama3.1-8b`: a random normal head at the shape (std 0.02, as our synthetic
  checkpoints) and random normal inputs (as the synthetic model's normed hidden states).
For each row: the candidates against the final floor (what the procedure must read) and, as a
model of the kernel (its programs compare against the floor posted by the programs before
them), against a floor built in launch order with `--ahead` programs of `--block-n` rows still
running (labeled as a model). Each token is checked against the argmax of every exact logit.
Prints a table; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from report import finish  # bench/ is on sys.path when run as a script

from specpilot.formats.certified import certified_argmax_reference, certify, order_keys

SHAPES = {"qwen3-8b": (151936, 4096), "llama3.1-8b": (128256, 4096)}
PROMPTS = [
    "Write a Python function that checks whether a number is prime.",
    "Explain why the sky is blue in two sentences.",
    "List three uses of a hash map.",
    "What is the capital of France, and what river runs through it?",
]


def smollm2_inputs(new_tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(head [V, H] bf16, inputs [T, H] bf16): the head inputs at every position of greedy
    generations of PROMPTS by the embedded model."""
    from specpilot.engine.llm import LLM
    from specpilot.layers.attention import AttentionMeta, KVCache
    from specpilot.layers.rotary import RotaryTable
    from specpilot.models.embedded import default_target

    llm = LLM(default_target(), device="cpu", dtype="bfloat16")
    target = llm.target
    cfg = target.config
    rows = []
    for prompt in PROMPTS:
        ids = llm.encode(prompt, chat=True)
        out = llm.generate([ids], max_new_tokens=new_tokens, speculative=False)[0]
        seq = torch.tensor([ids + out.output_ids[:-1]])
        t = seq.shape[1]
        table = RotaryTable(
            cfg.head_dim, cfg.rope_theta, cfg.rope_scaling, t, "cpu", torch.bfloat16
        )
        cache = KVCache(cfg.num_layers, 1, cfg.num_kv_heads, t, cfg.head_dim, "cpu", torch.bfloat16)
        meta = AttentionMeta.causal(torch.arange(t)[None], t, table)
        with torch.no_grad():
            hidden = target(seq, meta, cache, capture=(cfg.num_layers - 1,)).hidden[0]
        rows.append(hidden[len(ids) - 1 :])
    return target.lm_head.weight.detach().to(torch.bfloat16), torch.cat(rows)


def modeled_kernel_reads(lower: torch.Tensor, upper: torch.Tensor, block_n: int, ahead: int,
                         dtype: torch.dtype) -> torch.Tensor:  # fmt: skip
    """A model of the kernel's reads [M]: program p (block_n rows) compares against the largest
    lower bound of its own rows and of programs before p - ahead (finished in launch order)."""
    m, n = lower.shape
    programs = -(-n // block_n)
    pad = programs * block_n - n
    low = torch.nn.functional.pad(lower, (0, pad), value=float("-inf")).view(m, programs, block_n)
    up = torch.nn.functional.pad(upper, (0, pad), value=float("-inf")).view(m, programs, block_n)
    local = low.max(dim=2).values
    before = torch.cummax(local, dim=1).values
    seen = torch.full_like(local, float("-inf"))
    if programs > ahead:
        seen[:, ahead:] = before[:, : programs - ahead]
    floor = torch.maximum(seen, local)
    dropped = up.to(dtype).float() < floor.to(dtype).float()[:, :, None]
    return (~dropped).sum(dim=(1, 2))


def measure(name: str, head: torch.Tensor, inputs: torch.Tensor, args) -> dict:
    start = time.perf_counter()
    certified = certify(head)
    certify_s = time.perf_counter() - start
    found, candidates = certified_argmax_reference(inputs, certified)
    exact = (inputs.float() @ head.float().T).to(head.dtype)
    keys = order_keys(exact)
    best = keys.max(dim=1, keepdim=True).values
    index = torch.arange(head.shape[0]).expand_as(keys)
    want = torch.where(keys == best, index, head.shape[0]).min(dim=1).values
    af = inputs.float()
    approx = (af @ certified.weight.float().T) * certified.scale
    reach = af.norm(dim=1, keepdim=True) * certified.radius
    modeled = modeled_kernel_reads(approx - reach, approx + reach, args.block_n, args.ahead,
                                   head.dtype).float()  # fmt: skip
    counts = candidates.sum(dim=1).float()
    rel = (certified.radius.double() / head.double().norm(dim=1).clamp(min=1e-30)).median()
    row = {
        "model": name,
        "rows": int(inputs.shape[0]),
        "vocab": int(head.shape[0]),
        "hidden": int(head.shape[1]),
        "tokens_equal_exact_argmax": bool(torch.equal(found, want)),
        "candidates_mean": counts.mean().item(),
        "candidates_max": counts.max().item(),
        "modeled_kernel_reads_mean": modeled.mean().item(),
        "modeled_kernel_reads_max": modeled.max().item(),
        "modeled_extra_bytes_mean": modeled.mean().item() * head.shape[1] * head.element_size(),
        "radius_over_row_norm_median": rel.item(),
        "int8_bytes": certified.weight.numel(),
        "bf16_bytes": head.numel() * head.element_size(),
        "certify_s": certify_s,
    }
    print(
        f"{name:<12} {row['rows']:>5} rows  exact argmax {row['tokens_equal_exact_argmax']}  "
        f"candidates mean {row['candidates_mean']:8.1f} max {row['candidates_max']:6.0f}  "
        f"modeled kernel reads mean {row['modeled_kernel_reads_mean']:8.1f}  "
        f"radius/|row| {rel:.4f}"
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--models", default="smollm2,qwen3-8b", help="smollm2, qwen3-8b, llama3.1-8b"
    )
    parser.add_argument("--new-tokens", type=int, default=48, help="smollm2: tokens a prompt")
    parser.add_argument("--rows", type=int, default=8, help="synthetic shapes: input rows")
    parser.add_argument("--block-n", type=int, default=128, help="the modeled kernel's tile rows")
    parser.add_argument("--ahead", type=int, default=132, help="modeled programs in flight")
    parser.add_argument("--out", type=Path, default=None, help="JSON report path")
    args = parser.parse_args()
    torch.manual_seed(0)
    rows = []
    for name in args.models.split(","):
        if name == "smollm2":
            head, inputs = smollm2_inputs(args.new_tokens)
        elif name in SHAPES:
            n, k = SHAPES[name]
            head = (torch.randn(n, k) * 0.02).to(torch.bfloat16)
            inputs = torch.randn(args.rows, k).to(torch.bfloat16)
        else:
            parser.error(f"unknown model {name!r}")
        rows.append(measure(name, head, inputs, args))
    modeled = "modeled_*: a model of the kernel's reads (module doc), not a measurement"
    report = {"bench": "certified_head", "rows": rows, "block_n": args.block_n,
              "ahead": args.ahead, "modeled": modeled}  # fmt: skip
    finish(report, args.out)


if __name__ == "__main__":
    main()
