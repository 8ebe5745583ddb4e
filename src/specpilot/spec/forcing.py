"""Token forcing: re-run the target over prompt + output and check every output token.

A teacher-forced pass (one forward, or several over chunks of positions sharing a cache) gives,
for each output position, the target's logits given everything before it. A token that is the
argmax passes. A token that is not is a failure, unless its logit is within `threshold` of the
maximum (in fp32): then the two choices are a near-tie, whose outcome legitimately depends on
summation order (batching, block size, kernels), and it is reported as such.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch

from specpilot.layers.attention import AttentionMeta, KVCache
from specpilot.layers.rotary import RotaryTable
from specpilot.models.target import TargetModel

# Default near-tie margins by the dtype the output was generated in. bf16: on a random-weight
# Qwen3-8B-shaped target, bf16 decoding vs an fp32 teacher-forced reference differed by up to 0.245
# in logit (docs/LOG.md, run 2); 0.5 leaves 2x room. fp32 outputs are held to 1e-3.
DEFAULT_THRESHOLDS = {"float32": 1e-3, "float16": 0.1, "bfloat16": 0.5}


def default_threshold(generated_dtype: torch.dtype | str) -> float:
    name = str(generated_dtype).removeprefix("torch.")
    return DEFAULT_THRESHOLDS.get(name, DEFAULT_THRESHOLDS["float32"])


@dataclass
class ForcedToken:
    index: int  # position in the output
    token: int  # the emitted token
    argmax: int  # the target's choice under teacher forcing
    margin: float  # logit[argmax] - logit[token], fp32, >= 0


@dataclass
class ForcingReport:
    num_checked: int
    threshold: float
    reference: str = ""  # dtype the teacher-forced reference ran in
    failures: list[ForcedToken] = field(default_factory=list)
    near_ties: list[ForcedToken] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict:
        return {
            "passed": self.passed,
            "num_checked": self.num_checked,
            "threshold": self.threshold,
            "reference": self.reference,
            "num_failures": len(self.failures),
            "num_near_ties": len(self.near_ties),
            "failures": [asdict(f) for f in self.failures],
            "near_ties": [asdict(t) for t in self.near_ties],
        }


# Prompt positions a teacher-forced forward takes at once. The eager attention behind it
# (memory-efficient SDPA with keys expanded to every query head and a [T, kv_len] mask) and the
# logits of every row grow with the rows of one forward: at a 32k context in one piece the
# logits alone are ~10 GB at the Qwen3-8B vocabulary. In chunks the memory is set by the chunk.
FORCING_CHUNK = 4096


@torch.inference_mode()
def token_forcing(
    target: TargetModel,
    prompt_ids: list[int],
    output_ids: list[int],
    threshold: float | None = None,
    generated_dtype: torch.dtype | str | None = None,
    chunk: int = FORCING_CHUNK,
) -> ForcingReport:
    """Check output_ids against `target` teacher-forced on prompt_ids + output_ids.

    threshold: near-tie margin; by default that of `generated_dtype` (the dtype the output was
    generated in), else of the target's own dtype.
    chunk: positions a forward takes (the cache carries the rest); logits are computed only for
    the rows that predict an output token.
    """
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    param = target.model.embed_tokens.weight  # never W12 (an lm_head may be)
    device, dtype = param.device, param.dtype
    if threshold is None:
        threshold = default_threshold(generated_dtype or dtype)
    report = ForcingReport(len(output_ids), threshold, str(dtype).removeprefix("torch."))
    if not output_ids:
        return report
    ids = torch.tensor([prompt_ids + output_ids[:-1]], device=device)
    length = ids.shape[1]
    first = len(prompt_ids) - 1  # the row whose logits predict output_ids[0]
    cfg = target.config
    cache = KVCache(cfg.num_layers, 1, cfg.num_kv_heads, length, cfg.head_dim, device, dtype)
    table = RotaryTable(cfg.head_dim, cfg.rope_theta, cfg.rope_scaling, length, device, dtype)
    parts = []
    for start in range(0, length, chunk):
        end = min(start + chunk, length)
        positions = torch.arange(start, end, device=device)[None, :]
        meta = AttentionMeta.causal(positions, end, table)
        if end <= first:  # prompt only: the cache is the point, one row of logits at most
            last = torch.tensor([end - start - 1], device=device)
            target(ids[:, start:end], meta, cache, logit_rows=last)
            continue
        logits = target(ids[:, start:end], meta, cache).logits[0]
        parts.append(logits[max(first - start, 0) :].float())
    logits = torch.cat(parts)  # [len(output_ids), vocab]
    emitted = torch.tensor(output_ids, device=device)
    best = logits.argmax(dim=-1)
    margins = logits.max(dim=-1).values - logits.gather(1, emitted[:, None])[:, 0]
    for i in (best != emitted).nonzero()[:, 0].tolist():
        entry = ForcedToken(i, output_ids[i], int(best[i]), float(margins[i]))
        (report.near_ties if entry.margin < threshold else report.failures).append(entry)
    return report
