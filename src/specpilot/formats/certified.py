"""A certified greedy LM head: the exact argmax of the logits while reading the head in 8 bits.

Greedy decoding needs one thing from the LM head: the index of the largest logit. At the 8B
shapes the head is 1.0-1.25 GB of the ~15 GB a decode step reads. `CertifiedHead` keeps an int8
copy of the head (`weight` [N, K], a scale per row, half the bytes) next to the exact one, and
finds the exact argmax in one multiply (kernels/linear.certified_argmax):

1. approx_n = s_n * sum_k a_k q_nk, from the int8 rows (a: the head's input row, bf16);
2. each row's logit lies within ||a|| * radius_n of approx_n (below), so lower_n and upper_n
   bracket it; the largest lower bound is a floor that the winning logit reaches;
3. a row whose upper bound stays under the floor cannot win; the others (the candidates, a few
   hundred of 151,936 with random weights) get their exact logit from the bf16 rows, and the
   largest of those, first index first, is the token.
So the token is the argmax of the exact logits, rounded to the model's dtype as the plain head
rounds them, and ties go to the first index (torch.argmax's order). Nothing is approximate in
the result: only which rows get read twice depends on the int8 copy.

The bound. Let W be the head's rows, Q s their int8 copy and E = Q s - W (per row). For an input
row a, D_n = sum_k a_k W_nk (a real number). Then
    |approx_n - D_n| <= |a . E_n| + (rounding of the int8 sums) <= ||a|| ||E_n|| + ...
by Cauchy-Schwarz. The kernel sums in fp32 in an order of its own (element-wise partial sums,
or tensor cores, which may truncate instead of rounding to nearest); any order of K additions,
each off by at most 2u (u = 2^-24) of its result, errs by at most 2Ku sum_k |a_k x_k| <= 2Ku
||a|| ||x||. The exact logit that the kernel would compute, fl_n, is such a sum of a_k W_nk.
`radius` holds, per row and rounded up,
    c_n = (||E_n|| + 4Ku (||W_n|| + ||Q_n s_n||)) (1 + 4Ku),
which covers both sums' rounding, the scaling by s_n, forming approx +- ||a|| c_n in fp32, and
the kernel's own ||a|| (a sum of K squares, then a square root: relative error under 2Ku). So
lower_n <= fl_n <= upper_n for every row, whatever the input.

Why the argmax is exact. The logits the plain head returns are r(fl_n * p) (p >= 0: 1, or the
handed norm's 1 / RMS; r: rounding to the model's dtype), and rounding and scaling by p >= 0
never reverse an order. Let F be the floor a row was compared against: F = r'(lower_j * p) for
some row j (r': fp32 rounding). Row n is dropped only when r(r'(upper_n * p)) < r(F). Then
    r(fl_n * p) <= r(r'(upper_n * p)) < r(F) <= r(r'(fl_j * p)),
so row j's logit is strictly larger and n is not the argmax. The argmax row is therefore always
a candidate, its exact logit is computed, and the first index among the largest exact logits
over the candidates is the argmax over all rows. Non-finite inputs (||a|| inf or NaN) make
every row a candidate. The rounding r in the comparison matters: without it a dropped row could
round to the winner's value and, with a smaller index, be torch.argmax's choice.

fp16 sums (the kernel's F16 tiles). bf16's inputs cannot meet int8 weights on the tensor cores
without widening each weight to bf16 (three instructions a weight, as many as the products
element-wise); fp16 takes a weight in one. So the kernel may sum a' = fp16(a) instead of a:
    |approx'_n - D_n| <= |a' . Q_n s_n - a . Q_n s_n| + |a . E_n| + ... <= ||a - a'|| ||Q_n s_n||
                         + ||a|| ||E_n|| + ...,
and the rounding of approx' is at most 2Ku ||a'|| ||Q_n s_n|| <= 2Ku (||a|| + ||a - a'||)
||Q_n s_n||. Every |q| <= 127, so ||Q_n s_n|| <= 127 sqrt(K) s_n, and the kernel adds
||a - a'|| 254 sqrt(K) s_n to the reach: twice what the change needs, which covers the change's
own rounding and one more fp32 addition (the other terms' slack covers theirs). a - a' is 0
where fp16 holds a bf16 value (normal fp16 magnitudes), a few 2^-25 where a is under fp16's
normal range, so the bounds barely widen; an input past fp16's range (inf) makes every row a
candidate, as a non-finite input does.

Cost: the int8 rows (N K bytes) plus the candidates' bf16 rows. With random normal weights at
the Qwen3-8B shape ||E_n|| is ~0.86% of ||W_n||: ~200 candidates against the final floor; on
the embedded SmolLM2's real head 3.5 a position (bench/certified_head.py counts them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

INT8_MAX = 127
CHUNK_ROWS = 8192
UNIT = 2.0**-24  # fp32's unit roundoff
KERNEL_DTYPES = (torch.bfloat16, torch.float16)


@dataclass
class CertifiedHead:
    """An [N, K] LM head with its int8 copy: exact = the head's own weights (read only for the
    candidate rows), weight [N, K] int8, scale [N] fp32 (weight * scale ~= exact) and radius [N]
    fp32 (the module doc's c_n)."""

    exact: torch.Tensor
    weight: torch.Tensor
    scale: torch.Tensor
    radius: torch.Tensor

    def __post_init__(self) -> None:
        n, k = self.exact.shape
        if self.exact.dim() != 2 or self.exact.dtype not in KERNEL_DTYPES:
            raise ValueError(f"a certified head wraps a bf16/fp16 [N, K] head, got {self.exact}")
        if self.weight.shape != (n, k) or self.weight.dtype != torch.int8:
            raise ValueError(f"certified head weight must be int8 [{n}, {k}]")
        for name in ("scale", "radius"):
            t = getattr(self, name)
            if t.shape != (n,) or t.dtype != torch.float32:
                raise ValueError(f"certified head {name} must be float32 [{n}]")
        if len({t.device for t in (self.exact, self.weight, self.scale, self.radius)}) != 1:
            raise ValueError("a certified head's tensors must share one device")

    @property
    def shape(self) -> tuple[int, int]:
        return self.exact.shape[0], self.exact.shape[1]

    @property
    def device(self) -> torch.device:
        return self.exact.device

    def nbytes(self) -> int:
        """What its multiply reads at least: the int8 rows and the per-row scale and radius."""
        return self.weight.numel() + 8 * self.scale.numel()


def certify(exact: torch.Tensor) -> CertifiedHead:
    """The int8 copy of a head [N, K] (bf16/fp16): per row, scale = its largest magnitude / 127
    (1 for a row of zeros), weights rounded to nearest; and the radius, computed in float64 and
    rounded up. A non-finite weight has no bound: refused."""
    if exact.dim() != 2 or exact.dtype not in KERNEL_DTYPES:
        raise ValueError(f"certify wants a bf16/fp16 [N, K] head, got {exact.dtype}")
    n, k = exact.shape
    weight = torch.empty(n, k, dtype=torch.int8, device=exact.device)
    scale = torch.empty(n, dtype=torch.float32, device=exact.device)
    radius = torch.empty(n, dtype=torch.float32, device=exact.device)
    slack = 4 * k * UNIT
    for lo in range(0, n, CHUNK_ROWS):
        w = exact[lo : lo + CHUNK_ROWS].double()
        if not torch.isfinite(w).all():
            raise ValueError("a certified head needs finite weights")
        top = w.abs().amax(dim=1)
        s = torch.where(top > 0, top / INT8_MAX, torch.ones_like(top)).float()
        q = torch.round(w / s.double()[:, None]).clamp_(-INT8_MAX, INT8_MAX)
        stored = q * s.double()[:, None]
        error = (stored - w).norm(dim=1)
        c = (error + slack * (w.norm(dim=1) + stored.norm(dim=1))) * (1 + slack)
        weight[lo : lo + CHUNK_ROWS] = q.to(torch.int8)
        scale[lo : lo + CHUNK_ROWS] = s
        # rounded up: float32's nearest may lie below the float64 value
        up = c.float()
        radius[lo : lo + CHUNK_ROWS] = torch.where(
            up.double() < c, torch.nextafter(up, torch.full_like(up, float("inf"))), up
        )
    return CertifiedHead(exact, weight, scale, radius)


def order_keys(values: torch.Tensor) -> torch.Tensor:
    """Each value's sort key in torch.argmax's order (int64, larger wins): the values' dtype
    bits made monotone, -0 as +0, every NaN above +inf. The kernel packs the same key with the
    row index (kernels/certified.py)."""
    bits = values.view(torch.int16).to(torch.int64)
    bits = torch.where(bits == -32768, 0, bits)
    bits = torch.where(bits < 0, bits ^ 0x7FFF, bits)
    return torch.where(torch.isnan(values), 0x7FFF, bits)


def bounds(
    a: torch.Tensor, head: CertifiedHead, f16: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """approx [M, N] and reach [M, N] in float32 as the kernel forms them (f16: the sums of the
    inputs rounded to fp16, module doc), and sure [M, 1] (False: every row a candidate)."""
    af = a.float()
    summed = a.half().float() if f16 else af
    approx = (summed @ head.weight.float().T) * head.scale[None, :]
    norm = af.norm(dim=1, keepdim=True)
    reach = norm * head.radius[None, :]
    sure = torch.isfinite(norm)
    if f16:
        change = (af - summed).norm(dim=1, keepdim=True)
        reach = reach + change * (head.scale * 254.0 * math.sqrt(a.shape[1]))[None, :]
        sure &= torch.isfinite(change)
    return approx, reach, sure


def certified_argmax_reference(
    a: torch.Tensor, head: CertifiedHead, post: torch.Tensor | None = None, f16: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """The module doc's procedure in PyTorch with one global floor: a [M, K] (the head's input
    rows, its dtype), post [M] (p; None: 1), f16 (the int8 sums of a rounded to fp16) ->
    (tokens [M] int64, candidates [M, N] bool). The exact logits are computed for every row
    here; only the candidates' take part."""
    n, k = head.shape
    if a.dim() != 2 or a.shape[1] != k or a.dtype != head.exact.dtype:
        raise ValueError(f"a must be [M, {k}] {head.exact.dtype}, got {a.shape} {a.dtype}")
    af = a.float()
    p = torch.ones(a.shape[0]) if post is None else post.float().cpu()
    approx, reach, sure = bounds(a, head, f16)
    lower = ((approx - reach) * p[:, None]).cpu()
    upper = ((approx + reach) * p[:, None]).cpu()
    floor = lower.max(dim=1, keepdim=True).values
    dtype = head.exact.dtype
    dropped = upper.to(dtype).float() < floor.to(dtype).float()
    candidates = ~(dropped & sure.cpu())
    exact = ((af @ head.exact.float().T).cpu() * p[:, None]).to(dtype)
    keys = order_keys(exact)
    keys = torch.where(candidates, keys, torch.iinfo(torch.int64).min)
    best = keys.max(dim=1, keepdim=True).values
    index = torch.arange(n)[None, :].expand_as(keys)
    tokens = torch.where(keys == best, index, n).min(dim=1).values
    return tokens, candidates
