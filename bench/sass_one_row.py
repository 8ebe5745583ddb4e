"""SASS probe (no GPU): the W12 multiply's main loop, instructions a weight, for one-row tiles.

Compiles kernels/w12_linear._w12_kernel for sm_90 as the engine launches it (aot.compile_kernel:
16-divisible pointers and strides, ESC_IN_LOOP, inline PTX, group size 128, a residual) for the
one-row element-wise tiles of MEASURED_TILES (down's and gate|up's) and for tensor-core tiles
(BLOCK_M 16, the token row padded) of several widths and warp counts, with ACC_SCALE on and
off; reads the SASS with Triton's own nvdisasm, takes the loop as the longest backward branch's
span (its first step's escape fetch, branched over after it, included), and prints per tile
the loop's instructions, the weights a thread takes a step, their ratio, the registers
(cuobjdump) and the most frequent opcodes. The last line is one JSON object.

Run 215 (Nsight Compute on the H200) found the one-row W12 gate|up and q|k|v issuing
instructions 61-63% of the time: this counts what each tile asks of the issue slots.

    python bench/sass_one_row.py
"""

from __future__ import annotations

import json
import re
from collections import Counter

from sass_pair_layout import disassemble  # bench/ is on sys.path when run as a script

from specpilot.formats.w12 import SLICE
from specpilot.kernels import aot, w12_linear

TYPES = {
    "x_ptr": "*bf16", "low_ptr": "*i32", "code_ptr": "*i32", "base_ptr": "*u8",
    "row_ptr": "*i32", "esc_col_ptr": "*i32", "esc_bits_ptr": "*i16", "y_ptr": "*bf16",
    "res_ptr": "*bf16", "nw_ptr": "*bf16", "part_ptr": "*bf16",
}  # fmt: skip
COMMON = dict(NORM=False, GLU=False, RESIDUAL=True, F32_DOT=False, GROUP=128, ASM=True,
              EVEN_K=True, EVEN_N=True, SLICE=SLICE, SPLIT_K=1, ESC_IN_LOOP=True)  # fmt: skip
ELEMENTWISE = dict(BLOCK_M=1, USE_DOT=False, num_stages=1, LOOP_STAGES=3)
DOT = dict(BLOCK_M=16, UNROLL=1, USE_DOT=True, num_stages=3, HALVES=True)
TILES = {
    "down (element-wise 4 x 4, 2 warps)": ELEMENTWISE | dict(BLOCK_N=4, UNROLL=4, num_warps=2),
    "gate|up (element-wise 16 x 2, 4 warps)": ELEMENTWISE | dict(BLOCK_N=16, UNROLL=2, num_warps=4),
    **{
        f"tensor cores {n} rows, {w} warps, ACC_SCALE={acc}": DOT
        | dict(BLOCK_N=n, num_warps=w, ACC_SCALE=acc)
        for n, w in ((16, 1), (32, 2), (64, 2), (64, 4), (128, 4))
        for acc in (True, False)
    },
}


def loop_stats(tile: dict) -> dict:
    """The tile's compiled main loop: instructions, weights a thread a step, registers, opcodes."""
    sass, registers = disassemble(aot.compile_kernel(w12_linear._w12_kernel, TYPES, COMMON | tile))
    lines = sass.splitlines()
    labels = {line.rstrip(":"): i for i, line in enumerate(lines) if line.startswith(".L_x_")}
    spans = [
        (i - labels[m.group(1)], labels[m.group(1)], i)
        for i, line in enumerate(lines)
        if (m := re.search(r"BRA `\((\.L_x_\d+)\)", line)) and labels.get(m.group(1), i) < i
    ]
    _, first, last = max(spans)
    opcodes = Counter(
        m.group(2).split(".")[0]
        for line in lines[first : last + 1]
        if (m := re.match(r"\s+/\*[0-9a-f]{4}\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)", line))
    )
    unroll = 1 if tile["USE_DOT"] else tile["UNROLL"]
    weights = tile["BLOCK_N"] * 8 * SLICE * unroll / (32 * tile["num_warps"])
    count = sum(opcodes.values())
    return {
        "loop_instructions": count,
        "weights_per_thread_step": weights,
        "instructions_per_weight": count / weights,
        "registers": registers,
        "opcodes": dict(opcodes.most_common(6)),
    }


def main() -> None:
    out = {}
    for name, tile in TILES.items():
        s = out[name] = loop_stats(tile)
        print(f"{name:44} {s['loop_instructions']:5d} / {s['weights_per_thread_step']:4.0f} = "
              f"{s['instructions_per_weight']:4.2f} a weight, {s['registers']:3d} registers; "
              f"{s['opcodes']}")  # fmt: skip
    print(json.dumps({"bench": "sass_one_row", "target": "sm_90", "tiles": out}))


if __name__ == "__main__":
    main()
