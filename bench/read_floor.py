"""How fast the GPU can only read: the floor under each multiply of a one-token decode (H200).

A one-row multiply reads its weights once, so no tile of it can beat a kernel that only reads the
same bytes. Our bounds so far divide bytes by the copy bandwidth (read + write, 4.25 TB/s), while
the exact bf16 LM head has read 1.24 GB at ~4.6 TB/s in the decode graph (docs/LOG.md run 198):
reads alone may go faster than a copy, and then the large multiplies have more room than the
cost model says. This measures it, in the harness of bench/kernel_sweep.py (cold copies, 20
calls a CUDA graph, plain launches), for each multiply's bytes in bf16 and in W12:

- `read`: a Triton kernel that loads every word once (16-byte loads) and folds a program's words
  into one int32 (stored, so no load is dead), over a sweep of blocks, warps and grids (`VARIANTS`:
  one block a program, or a grid-strided loop over a few programs an SM); torch.sum as a
  library's read;
- the engine's own one-row multiply of the shape in the same process (skinny_linear; w12_linear
  on random normal weights encoded to W12);
- a decode's multiplies alone, back to back in one graph (36 layers' q|k|v, o, gate|up, down on
  distinct weights, and the LM head), against the same bytes read by each shape's fastest read;
- the asymptotic bandwidths of 2 GiB: copy (bench/engine_speed.copy_bandwidth) and read.

Prints a table; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import dataclasses

import torch
import triton
import triton.language as tl

# run as a script from the repository root: bench/ is on sys.path
from engine_speed import copy_bandwidth, timed  # noqa: E402
from kernel_sweep import MODELS, cycled, graph_time, layer_shapes  # noqa: E402
from report import finish  # noqa: E402

from specpilot.formats import w12
from specpilot.kernels.linear import skinny_linear
from specpilot.kernels.w12_linear import w12_linear

ALIGN_WORDS = 8192  # every buffer a multiple of the largest block (4-byte words)
# (BLOCK words, num_warps, programs an SM for the strided loop; 0: one block a program). The
# loop's loads are not pipelined by num_stages (sm_90 PTX: no cp.async), so several programs an
# SM keep several blocks in flight instead.
VARIANTS = [(block, warps, 0) for block in (1024, 2048, 4096, 8192) for warps in (4, 8)] + [
    (block, 4, per_sm) for block in (2048, 4096) for per_sm in (4, 8, 16)
]


@triton.jit
def _read_kernel(src_ptr, out_ptr, n_words, BLOCK: tl.constexpr, STRIDED: tl.constexpr):
    """out[pid] = the int32 sum (wrapping) of the words this program read: with STRIDED, blocks
    pid, pid + programs, ...; else block pid."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    if STRIDED:
        for b in range(pid, n_words // BLOCK, tl.num_programs(0)):
            acc += tl.load(src_ptr + b * BLOCK + offs)
    else:
        acc += tl.load(src_ptr + pid * BLOCK + offs)
    tl.store(out_ptr + pid, tl.sum(acc, axis=0))


def read_words(src: torch.Tensor, out: torch.Tensor, variant: tuple[int, int, int]) -> None:
    """Read every word of src (int32, contiguous, a multiple of the block) once; out (int32,
    at least the grid) gets each program's sum."""
    block, warps, per_sm = variant
    n = src.numel()
    if src.dtype != torch.int32 or not src.is_contiguous() or n % block or n >= 2**31:
        raise ValueError(f"src: a contiguous int32 tensor of whole {block}-word blocks (int32 "
                         f"indices: under 2^31 words), got "
                         f"{src.dtype} {tuple(src.shape)}")  # fmt: skip
    grid = min(n // block, _sm_count(src.device) * per_sm) if per_sm else n // block
    if out.dtype != torch.int32 or out.numel() < grid:
        raise ValueError(f"out: int32 of at least {grid} entries, got {out.dtype} {out.numel()}")
    _read_kernel[(grid,)](src, out, n, BLOCK=block, STRIDED=per_sm > 0, num_warps=warps)


def _sm_count(device: torch.device) -> int:
    """Multiprocessors of a CUDA device; 4 elsewhere (the interpreter, in tests)."""
    if device.type != "cuda":
        return 4
    return torch.cuda.get_device_properties(device).multi_processor_count


def words_for(nbytes: int, device: str = "cuda") -> torch.Tensor:
    """Random int32 words covering nbytes, rounded up to whole ALIGN_WORDS blocks."""
    n = -(-nbytes // (4 * ALIGN_WORDS)) * ALIGN_WORDS
    return torch.randint(-(2**31), 2**31 - 1, (n,), dtype=torch.int32, device=device)


def label(variant: tuple[int, int, int]) -> str:
    block, warps, per_sm = variant
    grid = f"x{per_sm}/SM" if per_sm else "flat"
    return f"read {block}w {warps}warps {grid}"


def shape_rows(name: str, n: int, k: int, bandwidth: float) -> tuple[list[dict], dict]:
    """The table rows of one shape (bf16 and W12 bytes: every read variant, torch.sum, the
    engine's one-row multiply) and the fastest read variant of each format."""
    w = (torch.randn(n, k, device="cuda") * 0.02).to(torch.bfloat16)
    packed = w12.encode(w, 128)
    x = torch.randn(1, k, device="cuda").to(torch.bfloat16)
    next_w, next_packed = cycled(w), cycled(packed)
    multiplies = {
        "bf16": (2 * n * k, lambda: skinny_linear(x, next_w())),
        "w12": (packed.nbytes(), lambda: w12_linear(x, next_packed())),
    }
    rows, best = [], {}
    for fmt, (nbytes, multiply) in multiplies.items():
        timed, read_bytes = _read_times(words_for(nbytes))
        for arm, t in timed.items():
            rows.append(_row(name, fmt, arm, read_bytes, t, bandwidth))
        fastest = min(VARIANTS, key=lambda v: timed[label(v)])
        best[fmt] = dict(variant=fastest, us=timed[label(fastest)] * 1e6, bytes=read_bytes)
        rows.append(_row(name, fmt, "multiply (1 row)", nbytes, graph_time(multiply), bandwidth))
    return rows, best


def _read_times(src: torch.Tensor) -> tuple[dict[str, float], int]:
    """Seconds a read of src's bytes takes (cold copies), by arm: each variant, torch.sum."""
    out = torch.empty(src.numel() // 1024, dtype=torch.int32, device=src.device)
    next_src = cycled(src)
    timed = {label(v): graph_time(lambda v=v: read_words(next_src(), out, v)) for v in VARIANTS}
    timed["torch.sum"] = graph_time(lambda: torch.sum(next_src(), dtype=torch.int32))
    return timed, src.numel() * 4


def _row(shape: str, fmt: str, arm: str, nbytes: int, seconds: float, bandwidth: float) -> dict:
    return dict(shape=shape, format=fmt, arm=arm, bytes=nbytes, us=seconds * 1e6,
                tb_s=nbytes / seconds / 1e12, of_copy=nbytes / seconds / bandwidth)  # fmt: skip


def decode_sequence(shapes: dict, best: dict, layers: int, fmt: str) -> dict:
    """One graph of a decode's multiplies alone (`layers` x q|k|v, o, gate|up, down, then the
    LM head; distinct weights, one row), against one of the same reads (each shape's fastest
    variant) on distinct buffers: ms per sequence, median of 5 replays."""
    order = [name for _ in range(layers) for name in ("qkv", "o", "gate_up", "down")]
    order.append("lm_head")
    one = {}
    for name in set(order):
        n, k = shapes[name]
        w = (torch.randn(n, k, device="cuda") * 0.02).to(torch.bfloat16)
        one[name] = w if fmt == "bf16" else w12.encode(w, 128)
    xs = {k: torch.randn(1, k, device="cuda").to(torch.bfloat16) for _, k in shapes.values()}
    mult = skinny_linear if fmt == "bf16" else w12_linear
    calls = []
    for name in order:
        weight = one[name]
        if fmt == "bf16":
            weight = weight.clone()
        else:
            weight = dataclasses.replace(
                weight, **{k: t.clone() for k, t in weight.tensors().items()}
            )
        calls.append(lambda x=xs[shapes[name][1]], wt=weight: mult(x, wt))
    multiplies = _sequence_ms(calls)
    del calls
    out = torch.empty(1 << 20, dtype=torch.int32, device="cuda")
    reads, nbytes = [], 0
    for name in order:
        src = words_for(best[name][fmt]["bytes"])
        nbytes += src.numel() * 4
        reads.append(lambda s=src, v=best[name][fmt]["variant"]: read_words(s, out, v))
    read_ms = _sequence_ms(reads)
    return dict(format=fmt, layers=layers, bytes=nbytes, multiplies_ms=multiplies,
                reads_ms=read_ms, ratio=multiplies / read_ms)  # fmt: skip


def _sequence_ms(calls: list) -> float:
    """Milliseconds of the calls back to back, captured as one graph (after one plain pass and
    one untimed replay), median of 5 replays."""
    return graph_time(lambda: [fn() for fn in calls], reps=1, warmup=1, settle=True) * 1e3


def read_bandwidth(nbytes: int = 2**31) -> tuple[float, tuple]:
    """Bytes/s of the fastest read variant over nbytes (median of 10 after 3), and that variant."""
    src = words_for(nbytes)
    out = torch.empty(src.numel() // 1024, dtype=torch.int32, device="cuda")
    best = (0.0, None)
    for v in VARIANTS:
        seconds = timed(lambda v=v: read_words(src, out, v), reps=10)
        best = max(best, (src.numel() * 4 / seconds, v), key=lambda b: b[0])
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="qwen3-8b", choices=MODELS)
    parser.add_argument("--shapes", default="qkv,o,gate_up,down,lm_head")
    parser.add_argument("--layers", type=int, default=36, help="decode_sequence's layers (0: none)")
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.manual_seed(0)
    copy = copy_bandwidth()
    read, read_variant = read_bandwidth()
    print(f"{torch.cuda.get_device_name()}: copy {copy / 1e12:.2f} TB/s, read {read / 1e12:.2f} "
          f"TB/s ({label(read_variant)}), 2 GiB")  # fmt: skip
    shapes = layer_shapes(args.model)
    table, best = [], {}
    for name in args.shapes.split(","):
        rows, best[name] = shape_rows(name, *shapes[name], copy)
        table += rows
        for r in rows:
            print(f"{name:8} {r['format']:5} {r['arm']:28} {r['us']:9.2f} us {r['tb_s']:5.2f} TB/s")
    sequences = []
    if args.layers and set(best) >= {"qkv", "o", "gate_up", "down", "lm_head"}:
        sequences = [decode_sequence(shapes, best, args.layers, fmt) for fmt in ("bf16", "w12")]
    print("shape    format  multiply us  read floor us (fastest read)          multiply/floor")
    for name in best:
        for fmt, b in best[name].items():
            mult = next(r for r in table if (r["shape"], r["format"], r["arm"]) ==
                        (name, fmt, "multiply (1 row)"))  # fmt: skip
            floor_tb = b["bytes"] / b["us"] / 1e6
            print(f"{name:8} {fmt:6} {mult['us']:12.2f} {b['us']:9.2f} {floor_tb:4.2f} TB/s "
                  f"({label(b['variant'])}) {mult['us'] / b['us']:8.3f}x")  # fmt: skip
    for s in sequences:
        print(
            f"decode multiplies alone, {s['format']}: {s['multiplies_ms']:.3f} ms against "
            f"{s['reads_ms']:.3f} ms of reads ({s['bytes'] / 1e9:.2f} GB): {s['ratio']:.3f}x"
        )
    report = dict(bench="read_floor", gpu=torch.cuda.get_device_name(), model=args.model,
                  copy_bandwidth_tb_s=copy / 1e12, read_bandwidth_tb_s=read / 1e12,
                  read_variant=label(read_variant), l2="cold", table=table,
                  best={n: {f: dict(b, variant=label(b["variant"])) for f, b in v.items()}
                        for n, v in best.items()},
                  sequences=sequences)  # fmt: skip
    finish(report, args.out)


if __name__ == "__main__":
    main()
