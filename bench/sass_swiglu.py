"""SASS probe (no GPU): what the SwiGLU epilogue (kernels' swiglu=True) does to the bf16 gate|up
multiply's tiles at the Qwen3-8B shape (24576 x 4096), compiled for sm_90 as the launcher
compiles them (its tile_config, 16-byte aligned pointers and strides, PDL on), with Triton's own
ptxas, read with its nvdisasm.

Run 96 measured the one-row forward 3.5% slower with the epilogue and the 16-row one 1% faster;
this prints each tile's instructions, registers and shared memory with and without it, and the
programs an SM that the registers allow (65,536 a SM), then one JSON line.

    python bench/sass_swiglu.py
"""

from __future__ import annotations

import json

import triton
from sass_pair_layout import kernel_stats  # bench/ is on sys.path when run as a script
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from specpilot.kernels import linear

SHAPE = (24576, 4096)  # Qwen3-8B gate|up


def compile_tile(rows: int, swiglu: bool):
    fn = linear._skinny_kernel
    cfg = linear.tile_config(rows, *SHAPE)
    warps, stages = cfg.pop("num_warps", 4), cfg.pop("num_stages", 3)
    consts = dict(NORM=False, GLU=False, RESIDUAL=False, F32_DOT=False, PDL=True, PREFETCH=0,
                  SPLIT_K=1, FENCE=False, SWIGLU=swiglu, part_ptr=None, count_ptr=None)  # fmt: skip
    consts |= cfg | {"LOOP_STAGES": linear.loop_stages(dict(cfg, num_stages=stages))}
    types = {n: "*bf16" for n in ("x_ptr", "w_ptr", "y_ptr", "res_ptr", "nw_ptr")}
    types["eps"] = "fp32"
    signature = {n: "constexpr" if n in consts else types.get(n, "i32") for n in fn.arg_names}
    constexprs = {(fn.arg_names.index(k),): v for k, v in consts.items()}
    aligned = [n for n in fn.arg_names if n not in consts and (signature[n].startswith("*")
               or n.startswith("stride") or n in ("N", "K"))]  # fmt: skip
    attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n in aligned}
    source = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
    options = dict(num_warps=warps, num_stages=stages)
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options=options), warps


def main() -> None:
    out = {}
    for rows in (1, 16):
        for swiglu in (False, True):
            kernel, warps = compile_tile(rows, swiglu)
            stats = kernel_stats(kernel, top=6)
            # registers are allocated per warp in units of 256 (8 a thread)
            per_program = warps * 32 * -(-stats["registers"] // 8) * 8
            stats["programs_by_registers"] = 65536 // per_program
            out[f"{rows} rows swiglu={swiglu}"] = stats
            print(f"{rows:2} rows swiglu={swiglu!s:5}: {stats['instructions']} instructions, "
                  f"{stats['registers']} registers ({stats['programs_by_registers']} programs "
                  f"an SM), {stats['shared_bytes']} B shared")  # fmt: skip
    print(json.dumps({"bench": "sass_swiglu", "target": "sm_90", "shape": SHAPE, "tiles": out}))


if __name__ == "__main__":
    main()
