"""Is w12_tc wrong, or is the test's bf16 reference (run 316's three GPU test failures)? For each
case, over several random inputs: the kernel and torch's bf16 F.linear (the tests' reference)
against the exact product (float64), in bf16 ulps; and the kernel against itself, called again on
the same input (a race shows as bits that move). One line a case, then one JSON line.

    python3 bench/tc_exact.py [--draws 8] [--repeats 8]
"""

from __future__ import annotations

import argparse
import json

import torch
from tests.test_w12_kernels import weight_with_escapes

from specpilot.formats import w12
from specpilot.formats.w12 import decode
from specpilot.kernels import w12_tc

CASES = [  # (M, N, K, tile): run 316's three failures, then the verify route's shapes
    (16, 4100, 1152, {}),
    (16, 4096, 12288, dict(MMA=2, SWIZZLE=128)),
    (1, 2000, 4608, dict(STAGES=6, ESC_BATCH=0)),
    (16, 4096, 12288, dict(SWIZZLE=128)),
    (16, 6144, 4096, dict(SWIZZLE=128)),
    (16, 4096, 4096, dict(SWIZZLE=128)),
    (16, 24576, 4096, dict(SWIZZLE=128)),
    (7, 4100, 1152, {}),
]


def ulps_over(y: torch.Tensor, exact: torch.Tensor, spread: torch.Tensor) -> torch.Tensor:
    """How far y lies beyond what a right kernel may be off, in bf16 ulps of exact: half an ulp
    (the one rounding to bf16) plus what fp32 summation in any order moves it (2^-16 of sum |x||w|,
    tests/test_kernels.order_floor's bound). 0 where within; a wrong term shows as tens of ulps."""
    ulp = torch.exp2(torch.floor(torch.log2(exact.abs().clamp(min=2.0**-100))) - 7)
    return ((y.double() - exact).abs() - 0.5 * ulp - 2.0**-16 * spread).clamp(min=0) / ulp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=8)
    args = parser.parse_args()
    rows = []
    for m, n, k, tile in CASES:
        gen = torch.Generator().manual_seed(n + m)
        w = weight_with_escapes(n, k, gen)
        packed = w12.encode(w.cuda())
        dense = decode(packed)  # bf16, bit for bit the weights w12_tc decodes
        weight = dense.double()
        worst_tc = worst_ref = 0.0
        over_tc = over_ref = 0
        moved = 0
        for draw in range(args.draws):
            x = torch.randn(m, k, generator=torch.Generator().manual_seed(draw)).cuda().bfloat16()
            exact = x.double() @ weight.T
            spread = x.double().abs() @ weight.abs().T
            y = w12_tc.w12_tc_linear(x, packed, tile)
            ref = torch.nn.functional.linear(x, dense)
            off_tc, off_ref = ulps_over(y, exact, spread), ulps_over(ref, exact, spread)
            worst_tc = max(worst_tc, off_tc.max().item())
            worst_ref = max(worst_ref, off_ref.max().item())
            over_tc += int((off_tc > 0).sum())
            over_ref += int((off_ref > 0).sum())
            for _ in range(args.repeats):
                again = w12_tc.w12_tc_linear(x, packed, tile)
                moved += int((again.view(torch.int16) != y.view(torch.int16)).sum())
        row = dict(m=m, n=n, k=k, tile=tile, tc_ulps_beyond=worst_tc, ref_ulps_beyond=worst_ref,
                   tc_beyond=over_tc, ref_beyond=over_ref, tc_bits_moved=moved)  # fmt: skip
        rows.append(row)
        shape = f"{m:2d}x{n}x{k} {json.dumps(tile):36s}"
        tc = f"tc beyond by {worst_tc:7.2f} ulp ({over_tc} entries)"
        ref = f"bf16 ref {worst_ref:7.2f} ({over_ref})"
        print(f"{shape} {tc}  {ref}  repeats moved {moved}", flush=True)
    print(json.dumps(dict(tc_exact=rows)))


if __name__ == "__main__":
    main()
