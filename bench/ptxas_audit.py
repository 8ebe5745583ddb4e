"""What ptxas says of the kernels a forward launches, with no GPU: registers, spills, shared
memory and the programs an SM holds, for every multiply of a target shape's layer (bf16 and W12,
1 and 16 token rows, the tiles and switches the engine uses today) and for the attention, rope,
RMSNorm and SwiGLU kernels.

Each kernel is compiled for sm_90 the way its launcher would launch it (kernels/aot.py; the
constants mirror the launchers', the 16-divisible pointers, strides and sizes as Triton
specialises them at launch), then assembled by Triton's ptxas. Spills and a low program count an
SM are where to look first, and for the multiplies the waves their grid takes on the H200's 132
SMs (a grid just over a whole number runs its last programs alone). Before the divisibility was
applied to every kernel (run 117), this audit reported the attention's split kernel at 255
registers with 620-756 bytes of spills where the H200 ran 103-165 registers and none: check a
surprising row against Nsight Compute's registers and shared memory
(bench/h200/ncu_attention.sh). Prints a table; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import itertools

import triton
from kernel_sweep import layer_shapes  # bench/ is on sys.path when run as a script
from report import finish

from specpilot.formats.w12 import BLOCK, DEFAULT_GROUP_SIZE, SLICE
from specpilot.kernels import aot, attention, elementwise, linear, rope, w12_linear
from specpilot.kernels.common import swiglu_tile_ok
from specpilot.models import fused
from specpilot.models.synth import TARGET_PRESETS

BF16 = "*bf16"
LINEAR_TYPES = {n: BF16 for n in ("x_ptr", "w_ptr", "y_ptr", "res_ptr", "nw_ptr")}
LINEAR_TYPES |= {"eps": "fp32", "part_ptr": "*fp32", "count_ptr": "*i32"}
W12_TYPES = {
    "x_ptr": BF16, "low_ptr": "*i32", "code_ptr": "*i32", "base_ptr": "*u8", "row_ptr": "*i32",
    "esc_col_ptr": "*i32", "esc_bits_ptr": "*i16", "y_ptr": BF16, "res_ptr": BF16,
    "nw_ptr": BF16, "part_ptr": "*fp32", "count_ptr": "*i32", "eps": "fp32",
}  # fmt: skip
OPTIONS = ("num_warps", "num_stages", "maxnreg")
H200_SMS = 132


def epilogue(name: str, rows: int) -> dict:
    """The multiply's epilogue in today's fused forwards: the residual add after o and down,
    silu(gate) * up after gate|up (fused.SWIGLU_EPILOGUE_MIN_ROWS)."""
    swiglu = name == "gate_up" and 0 < fused.SWIGLU_EPILOGUE_MIN_ROWS <= rows
    return dict(RESIDUAL=name in ("o", "down"), SWIGLU=swiglu)


def bf16_case(name: str, rows: int, n: int, k: int) -> tuple:
    """kernels/linear.skinny_linear's launch of this shape (no prologue at these widths)."""
    cfg = linear.tile_config(rows, n, k)
    flags = dict(NORM=False, GLU=False, F32_DOT=False) | epilogue(name, rows)
    if flags["SWIGLU"] and not swiglu_tile_ok(cfg):
        flags["SWIGLU"] = False  # the launcher then runs the SwiGLU kernel after it
    consts = flags | cfg | {"LOOP_STAGES": linear.loop_stages(cfg)}
    if consts.get("SPLIT_K", 1) > 1:
        consts["FENCE"] = True
    return linear._skinny_kernel, LINEAR_TYPES, consts


def w12_case(name: str, rows: int, n: int, k: int) -> tuple:
    """kernels/w12_linear.w12_linear's launch of this shape (the default group size)."""
    cfg = w12_linear.launch_tile(w12_linear.tile_config(rows, n, k), DEFAULT_GROUP_SIZE)
    flags = dict(NORM=False, GLU=False, F32_DOT=False) | epilogue(name, rows)
    if flags["SWIGLU"] and not swiglu_tile_ok(cfg):
        flags["SWIGLU"] = False
    step = BLOCK * (1 if cfg["USE_DOT"] else cfg["UNROLL"])
    consts = flags | cfg | dict(GROUP=DEFAULT_GROUP_SIZE, SLICE=SLICE, EVEN_K=k % step == 0,
                                EVEN_N=n % cfg["BLOCK_N"] == 0)  # fmt: skip
    return w12_linear._w12_kernel, W12_TYPES, consts


def small_cases(preset: str, rows: int, num_splits: int) -> list[tuple]:
    """The attention (split and merge), rope, RMSNorm and SwiGLU kernels of a forward of `rows`
    token rows, as launched (attention.SPLIT_WARPS / MERGE_WARPS)."""
    c = TARGET_PRESETS[preset]
    heads, kv, dim = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    group = heads // kv
    block_q = max(16, triton.next_power_of_2(group * rows))
    wide = "wide" if group * rows > attention.WIDE_ROWS else "narrow"
    split_types = {"q_ptr": BF16, "k_ptr": BF16, "v_ptr": BF16, "pos_ptr": "*i64"}
    split_types |= {"part_ptr": "*fp32", "stats_ptr": "*fp32", "scale_log2": "fp32"}
    shape = dict(HEADS=heads, GROUP=group, HEAD_DIM=dim, NUM_SPLITS=num_splits, SLOTS=num_splits,
                 BLOCK_Q=block_q)  # fmt: skip
    split = shape | dict(BLOCK_KV=attention.BLOCK_KV, F32_DOT=False, CAUSAL=True,
                         MIN_KEYS=attention.min_split_keys(group * rows),
                         Q_ROWS=attention.split_query_rows(group * rows, block_q, False),
                         KV_STEP=attention.kv_step(),
                         num_warps=attention.SPLIT_WARPS[wide])  # fmt: skip
    merge_types = {"part_ptr": "*fp32", "stats_ptr": "*fp32", "out_ptr": BF16, "pos_ptr": "*i64"}
    merge = shape | dict(SPLITS_P2=triton.next_power_of_2(num_splits),
                         BLOCK_KV=attention.BLOCK_KV, MIN_KEYS=split["MIN_KEYS"],
                         num_warps=attention.MERGE_WARPS)  # fmt: skip
    ptrs = ("qkv_ptr", "q_out_ptr", "k_cache_ptr", "v_cache_ptr", "cos_ptr", "sin_ptr", "qn_ptr")
    rope_types = {n: BF16 for n in (*ptrs, "kn_ptr")} | {"pos_ptr": "*i64", "eps": "fp32"}
    rope_consts = dict(HEADS=heads, KV_HEADS=kv, HEAD_DIM=dim, QK_NORM=c["model_type"] == "qwen3",
                       ROWS=triton.next_power_of_2(heads + 2 * kv))  # fmt: skip
    hidden, inter = c["hidden_size"], c["intermediate_size"]
    norm_types = {"x_ptr": BF16, "w_ptr": BF16, "y_ptr": BF16, "eps": "fp32"}
    return [
        ("attention split", attention._split_kernel, split_types, split),
        ("attention merge", attention._merge_kernel, merge_types, merge),
        ("rope", rope._qk_rope_kernel, rope_types, rope_consts),
        ("rmsnorm", elementwise._rmsnorm_kernel, norm_types,
         dict(BLOCK=triton.next_power_of_2(hidden))),
        ("split sum + rmsnorm", elementwise._rmsnorm_kernel,
         norm_types | {"part_ptr": "*fp32", "res_ptr": BF16},
         dict(BLOCK=triton.next_power_of_2(hidden), SPLITS=4, PAIR=True)),
        ("silu_mul", elementwise._silu_mul_kernel, {"x_ptr": BF16, "y_ptr": BF16},
         dict(BLOCK=min(1024, triton.next_power_of_2(inter)))),
    ]  # fmt: skip


def attention_variants(preset: str, rows: int, num_splits: int) -> list[tuple]:
    """The split kernel as launched, then with each combination of the attention switches that
    change its code (WIDE_Q_ROWS: query rows a program, SPLIT_KV_STEP: keys a loop step,
    causal or not: target verify or drafter block), and the merge with MERGE_PROGRAM_ROWS rows
    a program; labels name the variant ("split q16 s32 noncausal")."""
    (_, split_fn, split_types, split), (_, merge_fn, merge_types, merge), *_ = small_cases(
        preset, rows, num_splits
    )
    block_q = split["BLOCK_Q"]
    out = []
    for q_rows, step, causal in itertools.product(
        sorted({block_q, min(32, block_q), 16}, reverse=True), (attention.BLOCK_KV, 32),
        (True, False),
    ):  # fmt: skip
        label = f"split q{q_rows} s{step} {'causal' if causal else 'noncausal'}"
        consts = split | dict(Q_ROWS=q_rows, KV_STEP=step, CAUSAL=causal)
        out.append((label, split_fn, split_types, consts))
    block = min(16, triton.next_power_of_2(split["GROUP"] * rows))
    out.append(
        (f"merge {block} rows a program", merge_fn, merge_types, merge | dict(MERGE_BLOCK=block))
    )
    return out


def audit(preset: str, rows_list: list[int], context: int, variants: bool = False) -> list[dict]:
    """A row a kernel: its label, token rows, kind, ptxas's resources (aot.usage) and the
    constants it was compiled with."""
    shapes = layer_shapes(preset)
    c = TARGET_PRESETS[preset]
    num_splits = attention.num_splits_for(1, c["num_key_value_heads"], context)
    out = []
    for rows in rows_list:
        cases = []
        for name, (n, k) in shapes.items():
            cases.append((f"{name} {n}x{k}", "bf16", *bf16_case(name, rows, n, k)))
            cases.append((f"{name} {n}x{k}", "w12", *w12_case(name, rows, n, k)))
        cases += [(label, "small", *rest) for label, *rest in small_cases(preset, rows,
                                                                          num_splits)]  # fmt: skip
        if variants:
            cases += [(label, "attn", *rest) for label, *rest in attention_variants(
                preset, rows, num_splits)]  # fmt: skip
        # the row counts a launch passes (a multiply's M, the attention's tokens T) are
        # specialised by Triton where they are multiples of 16, as the pointers and strides are
        ints = ("M", "T") if rows % 16 == 0 else ()
        for label, kind, fn, types, consts in cases:
            row = dict(rows=rows, kernel=label, kind=kind)
            try:
                row |= aot.usage(aot.compile_kernel(fn, types, consts, divisible=ints))
            except Exception as exc:  # noqa: BLE001 - report it, go on with the others
                row["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
            row["consts"] = {k: v for k, v in consts.items() if k not in OPTIONS} | {
                k: consts[k] for k in OPTIONS if k in consts
            }
            if kind in ("bf16", "w12") and "error" not in row:
                n = int(label.split()[1].split("x")[0])
                row |= waves(rows, n, consts, row["programs_per_sm"])
            out.append(row)
    return out


def waves(rows: int, n: int, consts: dict, per_sm: int, sms: int = H200_SMS) -> dict:
    """A multiply's programs (row tiles x weight-row tiles x K slices) and the waves they take
    at `per_sm` programs an SM. A grid just over a whole number of waves runs its last programs
    alone (W12's one-row o tile: 1,024 programs at 4 an SM, 1.94 waves of all-loads-then-
    products programs, docs/LOG.md session 44)."""
    programs = (
        -(-rows // consts.get("BLOCK_M", 1)) * -(-n // consts["BLOCK_N"]) * consts.get("SPLIT_K", 1)
    )
    return dict(programs=programs, waves=programs / (sms * per_sm))


def table(rows: list[dict]) -> list[str]:
    """The printed table: a line a kernel."""
    lines = [f"{'rows':>4} {'kind':<5} {'kernel':<26} {'regs':>4} {'spill st/ld':>11} "
             f"{'smem':>7} {'warps':>5} {'per SM':>6} {'limited by':<10} {'waves':>5}"]  # fmt: skip
    for r in rows:
        if "error" in r:
            lines.append(f"{r['rows']:>4} {r['kind']:<5} {r['kernel']:<26} {r['error']}")
            continue
        spill = f"{r['spill_stores']}/{r['spill_loads']}"
        lines.append(
            f"{r['rows']:>4} {r['kind']:<5} {r['kernel']:<26} {r['registers']:>4} {spill:>11} "
            f"{r['shared']:>7} {r['warps']:>5} {r['programs_per_sm']:>6} {r['limited_by']:<10}"
            + (f" {r['waves']:5.2f}" if "waves" in r else "")
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="qwen3-8b", choices=["qwen3-8b", "llama3.1-8b"])
    parser.add_argument("--rows", default="1,16", help="token rows, comma-separated")
    parser.add_argument("--context", type=int, default=2048, help="the cache's capacity")
    parser.add_argument(
        "--attention-variants",
        action="store_true",
        help="also the attention kernels under each combination of WIDE_Q_ROWS, SPLIT_KV_STEP "
        "and causal or not, and the merge with MERGE_PROGRAM_ROWS",
    )
    parser.add_argument("--out")
    args = parser.parse_args()
    rows_list = [int(r) for r in args.rows.split(",") if r]
    rows = audit(args.model, rows_list, args.context, args.attention_variants)
    for line in table(rows):
        print(line)
    finish({"bench": "ptxas_audit", "model": args.model, "target": "sm_90", "rows": rows},
           args.out)  # fmt: skip


if __name__ == "__main__":
    main()
