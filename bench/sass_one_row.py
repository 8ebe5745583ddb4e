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
    python bench/sass_one_row.py --row   # kernels/w12_row.py's stage loop, with and without X32
"""

from __future__ import annotations

import json
import re
from collections import Counter

from sass_pair_layout import disassemble  # bench/ is on sys.path when run as a script

from specpilot.formats.w12 import SLICE
from specpilot.kernels import aot, w12_linear, w12_row

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


def loop_opcodes(sass: str, key=None) -> Counter:
    """The opcodes of a loop of the SASS: of the backward branches' spans, the longest, or the
    one `key` (of the span's opcodes) ranks highest."""
    lines = sass.splitlines()
    labels = {line.rstrip(":"): i for i, line in enumerate(lines) if line.startswith(".L_x_")}
    spans = [
        (labels[m.group(1)], i)
        for i, line in enumerate(lines)
        if (m := re.search(r"BRA `\((\.L_x_\d+)\)", line)) and labels.get(m.group(1), i) < i
    ]
    if key is None:  # the longest span, in lines
        spans = [max(spans, key=lambda span: span[1] - span[0])]
    loops = [
        Counter(
            m.group(2).split(".")[0]
            for line in lines[first : last + 1]
            if (m := re.match(r"\s+/\*[0-9a-f]{4}\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)", line))
        )
        for first, last in spans
    ]
    return max(loops, key=key) if key else loops[0]


def loop_stats(tile: dict) -> dict:
    """The tile's compiled main loop: instructions, weights a thread a step, registers, opcodes."""
    sass, registers = disassemble(aot.compile_kernel(w12_linear._w12_kernel, TYPES, COMMON | tile))
    opcodes = loop_opcodes(sass)
    unroll = 1 if tile["USE_DOT"] else tile["UNROLL"]
    weights = tile["BLOCK_N"] * 8 * SLICE * unroll / (32 * tile["num_warps"])
    return _stats(opcodes, weights, registers)


def row_loop_stats(tile: dict) -> dict:
    """kernels/w12_row.py's stage loop (the shortest loop with one FFMA for each weight a thread
    takes a stage, or with MMA 16 HMMA: the tile loop and the barrier waits' retries span it
    too) for a tile of w12_row.TILE's keys, at K 4096: the same measures as loop_stats."""
    sass, registers = disassemble(w12_row.compile_sm90(tile))
    cfg = w12_row.TILE | tile
    weights = cfg["ROWS"] * cfg["SB"] * 8
    if cfg["MMA"]:  # a block a warp: 16 mmas a stage, 16 rows x 256 / 32 weights a thread
        weights = 128
        stage_loop = loop_opcodes(sass, lambda c: (c["HMMA"] == 16, -c.total()))
    else:
        stage_loop = loop_opcodes(sass, lambda c: (c["FFMA"] == weights, -c.total()))
    return _stats(stage_loop, weights, registers)


def _stats(opcodes: Counter, weights: float, registers: int) -> dict:
    count = sum(opcodes.values())
    return {
        "loop_instructions": count,
        "weights_per_thread_step": weights,
        "instructions_per_weight": count / weights,
        "registers": registers,
        "opcodes": dict(opcodes.most_common(6)),
    }


# kernels/w12_row.py's tiles (--row): the first default, 4 rows a thread, stages of 4 blocks
# (ROW_TILES 7, the default since run 338), each with X32
ROW_TILES = {
    "w12_row 16r8w6s2b": {}, "w12_row 16r8w6s2b X32": dict(X32=1),
    "w12_row 32r8w3s2b": dict(ROWS=4, STAGES=3),
    "w12_row 32r8w3s2b X32": dict(ROWS=4, STAGES=3, X32=1),
    "w12_row 16r8w3s4b": dict(SB=4, STAGES=3), "w12_row 16r8w3s4b X32": dict(SB=4, STAGES=3, X32=1),
    "w12_row 32r8w2s4b X32": dict(ROWS=4, SB=4, STAGES=2, X32=1),
    "w12_row 16r4w4s4b MMA": dict(ROWS=4, WARPS=4, SB=4, STAGES=4, MMA=1),
    "w12_row 16r4w4s4b MMA2": dict(ROWS=4, WARPS=4, SB=4, STAGES=4, MMA=2),
}  # fmt: skip


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--row", action="store_true", help="kernels/w12_row.py's stage loop")
    row = parser.parse_args().row
    out = {}
    for name, tile in (ROW_TILES if row else TILES).items():
        s = out[name] = (row_loop_stats if row else loop_stats)(tile)
        print(f"{name:44} {s['loop_instructions']:5d} / {s['weights_per_thread_step']:4.0f} = "
              f"{s['instructions_per_weight']:4.2f} a weight, {s['registers']:3d} registers; "
              f"{s['opcodes']}")  # fmt: skip
    print(json.dumps({"bench": "sass_one_row", "target": "sm_90", "tiles": out}))


if __name__ == "__main__":
    main()
