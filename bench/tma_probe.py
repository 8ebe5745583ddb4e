"""How fast TMA streams a W12 plane from HBM, by box shape, against Triton's pipelined loads.

kernels/w12_ws.py's loads alone (bench/w12_join.py --ws, BOUND 3) ran at ~3.45 TB/s at
Qwen3-8B's 16-row gate|up (runs 279-282), with the input's copies or without, with 2 to 6
stages and with one or two programs an SM, where bf16's Triton kernel over the same bytes drew
~3.86 TB/s and w12_linear's whole multiply ~3.6. Its copies are boxes of 64 rows x 128 bytes.
This reads a [24576, 4096] byte plane (gate|up's low plane; copies cycled past the L2) in
row stripes, one program a stripe, each with a ring of its own:
- `tma`: the stripe's boxes of ROWS x COLS bytes by TMA into STAGES buffers (swizzled 128
  bytes wide or not), each awaited on its barrier and reissued, nothing read back;
- `ld`: the same stripe by tl.load of ROWS x COLS-byte tiles as 32-bit words, xor-folded
  (Triton prefetches the loads num_stages deep);
and prints a table (us, TB/s), the last line one JSON object. CUDA (sm_90) only.
"""

from __future__ import annotations

import argparse

import torch
import triton
import triton.language as tl
from kernel_sweep import graph_time  # bench/ is on sys.path as a script
from report import finish
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

# (rows, columns, swizzle bytes, stages, programs an SM: 0 a program a stripe, else that many
# persistent) of the TMA boxes; w12_ws's planes are 64 x 128, 128, one program an SM with 4
# stages of 32 kB (3 plane boxes and 4 input boxes)
TMA_BOXES = (
    (64, 128, 128, 4, 0), (64, 128, 0, 4, 0), (64, 128, 128, 8, 0), (64, 256, 0, 4, 0),
    (128, 128, 128, 4, 0), (32, 256, 0, 4, 0), (128, 256, 0, 2, 0), (64, 256, 0, 8, 0),
    (64, 128, 128, 4, 1), (64, 128, 128, 8, 1), (64, 128, 128, 16, 1), (64, 128, 128, 8, 2),
    (64, 256, 0, 8, 1),
)  # fmt: skip
# (rows, columns, warps, stages) of the tl.load tiles
LD_TILES = ((64, 256, 4, 3), (64, 256, 4, 4), (32, 256, 2, 4), (64, 128, 4, 4), (64, 512, 4, 2))


@gluon.jit
def _tma_stream(desc, out_ptr, k, stripes, STAGES: gl.constexpr):
    """Stripes pid, pid + programs, ..., each's boxes through one ring that runs on across
    stripes (a grid of fewer programs than stripes: persistent, as w12_ws's PERSISTENT)."""
    ROWS: gl.constexpr = desc.block_type.shape[0]
    COLS: gl.constexpr = desc.block_type.shape[1]
    bufs = gl.allocate_shared_memory(gl.uint8, [STAGES, ROWS, COLS], desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(bars.index(i), count=1)
    boxes = k // COLS  # a stripe's (k a multiple of COLS)
    mine = (stripes - gl.program_id(0) + gl.num_programs(0) - 1) // gl.num_programs(0)
    total = mine * boxes  # this program's boxes, in order: stripe j's box i is j * boxes + i
    for i in gl.static_range(STAGES):
        if i < total:
            row = (gl.program_id(0) + (i // boxes) * gl.num_programs(0)) * ROWS
            mbarrier.expect(bars.index(i), desc.block_type.nbytes)
            tma.async_copy_global_to_shared(desc, [row, (i % boxes) * COLS], bars.index(i),
                                            bufs.index(i))  # fmt: skip
    for i in range(total):
        s = i % STAGES
        mbarrier.wait(bars.index(s), (i // STAGES) & 1)
        nxt = i + STAGES
        if nxt < total:
            row = (gl.program_id(0) + (nxt // boxes) * gl.num_programs(0)) * ROWS
            mbarrier.expect(bars.index(s), desc.block_type.nbytes)
            tma.async_copy_global_to_shared(desc, [row, (nxt % boxes) * COLS], bars.index(s),
                                            bufs.index(s))  # fmt: skip
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(bars.index(i))
    gl.store(out_ptr + gl.program_id(0), total)


@triton.jit
def _ld_stream(w_ptr, out_ptr, words, ROWS: tl.constexpr, COLS: tl.constexpr, STAGES: tl.constexpr):
    """The stripe as 32-bit words (COLS bytes a row a step), xor-folded so the loads stay."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, COLS // 4)
    acc = tl.zeros([ROWS, COLS // 4], dtype=tl.int32)
    for c in tl.range(0, words, COLS // 4, num_stages=STAGES):
        acc ^= tl.load(w_ptr + rows[:, None] * words + (c + cols)[None, :])
    tl.store(out_ptr + tl.program_id(0), tl.sum(tl.sum(acc, 1), 0))


def compile_sm90(box: tuple | None = None, tile: tuple | None = None):
    """One TMA box's (rows, columns, swizzle, stages, ...) or one tl.load tile's (rows,
    columns, warps, stages) kernel compiled for sm_90a without a GPU (kernels/aot): the checks
    a CPU can make."""
    from specpilot.kernels import aot

    if box is not None:
        r, c, swizzle, stages = box[:4]
        layout = gl.NVMMASharedLayout(swizzle_byte_width=swizzle, element_bitwidth=8, rank=2)
        types = dict(desc=f"tensordesc<u8[{r}, {c}],{layout!r}>", out_ptr="*i32")
        return aot.compile_kernel(_tma_stream, types, dict(STAGES=stages, num_warps=1))
    r, c, warps, stages = tile
    consts = dict(ROWS=r, COLS=c, STAGES=stages, num_warps=warps)
    return aot.compile_kernel(_ld_stream, dict(w_ptr="*i32", out_ptr="*i32"), consts)


def probe(n: int, k: int, copies: int) -> list[dict]:
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    planes = [torch.randint(0, 255, (n, k), device="cuda", dtype=torch.uint8)
              for _ in range(copies)]  # fmt: skip
    nbytes = n * k
    out = torch.empty(n, device="cuda", dtype=torch.int32)
    rows = []
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for r, c, swizzle, stages, per_sm in TMA_BOXES:
        layout = gl.NVMMASharedLayout(swizzle_byte_width=swizzle, element_bitwidth=8, rank=2)
        descs = [TensorDescriptor.from_tensor(p, [r, c], layout) for p in planes]
        turn = iter(range(10**9))
        grid = (min(n // r, sms * per_sm) if per_sm else n // r,)

        def call(descs=descs, r=r, stages=stages, turn=turn, grid=grid):
            _tma_stream[grid](descs[next(turn) % copies], out, k, n // r, STAGES=stages,
                              num_warps=1)  # fmt: skip

        us = graph_time(call) * 1e6
        rows.append(dict(kind="tma", rows=r, cols=c, swizzle=swizzle, stages=stages,
                         per_sm=per_sm, us=us, tb_s=nbytes / us / 1e6))  # fmt: skip
    for r, c, warps, stages in LD_TILES:
        turn = iter(range(10**9))

        def call(r=r, c=c, warps=warps, stages=stages, turn=turn):
            w = planes[next(turn) % copies].view(torch.int32)
            _ld_stream[(n // r,)](w, out, k // 4, ROWS=r, COLS=c, STAGES=stages, num_warps=warps)

        us = graph_time(call) * 1e6
        rows.append(dict(kind="ld", rows=r, cols=c, warps=warps, stages=stages, us=us,
                         tb_s=nbytes / us / 1e6))  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=24576)
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--copies", type=int, default=3, help="planes cycled past the L2")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("tma_probe needs CUDA")
    rows = probe(args.n, args.k, args.copies)
    print(f"{'kind':<5}{'box / tile':<22}{'us':>8}{'TB/s':>7}")
    for row in rows:
        extra = f"sw{row['swizzle']}" if row["kind"] == "tma" else f"{row['warps']}w"
        if row.get("per_sm"):
            extra += f" {row['per_sm']}/SM"
        shape = f"{row['rows']}x{row['cols']} {extra} {row['stages']}s"
        print(f"{row['kind']:<5}{shape:<22}{row['us']:8.2f}{row['tb_s']:7.2f}")
    finish(dict(bench="tma_probe", n=args.n, k=args.k, rows=rows,
                gpu=torch.cuda.get_device_name()), args.out)  # fmt: skip


if __name__ == "__main__":
    main()
