"""W12's JOIN tiles (kernels/w12_linear: a half block's 4 slices in one tl.dot, K in word order)
against the same tiles without it and the default tiles, at a target's layer shapes, on the GPU.

Why: at 16 rows the default W12 tiles run at bf16's time, not their bytes' (docs/LOG.md run 258:
gate|up 3.38 TB/s of 12-bit bytes). In their sm_90 SASS each 32-column slice is a tl.dot of its
own, ended by a warpgroup wait (8 a block of 256 columns) with the decoded pairs re-packed into
the operand's registers; JOIN puts a half block in one tl.dot (2 waits a block) and orders K so
that each decoded pair already is an operand register (loop 771 -> 628 instructions at gate|up).
JOIN 1 permutes the input tile inside the program (through shared memory); JOIN 2 reads it
already permuted (`join_order`), which a producer kernel would have to write.

Each tile is checked against the reference (the decoded weights' products, to fp32 order; JOIN 2
on the permuted input), then timed in CUDA graphs with the weights cycled from HBM. Prints a
table (microseconds and TB/s of the W12 bytes; bf16's kernel and cuBLAS on the same shape); the
last line is one JSON object.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from kernel_sweep import cycled, graph_time, layer_shapes  # bench/ is on sys.path as a script
from report import finish
from w12_speed import check

from specpilot.formats import w12
from specpilot.kernels.linear import skinny_linear
from specpilot.kernels.w12_linear import join_order, tile_config, w12_linear, w12_linear_reference


def tiles(m: int, n: int, k: int) -> list[tuple[str, dict]]:
    """The default tile and tensor-core tiles around it (ACC_SCALE: JOIN needs it): 64 weight
    rows on 4 warps (wgmma, 3 stages) and 32 on 2 (mma.sync, 2 or 3), K splits up to 1,024
    programs where the tiles alone are under 256."""
    out = [("default", tile_config(m, n, k))]
    for bn, warps, stage_counts in ((64, 4, (3,)), (32, 2, (2, 3))):
        programs = -(-n // bn)
        splits = sorted({1, *(s for s in (2, 4, 8) if programs * s <= 1024 and k >= 1024 * s)})
        for split in splits:
            if split > 1 and programs >= 256:
                continue
            for stages in stage_counts:
                cfg = dict(BLOCK_M=16, BLOCK_N=bn, UNROLL=1, SPLIT_K=split, USE_DOT=True,
                           num_warps=warps, num_stages=stages, ACC_SCALE=True)  # fmt: skip
                out.append((f"{bn}r{warps}w{stages}s/k{split}", cfg))
    return out


def bench(m: int, name: str, n: int, k: int) -> dict:
    w = (torch.randn(n, k, device="cuda") * 0.02).to(torch.bfloat16)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    packed = w12.encode(w)
    ref = w12_linear_reference(x, packed)
    xj = join_order(x)
    ws, ps = cycled(w, True), cycled(packed, True)
    nbytes = packed.nbytes_bound()
    row = dict(shape=name, m=m, n=n, k=k, w12_bytes=nbytes,
               bf16_us=graph_time(lambda: skinny_linear(x, ws())) * 1e6,
               cublas_us=graph_time(lambda: F.linear(x, ws())) * 1e6, tiles=[])  # fmt: skip
    for label, base in tiles(m, n, k):
        for join in (0, 1, 2):
            cfg = dict(base, JOIN=join) if join else dict(base)
            xin = xj if join == 2 else x
            entry = dict(tile=label, join=join, config=cfg)
            try:
                check(w12_linear(xin, packed, config=cfg), ref, f"{name} {label} JOIN {join}")
                us = graph_time(lambda c=cfg, a=xin: w12_linear(a, ps(), config=c)) * 1e6
                entry |= dict(us=us, tb_s=nbytes / us / 1e6)
            except Exception as exc:  # noqa: BLE001 - a tile that does not compile or fit
                entry["error"] = f"{type(exc).__name__}: {str(exc)[:160]}"
            row["tiles"].append(entry)
    for join in (0, 1, 2):
        timed = [t for t in row["tiles"] if t["join"] == join and "us" in t]
        if timed:
            row[f"best_join{join}"] = min(timed, key=lambda t: t["us"])
    return row


def table(rows: list[dict]) -> list[str]:
    lines = [f"{'shape':<8} {'bf16 us':>8} {'default':>8} {'best':>16} {'join1':>22} "
             f"{'join2':>22}"]  # fmt: skip
    for r in rows:
        default = next(t for t in r["tiles"] if t["tile"] == "default" and t["join"] == 0)
        cells = []
        for join in (0, 1, 2):
            b = r.get(f"best_join{join}")
            cells.append(f"{b['us']:7.2f} {b['tb_s']:4.2f} {b['tile']}" if b else "-")
        lines.append(f"{r['shape']:<8} {r['bf16_us']:8.2f} {default.get('us', 0):8.2f} "
                     f"{cells[0]:>16} {cells[1]:>22} {cells[2]:>22}")  # fmt: skip
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen3-8b", choices=("qwen3-8b", "llama3.1-8b"))
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument("--shapes", default="qkv,o,gate_up,down", help="comma-separated")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("w12_join needs CUDA")
    shapes = layer_shapes(args.model)
    rows = []
    for name in args.shapes.split(","):
        n, k = shapes[name]
        rows.append(bench(args.rows, name, n, k))
        print("\n".join(table(rows[-1:])[1:]), flush=True)
    print("\n".join(table(rows)))
    finish(dict(model=args.model, rows=args.rows, shapes=rows, gpu=torch.cuda.get_device_name()),
           args.out)  # fmt: skip


if __name__ == "__main__":
    main()
