"""What a low-precision drafter costs in acceptance (EngineConfig.draft_head, draft_weights),
measured on a real pair (default: the embedded SmolLM2-135M-Instruct target and the DFlash
drafter we trained for it), and that it changes no output.

Per dataset the first --num-prompts prompts are decoded AR, then speculatively with each arm
(--arms, ARMS: the target's own LM head and the loaded drafter; an FP8 head; an FP8 drafter and
head), and the bench reports the mean acceptance length (tokens a step), how often the arm's
proposals at a step equal those of the exact drafter and head from the same inputs (the first
proposal, all of them, each), and whether every output equals AR's. Real drafter, real
acceptance (no replay). Speed is not measured here: bench/engine_speed.py --draft-head and
--draft-weights at the Qwen3-8B shape on the H200 do that. The last line is one JSON object.
"""

from __future__ import annotations

import time

import torch
from draft_vocab_acceptance import generate, mean_acceptance, pair_arguments  # bench/ on path
from report import finish

from specpilot.config import EngineConfig
from specpilot.engine.llm import LLM
from specpilot.measure.datasets import load_problems
from specpilot.models.embedded import resolve_pair


def record_proposals(llm: LLM, exact: LLM) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Wrap llm's draft function (the PyTorch path): each call first proposes from the same
    inputs with `exact`'s drafter and head, then with its own, whose cache writes (the drafter's
    context keys and values) are thus the ones that stay; the list fills with both proposals
    [B, block - 1] (ours, exact)."""
    gen, ref = llm.generator, exact.generator
    pairs: list[tuple[torch.Tensor, torch.Tensor]] = []
    inner = gen._draft_fn

    def recording(*args, **kwargs):
        own = gen.drafter, gen.draft_head
        gen.drafter, gen.draft_head = ref.drafter, ref.draft_head
        try:
            want = inner(*args, **kwargs)
        finally:
            gen.drafter, gen.draft_head = own
        out = inner(*args, **kwargs)
        pairs.append((out.cpu(), want.cpu()))
        return out

    gen._draft_fn = recording
    return pairs


# --arms names: EngineConfig fields over the target's own head and the loaded drafter
ARMS = {
    "target": {},
    "fp8-head": {"draft_head": "fp8"},
    "fp8": {"draft_head": "fp8", "draft_weights": "fp8"},
    "int4-head": {},
    "int4": {},
}
INT4_GROUP = 128  # columns a 4-bit weight's scale covers (the int4 arms)


def fake_int4(w: torch.Tensor, group: int = INT4_GROUP) -> torch.Tensor:
    """w rounded as a 4-bit format would hold it, back in w's dtype: integers -8..7 times one
    fp16 scale a row's group of `group` columns (the group's peak over 7). Not a format of the
    engine (no kernel): the int4 arms ask what such a draft head or drafter would cost in
    acceptance before one is built."""
    rows, cols = w.shape
    padded = torch.nn.functional.pad(w.float(), (0, (-cols) % group)).view(rows, -1, group)
    scale = (padded.abs().amax(-1, keepdim=True) / 7).to(torch.float16).float()
    q = torch.where(scale > 0, (padded / scale.clamp(min=1e-30)).round().clamp(-8, 7), 0.0)
    return (q * scale).view(rows, -1)[:, :cols].to(w.dtype)


@torch.no_grad()
def to_int4(llm: LLM, layers: bool) -> int:
    """The int4 arms: the draft head (and with `layers` every linear of the drafter, oneDNN's
    packed copies packed again) replaced by fake_int4's rounding of its weights; returns the
    drafter linears changed."""
    from specpilot.layers import onednn

    gen = llm.generator
    gen.draft_head = fake_int4(gen.target.lm_head.weight.detach())
    changed = 0
    for module in gen.drafter.modules() if layers else ():
        if isinstance(module, (torch.nn.Linear, onednn.PackedLinear)):
            module.weight.copy_(fake_int4(module.weight))
            if isinstance(module, onednn.PackedLinear):  # the copy its forward reads
                module.packed = torch.ops.mkldnn._reorder_linear_weight(
                    module.weight.detach(), gen.block_size
                )
            changed += 1
    if layers and not changed:
        raise RuntimeError("int4: no linear of the drafter found to round")
    return changed


# arms whose drafter is changed after loading
AFTER_LOAD = {"int4-head": lambda llm: to_int4(llm, False), "int4": lambda llm: to_int4(llm, True)}


def main() -> None:
    p = pair_arguments(__doc__.splitlines()[0])
    p.add_argument("--arms", default="target,fp8-head,fp8", help=f"of {', '.join(ARMS)}")
    args = p.parse_args()

    target, draft, defaults = resolve_pair(args.target, args.draft, args.device)
    arms = [a for a in args.arms.split(",") if a]
    if "target" not in arms:
        arms.insert(0, "target")
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        p.error(f"--arms: unknown {unknown}; choose from {', '.join(ARMS)}")
    block = int(defaults["block_size"])
    base = dict(block_size=block, draft_head="target")
    llms = {
        arm: LLM(target, draft=draft, device=args.device, engine=EngineConfig(**base | ARMS[arm]))
        for arm in arms
    }
    for arm, change in AFTER_LOAD.items():
        if arm in llms:
            change(llms[arm])
    rows = []
    for name in args.datasets.split(","):
        prompts = [pr.prompt for pr in load_problems(name, args.num_prompts)]
        kw = dict(max_new_tokens=args.max_new_tokens, chat=True)
        t0 = time.perf_counter()
        ar = [o.output_ids for o in generate(llms["target"], prompts, speculative=False, **kw)]
        for head, llm in llms.items():
            pairs = record_proposals(llm, llms["target"]) if head != "target" else []
            outs = generate(llm, prompts, **kw)
            vars(llm.generator).pop("_draft_fn", None)  # the wrapper off
            first = sum(int((a[:, 0] == b[:, 0]).sum()) for a, b in pairs)
            whole = sum(int((a == b).all(dim=1).sum()) for a, b in pairs)
            steps = sum(a.shape[0] for a, _ in pairs)
            each = sum(int((a == b).sum()) for a, b in pairs)
            row = {
                "dataset": name,
                "arm": head,
                "config": ARMS[head],
                "prompts": len(prompts),
                "mean_acceptance": mean_acceptance(outs),
                "identical_to_ar": [o.output_ids for o in outs] == ar,
                "draft_calls": steps,
                "first_proposal_agrees": first / steps if steps else None,
                "all_proposals_agree": whole / steps if steps else None,
                "proposals_agree": each / sum(a.numel() for a, _ in pairs) if steps else None,
            }
            rows.append(row)
            agree = "" if not steps else (
                f", proposals agree with the exact head: first {first / steps:.4f}, "
                f"all {whole / steps:.4f} of {steps} draft calls, each "
                f"{row['proposals_agree']:.4f}"
            )  # fmt: skip
            print(f"{name} {head}: acceptance {row['mean_acceptance']:.3f}, identical to AR "
                  f"{row['identical_to_ar']}{agree} ({time.perf_counter() - t0:.0f} s)",
                  flush=True)  # fmt: skip
    report = {
        "bench": "draft_head_acceptance",
        "target": str(target),
        "draft": str(draft),
        "device": args.device,
        "max_new_tokens": args.max_new_tokens,
        "rows": rows,
        "note": "real pair, real acceptance (no replay); proposals compared per draft call",
    }
    finish(report, args.out)


if __name__ == "__main__":
    main()
