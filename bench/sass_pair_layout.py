"""SASS probe (no GPU): what the W12 16-row multiply's decode would save if a word's two decoded
weights were adjacent columns instead of 32 columns apart.

One micro-kernel whose weights the W12 kernel's own pair decode (prmt + mul.rn.bf16x2 of a low and
a high word) turns into tl.dot's operand, in two forms, compiled for sm_90 with Triton's own ptxas
and read with its nvdisasm:
- `apart`: the pair's halves belong to two slices 32 columns apart (today's layout), so each half
  goes to its own [BLOCK_N, 32] dot;
- `adjacent`: the halves are columns 2i and 2i + 1, joined (tl.join + reshape) into one
  [BLOCK_N, 64] operand, whose bf16x2 registers are the MMA fragment's as decoded.
Prints, per kernel and warp count, the SASS instruction count, registers, shared memory and the
most frequent opcodes (the re-pairing shows as PRMT), then one JSON line.

    python bench/sass_pair_layout.py
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections import Counter

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from specpilot.kernels.w12_linear import _weight_pair

BIN = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
ONE = tl.constexpr(0x3F80)  # a group scale of 1.0 (bf16 bits)


@triton.jit
def _multiply(w_ptr, h_ptr, x_ptr, y_ptr, K, BLOCK_N: tl.constexpr, M: tl.constexpr,
              STAGES: tl.constexpr, ADJACENT: tl.constexpr):  # fmt: skip
    """y = W x for 64 columns a step, W's two weights a word decoded by the W12 kernel's own
    `_weight_pair`; ADJACENT: word i holds columns 2i and 2i + 1, else i and 32 + i."""
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    i = tl.arange(0, 32)
    rm = tl.arange(0, M)
    acc = tl.zeros([BLOCK_N, M], dtype=tl.float32)
    for k0 in tl.range(0, K, 64, num_stages=STAGES):
        low = tl.load(w_ptr + rn[:, None] * (K // 2) + k0 // 2 + i[None, :])
        high = tl.load(h_ptr + rn[:, None] * (K // 2) + k0 // 2 + i[None, :])
        a, b = _weight_pair(low, high, ONE, ONE, 0, True, True)  # bf16 halves, scales 1.0
        if ADJACENT:
            w = tl.reshape(tl.join(a, b), [BLOCK_N, 64])
            x = tl.load(x_ptr + rm[None, :] * K + (k0 + tl.arange(0, 64))[:, None])
            acc = tl.dot(w, x, acc)
        else:
            xa = tl.load(x_ptr + rm[None, :] * K + (k0 + i)[:, None])
            xb = tl.load(x_ptr + rm[None, :] * K + (k0 + 32 + i)[:, None])
            acc = tl.dot(a, xa, acc)
            acc = tl.dot(b, xb, acc)
    tl.store(y_ptr + rn[:, None] * M + rm[None, :], acc)


def sass_stats(adjacent: bool, num_warps: int, block_n: int = 32, rows: int = 16,
               stages: int = 2) -> dict:  # fmt: skip
    signature = {"w_ptr": "*i32", "h_ptr": "*i32", "x_ptr": "*bf16", "y_ptr": "*fp32", "K": "i32"}
    signature |= {name: "constexpr" for name in ("BLOCK_N", "M", "STAGES", "ADJACENT")}
    constexprs = {(5,): block_n, (6,): rows, (7,): stages, (8,): adjacent}
    aligned = {(j,): [["tt.divisibility", 16]] for j in range(5)}
    source = ASTSource(fn=_multiply, signature=signature, constexprs=constexprs, attrs=aligned)
    options = dict(num_warps=num_warps, num_stages=stages)
    kernel = triton.compile(source, target=GPUTarget("cuda", 90, 32), options=options)
    return kernel_stats(kernel)


def disassemble(kernel) -> tuple[str, int]:
    """A compiled kernel's SASS text and registers a thread (Triton's own nvdisasm and
    cuobjdump)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(kernel.asm["cubin"])
        f.flush()
        sass = subprocess.run([f"{BIN}/nvdisasm", "-c", f.name], capture_output=True, text=True)
        usage = subprocess.run([f"{BIN}/cuobjdump", "-res-usage", f.name], capture_output=True,
                               text=True)  # fmt: skip
    return sass.stdout, int(re.search(r"REG:(\d+)", usage.stdout).group(1))


def kernel_stats(kernel, top: int = 10) -> dict:
    """A compiled kernel's SASS instruction count, registers, shared memory and `top` most
    frequent opcodes."""
    sass, registers = disassemble(kernel)
    opcodes = Counter(
        m.group(2) for m in re.finditer(r"/\*[0-9a-f]{4}\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_]+)", sass)
    )
    return {
        "instructions": sum(opcodes.values()),
        "registers": registers,
        "shared_bytes": kernel.metadata.shared,
        "opcodes": dict(opcodes.most_common(top)),
    }


def main() -> None:
    out = {}
    for name, adjacent in (("apart", False), ("adjacent", True)):
        for warps in (2, 4):
            stats = sass_stats(adjacent, warps)
            out[f"{name} {warps} warps"] = stats
            print(f"{name:8} {warps} warps: {stats['instructions']} instructions, "
                  f"{stats['registers']} registers, {stats['shared_bytes']} B shared; "
                  f"{stats['opcodes']}")  # fmt: skip
    print(json.dumps({"bench": "sass_pair_layout", "target": "sm_90", "kernels": out}))


if __name__ == "__main__":
    main()
