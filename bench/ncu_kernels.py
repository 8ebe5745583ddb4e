"""Hardware counters of the W12 and bf16 multiplies at Qwen3-8B's layer shapes (Nsight Compute).

Modes:
- `run` (launched under `ncu --profile-from-start off`): compiles and warms each multiply of
  --shapes at --rows with its default tiles (w12_linear and skinny_linear; --ws, --row: the
  prototypes kernels/w12_ws.py and kernels/w12_row.py too), then calls each once between
  torch.cuda.profiler.start() and stop(), so ncu measures only those calls.
- `attention` (under ncu, as `run`): the split-K attention (split and merge launches) at the
  Qwen3-8B head shape over a --context-token cache, for each of --tokens query tokens (1: a
  decode step, 16: a verify block), each call once in the profiled range; --merge-rows N sets
  attention.FUSED_MERGE_MAX_ROWS (the split launch merging its own slices).
- `certified` (under ncu, as `run`): the certified LM head (int8 multiply, epilogue and exact
  pass in one launch) and the FP8 head of the same shape, at --rows, once each.
- `table CSV`: reads ncu's `--csv --page raw` output and prints, per kernel, its time, DRAM bytes
  and bandwidth, occupancy, issue activity and the largest warp stall reasons (cycles per issued
  instruction); the last line is one JSON object.
- `source CSV`: reads ncu's SASS source view of one kernel (`ncu -i REPORT --page source --csv
  --print-source sass`, from a report with the SourceCounters section) and prints where the
  warps' stall samples fall: per opcode, and the instructions with the most samples with their
  addresses (bench/h200/ncu_source.sh); the last line is one JSON object.

    ncu --profile-from-start off --clock-control none --csv --page raw \
        --metrics $(python3 bench/ncu_kernels.py metrics) \
        python3 bench/ncu_kernels.py run --rows 1,16 > ncu.csv
    python3 bench/ncu_kernels.py table ncu.csv

Weights are random normal (std 0.02): the escape rate of normal weights (~1.6e-4).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from collections import Counter

STALLS = (
    "long_scoreboard", "short_scoreboard", "barrier", "wait", "math_pipe_throttle",
    "lg_throttle", "mio_throttle", "no_instruction", "not_selected", "selected",
    "dispatch_stall", "branch_resolving", "membar", "drain", "imc_miss", "tex_throttle",
    "sleeping", "misc",
)  # fmt: skip
STALL_METRIC = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
METRICS = {
    "us": "gpu__time_duration.sum",
    "dram_bytes": "dram__bytes_read.sum",
    "dram_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "regs": "launch__registers_per_thread",
    "smem": "launch__shared_mem_per_block",
    "programs": "launch__grid_size",
    "block": "launch__block_size",
    "occ_theory": "sm__maximum_warps_per_active_cycle_pct",
    "occ_achieved": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "issue_pct": "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "l2_bytes": "lts__t_bytes.sum",
    **{f"stall_{s}": STALL_METRIC.format(s) for s in STALLS},
}
TIME_UNITS = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
BYTE_UNITS = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}  # ncu's units -> us, bytes


def run(shapes: list[str], rows: list[int], ws: bool = False, row: bool = False) -> None:
    """ws: kernels/w12_ws.py's multiply too (its input given in pair order), 2-16 rows; row:
    kernels/w12_row.py's (W12 and bf16) at one row."""
    import torch
    from kernel_sweep import SHAPES

    from specpilot.formats import w12
    from specpilot.kernels.linear import skinny_linear
    from specpilot.kernels.w12_linear import w12_linear

    torch.manual_seed(0)
    calls = []
    for name in shapes:
        n, k = SHAPES[name]
        weight = (torch.randn(n, k, device="cuda") * 0.02).to(torch.bfloat16)
        packed = w12.encode(weight)
        for m in rows:
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            calls.append((f"w12 {m}x{n}x{k}", lambda x=x, p=packed: w12_linear(x, p)))
            calls.append((f"bf16 {m}x{n}x{k}", lambda x=x, w=weight: skinny_linear(x, w)))
            if ws and m > 1:
                from specpilot.kernels import w12_ws

                xp = w12_ws.pair_order(x)
                call = lambda p=packed, xp=xp: w12_ws.w12_ws_linear(xp, p, x_order="pair")  # noqa: E731
                calls.append((f"ws {m}x{n}x{k}", call))
            if row and m == 1:
                from specpilot.kernels import w12_row

                call = lambda x=x, p=packed: w12_row.w12_row_linear(x, p)  # noqa: E731
                calls.append((f"row {m}x{n}x{k}", call))
                call = lambda x=x, w=weight: w12_row.bf16_row_linear(x, w)  # noqa: E731
                calls.append((f"row_bf16 {m}x{n}x{k}", call))
    _profile(calls)


def run_attention(context: int, tokens: list[int], capacity: int) -> None:
    import torch

    from specpilot.kernels.attention import decode_attention, num_splits_for

    heads, kv_heads, head_dim = 32, 8, 128  # Qwen3-8B and Llama-3.1-8B
    if context + max(tokens) > capacity:
        raise SystemExit(f"--capacity {capacity} cannot hold {context} + {max(tokens)} tokens")
    torch.manual_seed(0)
    dev = "cuda" if torch.cuda.is_available() else "cpu"  # cpu: a TRITON_INTERPRET=1 dry run
    cache = torch.randn(2, 1, kv_heads, capacity, head_dim, device=dev, dtype=torch.bfloat16)
    splits = num_splits_for(1, kv_heads, capacity)
    calls = []
    for t in tokens:
        q = torch.randn(t, heads, head_dim, device=dev, dtype=torch.bfloat16)
        pos = torch.arange(context, context + t, device=dev).view(1, t)
        calls.append((f"attention {t} tokens", lambda q=q, pos=pos: decode_attention(
            q, cache[0], cache[1], pos, splits)))  # fmt: skip
    _profile(calls)
    print(f"context {context}, capacity {capacity}, {splits} slices", file=sys.stderr)


def run_certified(n: int, k: int, rows: list[int], radius: float) -> None:
    """The certified LM head (kernels/linear.certified_argmax: the int8 multiply, its epilogue and
    the candidates' exact pass in one launch) at an [n, k] head of random normal weights, with
    the RMSNorm prologue, for each row count; next to it the FP8 head of the same shape (8-bit
    weights on its own tiles: what an 8-bit multiply reaches here). `radius` scales the head's
    error radii: 1 the real head; -1e30 drops every row from the exact pass (wrong tokens:
    the multiply and the epilogue alone)."""
    import torch

    from specpilot.formats import fp8
    from specpilot.formats.certified import CertifiedHead, certify
    from specpilot.kernels.linear import certified_argmax, skinny_linear

    torch.manual_seed(0)
    dev = "cuda" if torch.cuda.is_available() else "cpu"  # cpu: a TRITON_INTERPRET=1 dry run
    w = (torch.randn(n, k, device=dev) * 0.02).to(torch.bfloat16)
    head = certify(w)
    head = CertifiedHead(head.exact, head.weight, head.scale, head.radius * radius)
    q = fp8.quantize(w)
    nw = torch.ones(k, device=dev, dtype=torch.bfloat16)
    calls = []
    for m in rows:
        x = torch.randn(m, k, device=dev).to(torch.bfloat16)
        ids = torch.zeros(1, m, device=dev, dtype=torch.long) if m > 1 else None
        calls.append((f"certified {m}x{n}x{k}", lambda x=x, ids=ids: certified_argmax(
            x, head, norm_weight=nw, ids=ids)))  # fmt: skip
        calls.append((f"fp8 {m}x{n}x{k}", lambda x=x: skinny_linear(x, q, norm_weight=nw)))
    _profile(calls)


def _profile(calls: list) -> None:
    """Each call compiled and warmed, then called once between profiler start and stop (what
    `ncu --profile-from-start off` measures), each in an NVTX range named by its label."""
    import torch

    for _, call in calls:  # compile and warm outside the profiled range
        call()
        call()
    if not torch.cuda.is_available():  # a dry run (TRITON_INTERPRET=1): nothing to profile
        return
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for label, call in calls:
        torch.cuda.nvtx.range_push(label)
        call()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print("calls: " + ", ".join(label for label, _ in calls), file=sys.stderr)


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def table(path: str) -> dict:
    """ncu's raw CSV (one row a kernel, a column a metric; its first line after the header holds
    the units) -> {kernel rows}, printed as a table."""
    text = open(path).read()
    start = text.find('"ID"')
    if start < 0:
        raise SystemExit(f"{path}: no ncu CSV in it (did ncu read the counters?)")
    reader = list(csv.DictReader(io.StringIO(text[start:])))
    units, kernels = reader[0], reader[1:]
    out = []
    for row in kernels:
        entry = {"kernel": row["Kernel Name"].split("(")[0], "grid": row.get("Grid Size", "")}
        for key, metric in METRICS.items():
            value = _number(row.get(metric, ""))
            unit = units.get(metric, "")
            if value is not None and key == "us":
                value *= TIME_UNITS.get(unit, 1.0)
            if value is not None and key.endswith("bytes"):
                value *= BYTE_UNITS.get(unit, 1)
            entry[key] = value
        if entry["us"] and entry["dram_bytes"]:
            entry["dram_tb_s"] = entry["dram_bytes"] / entry["us"] / 1e6
        out.append(entry)
    print(
        f"{'kernel':22} {'grid':>14} {'us':>7} {'MB':>6} {'TB/s':>5} {'regs':>4} {'occ t/a %':>10} "
        f"{'issue%':>6}  top stalls (cycles per issued instruction)"
    )
    for e in out:
        stalls = [(k[6:], v) for k, v in e.items() if k.startswith("stall_") and v]
        stalls = sorted(stalls, key=lambda kv: -kv[1])[:4]
        cells = [
            f"{e['kernel'][:22]:22} {e['grid'][:14]:>14} {e['us'] or 0:7.2f}",
            f"{(e['dram_bytes'] or 0) / 1e6:6.1f} {e.get('dram_tb_s', 0):5.2f}",
            f"{e['regs'] or 0:4.0f} {e['occ_theory'] or 0:4.0f}/{e['occ_achieved'] or 0:4.0f}",
            f"{e['issue_pct'] or 0:6.1f} ",
            ", ".join(f"{k} {v:.1f}" for k, v in stalls),
        ]
        print(" ".join(cells))
    result = {"bench": "ncu_kernels", "kernels": out}
    print(json.dumps(result))
    return result


def _opcode(sass: str) -> str:
    """'@!P0 LDG.E.128 R4, desc[UR6][R2.64] ;' -> 'LDG' (the opcode without its modifiers)."""
    words = sass.strip().split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else ""


def source(path: str, top: int = 25) -> dict:
    """ncu's SASS source view as CSV (a row an instruction) -> stall samples per opcode and the
    instructions with the most. The sample column is the first whose name has 'Warp Stall
    Sampling (All' (else 'Sampling'); the instruction text is the 'Source' column."""
    text = open(path).read()
    at = text.find('"Source"')  # in the header line, after ncu's "Kernel Name" line
    if at < 0:
        raise SystemExit(f"{path}: no source-view CSV in it")
    rows = list(csv.DictReader(io.StringIO(text[text.rfind("\n", 0, at) + 1 :])))
    if not rows:
        raise SystemExit(f"{path}: the source view has no instructions")
    names = list(rows[0])
    samples = next((n for n in names if "Warp Stall Sampling (All" in n), None)
    samples = samples or next((n for n in names if "Sampling" in n), None)
    address = next((n for n in names if "Address" in n), names[0])
    if samples is None or "Source" not in names:
        raise SystemExit(f"{path}: no 'Source' or stall-sampling column in {names}")
    listing = []
    for row in rows:
        count = _number(row.get(samples) or "")
        if count is None:  # a units line or a source-only line
            continue
        listing.append((row[address], row["Source"].strip(), count))
    total = sum(c for _, _, c in listing) or 1.0
    by_opcode: Counter[str] = Counter()
    for _, sass, count in listing:
        by_opcode[_opcode(sass)] += count
    opcodes = by_opcode.most_common()
    hottest = sorted(listing, key=lambda r: -r[2])[:top]
    print(f"{len(listing)} instructions, {total:.0f} stall samples ({samples})")
    print("by opcode: " + ", ".join(f"{op} {100 * c / total:.1f}%" for op, c in opcodes[:12]))
    for addr, sass, count in hottest:
        print(f"{addr:>8} {100 * count / total:5.1f}%  {sass[:90]}")
    result = {
        "bench": "ncu_source",
        "instructions": len(listing),
        "samples": total,
        "column": samples,
        "by_opcode": {op: c / total for op, c in opcodes},
        "hottest": [{"address": a, "sass": s, "share": c / total} for a, s, c in hottest],
    }
    print(json.dumps(result))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("run", help="the profiled calls (under ncu)")
    r.add_argument("--shapes", default="qkv,o,gate_up,down")
    r.add_argument("--rows", default="1,16")
    r.add_argument("--ws", action="store_true", help="kernels/w12_ws.py's multiply too")
    r.add_argument("--row", action="store_true", help="kernels/w12_row.py's too (one row)")
    a = sub.add_parser("attention", help="the profiled attention calls (under ncu)")
    a.add_argument("--context", type=int, default=1024)
    a.add_argument("--tokens", default="1,16")
    a.add_argument("--capacity", type=int, default=2048, help="cache slots (sets the slices)")
    a.add_argument(
        "--merge-rows",
        type=int,
        default=-1,
        help="attention.FUSED_MERGE_MAX_ROWS for the calls (-1: the module's default)",
    )
    c = sub.add_parser("certified", help="the profiled certified and FP8 heads (under ncu)")
    c.add_argument("--n", type=int, default=151936)
    c.add_argument("--k", type=int, default=4096)
    c.add_argument("--rows", default="1")
    c.add_argument("--radius", type=float, default=1.0, help="the radii's scale (see above)")
    t = sub.add_parser("table", help="ncu's raw CSV -> a table and a JSON line")
    t.add_argument("csv")
    src = sub.add_parser("source", help="ncu's SASS source view (CSV) -> where the stalls fall")
    src.add_argument("csv")
    sub.add_parser("metrics", help="the --metrics list for ncu")
    args = parser.parse_args()
    if args.mode == "metrics":
        print(",".join(METRICS.values()))
    elif args.mode == "run":
        run(args.shapes.split(","), [int(m) for m in args.rows.split(",")], args.ws, args.row)
    elif args.mode == "attention":
        if args.merge_rows >= 0:  # the split launch merges its slices itself up to these rows
            from specpilot.kernels import attention

            attention.FUSED_MERGE_MAX_ROWS = args.merge_rows
        run_attention(args.context, [int(t) for t in args.tokens.split(",")], args.capacity)
    elif args.mode == "certified":
        run_certified(args.n, args.k, [int(m) for m in args.rows.split(",")], args.radius)
    elif args.mode == "source":
        source(args.csv)
    else:
        table(args.csv)


if __name__ == "__main__":
    main()
