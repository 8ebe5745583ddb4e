"""What PyTorch's scaled_dot_product_attention costs on a shape it has not seen before.

The engine's eager forwards (prompt prefill of the target, the drafter's prompt context) call
`layers.attention.attend`: SDPA with a boolean mask and grouped-query heads. H200 run 35 found
the drafter's prompt prefill of the embedded pair took 50-80 ms for a prompt length not seen
before and ~4.4 ms for one seen before. This times SDPA's first call at fresh lengths against
the steady state, for the default backend choice and for each backend alone, with GQA heads
given as they are (`enable_gqa`) or expanded. Prints a table; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import functools
import time

import torch
import torch.nn.functional as F
from report import finish  # bench/ is on sys.path when run as a script
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {
    "default": None,
    "cudnn": [SDPBackend.CUDNN_ATTENTION],
    "efficient": [SDPBackend.EFFICIENT_ATTENTION],
    "flash": [SDPBackend.FLASH_ATTENTION],
    "math": [SDPBackend.MATH],
}
SHAPES = {"smollm2-135m": (9, 3, 64), "qwen3-8b": (32, 8, 128)}  # heads, kv heads, head dim


def inputs(heads: int, kv_heads: int, dim: int, rows: int, length: int, expand: bool):
    q = torch.randn(1, heads, rows, dim, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, kv_heads, length, dim, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    if expand:
        k = k.repeat_interleave(heads // kv_heads, dim=1)
        v = v.repeat_interleave(heads // kv_heads, dim=1)
    mask = torch.ones(rows, length, device="cuda", dtype=torch.bool).tril(length - rows)
    return q, k, v, mask[None, None]


def attention(q, k, v, mask, gqa: bool, backends) -> torch.Tensor:  # noqa: ANN001
    if backends is None:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa)
    with sdpa_kernel(backends):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa)


def timed(fn) -> float:  # noqa: ANN001
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", default="301,347,389,433,467", help="fresh prompt lengths")
    parser.add_argument("--out")
    args = parser.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    report: dict = {"bench": "sdpa_shapes", "torch": torch.__version__, "rows": []}
    for backends in BACKENDS.values():  # each backend's one-off setup, on a length not used
        q, k, v, mask = inputs(9, 3, 64, 64, 64, expand=True)
        try:
            with sdpa_kernel(backends or [SDPBackend.MATH]):
                F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        except RuntimeError:
            pass
    offset = 0
    for model, (heads, kv_heads, dim) in SHAPES.items():
        for name, backends in BACKENDS.items():
            for expand in (False, True):
                offset += 1  # fresh lengths for every arm: no plan cached by an earlier arm
                firsts, steady, error = [], [], None
                for length in lengths:
                    length += offset
                    q, k, v, mask = inputs(heads, kv_heads, dim, length, length, expand)

                    gqa = not expand and heads != kv_heads
                    call = functools.partial(attention, q, k, v, mask, gqa, backends)

                    try:
                        firsts.append(timed(call))
                        steady.append(min(timed(call) for _ in range(5)))
                    except RuntimeError as exc:  # the backend cannot run this case
                        error = str(exc).splitlines()[0][:160]
                        break
                row = {
                    "model": model,
                    "backend": name,
                    "gqa": "expanded" if expand else "enable_gqa",
                    "first_ms": firsts,
                    "steady_ms": steady,
                    "error": error,
                }
                report["rows"].append(row)
                if error:
                    print(f"{model:<13} {name:<9} {row['gqa']:<10} n/a: {error}")
                else:
                    print(
                        f"{model:<13} {name:<9} {row['gqa']:<10} first "
                        f"{sum(firsts) / len(firsts):8.2f} ms  steady "
                        f"{sum(steady) / len(steady):7.3f} ms"
                    )
    finish(report, args.out)


if __name__ == "__main__":
    main()
