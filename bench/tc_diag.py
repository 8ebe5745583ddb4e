"""kernels/w12_tc.py's wrong outputs at N off 16 (runs 302-309) taken apart on a GPU: for N 4100,
4104, 4112 and 4096 (K 1152, 7 rows) the blocks' products alone (the escape table emptied),
against the reference of the same emptied weight; for each tile, the wrong output columns, their
positions in the 64-row units, and the kernel's value over the reference there (a power of 4
points at a row's scale word, anything else at the decode or the multiply). Then the same weight
padded to a multiple of 16 rows (zero rows, the escape table carried on), y sliced back: whether
the kernel compiled for a 16-divisible N is right for these N (it was, run 310; the launchers
now pad such N themselves, w12_ws.ROW_MULTIPLE, which the first measure switches off). Last,
MMA 2 (mma.sync) at Qwen3-8B shapes, the same way. The last line is one JSON object."""

from __future__ import annotations

import json
import sys

import torch
from tests.test_w12_kernels import weight_with_escapes

from specpilot.formats import w12
from specpilot.kernels import w12_tc, w12_ws
from specpilot.kernels.w12_linear import w12_linear_reference


def wrong(y: torch.Tensor, ref: torch.Tensor) -> dict:
    off = ((y - ref).abs() > 1e-2 * ref.abs() + 1e-2).any(0)
    cols = off.nonzero().flatten().tolist()
    ratio = (y[:, cols] / ref[:, cols]).nanmedian(0).values.tolist() if cols else []
    return dict(count=len(cols), columns=cols[:16], positions=sorted({c % 64 for c in cols}),
                ratio=[round(r, 4) for r in ratio[:16]])  # fmt: skip


def main() -> None:
    out: dict = {"gpu": torch.cuda.get_device_name(), "rows": []}
    for n in (4100, 4104, 4112, 4096):
        weight = weight_with_escapes(n, 1152, torch.Generator().manual_seed(n + 7)).cuda()
        packed = w12.encode(weight).without_escapes()
        x = torch.randn(7, 1152, generator=torch.Generator().manual_seed(n)).to(
            "cuda", torch.bfloat16
        )
        ref = w12_linear_reference(x, packed).float()
        for label, tile in (("default", {}), ("k1", dict(SPLIT_K=1)), ("sw", dict(SWIZZLE=128))):
            w12_ws.ROW_MULTIPLE = 1  # the launcher as it was: no padding (run 310's question)
            try:
                got = wrong(w12_tc.w12_tc_linear(x, packed, tile).float(), ref)
            finally:
                w12_ws.ROW_MULTIPLE = 16
            n16 = -(-n // 16) * 16
            y16 = w12_tc.w12_tc_linear(x, w12_ws.padded_rows(packed, n16), tile)[:, :n].float()
            row = dict(n=n, tile=label, wrong=got, padded_to=n16, padded_wrong=wrong(y16, ref))
            print(json.dumps(row), flush=True)
            out["rows"].append(row)
    for n, k in ((6144, 4096), (4096, 4096), (4096, 12288)):
        weight = weight_with_escapes(n, k, torch.Generator().manual_seed(n + k)).cuda()
        packed = w12.encode(weight)
        x = torch.randn(16, k, generator=torch.Generator().manual_seed(k)).to(
            "cuda", torch.bfloat16
        )
        ref = w12_linear_reference(x, packed).float()
        for label, tile in (("mma2", dict(MMA=2, SWIZZLE=128)),
                            ("mma2/k1", dict(MMA=2, SWIZZLE=128, SPLIT_K=1)),
                            ("mma2/bare", dict(MMA=2, SWIZZLE=128))):  # fmt: skip
            w = packed.without_escapes() if label.endswith("bare") else packed
            r = ref if w is packed else w12_linear_reference(x, w).float()
            row = dict(
                n=n, k=k, tile=label, wrong=wrong(w12_tc.w12_tc_linear(x, w, tile).float(), r)
            )
            print(json.dumps(row), flush=True)
            out["rows"].append(row)
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
