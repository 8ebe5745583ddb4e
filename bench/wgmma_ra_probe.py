"""Can a 16-row W12 multiply decode its weights straight into wgmma's register operand? A CPU
probe (sm_90a compile and SASS, no GPU): the groundwork of a verify-block kernel after
kernels/w12_row.py.

Why: issue 7's spec target needs the 16-row W12 multiplies near their 12-bit floor. The Triton
tiles (kernels/w12_linear.py) hold their loads in registers (3 programs of 4 warps an SM, too few
bytes in flight: docs/LOG.md runs 263-277), and kernels/w12_ws.py's decoders write bf16 weights
to shared memory for a wgmma that reads them from there (a second pass over the bytes and a
hand-off between warps, runs 279-285). With a TMA ring as w12_row's (bytes in flight held by
TMA in shared memory, not in registers), the warpgroup that multiplies could decode each
block's words from shared memory into wgmma's A operand in registers (`warpgroup_mma` with a
register A), so no decoded stage and no hand-off.

The operand: for m64nNk16 with bf16 A in registers, thread l of warp w holds rows g = 16 w +
l // 4 and g + 8, pairs of k c = l % 4 and c + 4 (k = 2 pair + half). W12's words hold, at one
position i of a block, 4 slices (a half block) in the low word and all 8 codes in the code word
(formats/w12.py), and `_bf16_pair` makes a bf16 pair of slices (q, q + 1). So take the K order
of a 16-k chunk as k = 2 i + s for slice q + s of the half at position i0 + i (i < 8): then the
thread that owns pairs c and c + 4 of row g needs one low word and one code word of row g at
each of positions i0 + c and i0 + c + 4, whose other pair of slices serves the next chunk:
loaded from shared memory in the layout kernels/w12_tc.WORDS (the probe runs that kernel's
block loop, `_block_products`), decoded, joined and reshaped into wgmma's operand layout with
no data moving between threads (`gl.convert_layout(..., assert_trivial=True)` compiles only if
so). That K order is kernels/w12_ws.pair_order's, which the engine's producers already write;
the input (B, [16 tokens, 16 k] a chunk, K-major) is read so.

`python bench/wgmma_ra_probe.py` compiles the probe for sm_90a and prints its registers, spills
and the SASS of its loop: instructions a weight, and whether any shared-memory store (a layout
conversion through shared memory) is left. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections import Counter

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
)

from specpilot.kernels.w12_tc import ACC, _block_products  # (the kernel it led to)


@gluon.jit
def _probe_kernel(w_ptr, x_ptr, s_ptr, y_ptr, BLOCKS: gl.constexpr):
    """One warpgroup, 64 weight rows, 16 tokens: kernels/w12_tc.py's block loop
    (`_block_products`: each block's words decoded into the A operand chunk by chunk, 16 wgmma
    a block) over buffers filled from global memory, as its TMA ring would hold them."""
    planes: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8, rank=2)
    words: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=2)
    x_layout: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16,
                                                  rank=2)  # fmt: skip
    low_buf = gl.allocate_shared_memory(gl.uint8, [2 * BLOCKS, 64, 128], planes)
    code_buf = gl.allocate_shared_memory(gl.uint8, [BLOCKS, 64, 128], planes)
    x_buf = gl.allocate_shared_memory(gl.bfloat16, [4 * BLOCKS, 16, 64], x_layout)
    scale_buf = gl.allocate_shared_memory(gl.int32, [2 * BLOCKS, 64],
                                          gl.SwizzledSharedLayout(1, 1, 1, [0]))  # fmt: skip
    fill: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [4, 1], [1, 0])
    r = gl.arange(0, 64, layout=gl.SliceLayout(1, fill))
    i = gl.arange(0, 32, layout=gl.SliceLayout(0, fill))
    tok: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [4, 1], [1, 0])
    tt = gl.arange(0, 16, layout=gl.SliceLayout(1, tok))
    kk = gl.arange(0, 64, layout=gl.SliceLayout(0, tok))
    for b in gl.static_range(BLOCKS):  # (stand-ins for the TMA ring's stages)
        for h in gl.static_range(3):  # the low plane's two halves, then the codes
            dst = low_buf.index(2 * b + h) if h < 2 else code_buf.index(b)
            v = gl.load(w_ptr + (3 * b + h) * 2048 + r[:, None] * 32 + i[None, :])
            dst._reinterpret(gl.int32, [64, 32], words).store(v)
        for p in gl.static_range(4):  # x [16, 256 BLOCKS] in pair order, 64 columns a box
            x_buf.index(4 * b + p).store(gl.load(x_ptr + tt[:, None] * (256 * BLOCKS)
                                                 + 256 * b + 64 * p + kk[None, :]))  # fmt: skip
    scales = scale_buf._reinterpret(gl.int32, [2 * BLOCKS, 64],
                                    gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))  # fmt: skip
    g = gl.arange(0, 2 * BLOCKS, layout=gl.SliceLayout(1, fill))
    r2 = gl.arange(0, 64, layout=gl.SliceLayout(0, fill))
    scales.store(gl.load(s_ptr + g[:, None] * 64 + r2[None, :]))
    fence_async_shared()
    gl.thread_barrier()
    acc = gl.zeros([64, 16], gl.float32, ACC)
    for b in range(BLOCKS):
        acc = _block_products(acc, low_buf, code_buf, x_buf, scale_buf, b, 2 * b)
    out: gl.constexpr = gl.BlockedLayout([1, 1], [2, 16], [4, 1], [1, 0])
    acc = gl.convert_layout(acc, out)
    rr = gl.arange(0, 64, layout=gl.SliceLayout(1, out))
    tt2 = gl.arange(0, 16, layout=gl.SliceLayout(0, out))
    gl.store(y_ptr + rr[:, None] * 16 + tt2[None, :], acc)


def compile_probe(blocks: int = 2):
    from specpilot.kernels import aot

    types = dict(w_ptr="*i32", x_ptr="*bf16", s_ptr="*i32", y_ptr="*fp32")
    return aot.compile_kernel(_probe_kernel, types, dict(BLOCKS=blocks, num_warps=4))


def loop_stats(sass: str) -> dict:
    """The SASS's opcodes of the block loop (from the decode before the first HGMMA to the last
    HGMMA: one block's body, the loop over blocks being a runtime loop): instructions, HGMMAs
    (16 a block), shared-memory stores inside (a layout conversion), and instructions a weight
    and thread (64 x 256 weights a block, 128 threads)."""
    lines = [ln for ln in sass.splitlines() if re.search(r"/\*[0-9a-f]{4}\*/", ln)]
    ops = [re.search(r"\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_]+)", ln) for ln in lines]
    ops = [m.group(1) if m else "" for m in ops]
    first = next(i for i, op in enumerate(ops) if op == "HGMMA")
    # the loop starts at the decode before the first HGMMA: back to the first LDS after the fills
    start = max(i for i in range(first) if ops[i] == "BAR") + 1
    last = max(i for i, op in enumerate(ops) if op == "HGMMA")
    body = ops[start : last + 1]
    count = Counter(body)
    return dict(instructions=len(body), hgmma=count["HGMMA"], sts_inside=count["STS"],
                per_weight=round(len(body) * 128 / (64 * 256 * count["HGMMA"] / 16), 2),
                top=dict(count.most_common(12)))  # fmt: skip


def probe_inputs(weight, x):
    """The probe's inputs from a W12 weight [64, 256 B] and x [16, 256 B] (torch): its words
    ([3 B, 64, 32] int32: each block's two low halves, then its codes), the scale words ([2 B,
    64]: group g's bf16x2 2^(2b)) and x in kernels/w12_ws.pair_order (the operand's K order)."""
    import torch

    from specpilot.kernels.w12_ws import pair_order

    n, kp = weight.low.shape
    blocks = kp // 256
    low = weight.low.view(torch.int32).view(n, blocks, 2, 32)
    codes = weight.codes.view(torch.int32).view(n, blocks, 1, 32)
    words = torch.cat([low, codes], 2).permute(1, 2, 0, 3).reshape(3 * blocks, n, 32)
    base = weight.base.view(n, blocks, 2).to(torch.int32)
    v = (2 * base + 127) << 7
    scales = (v | (v << 16)).permute(1, 2, 0).reshape(2 * blocks, n)
    return words.contiguous(), scales.contiguous(), pair_order(x)


def check(blocks: int = 2, device: str = "cuda") -> dict:
    """On a Hopper GPU (or device "cpu" inside kernels/emulate.gluon()): the probe's products
    against the decoded weights' (escapes left out, as the probe adds none): is the operand's K
    order the input's?"""
    import torch

    from specpilot.formats import w12
    from specpilot.kernels.w12_row import row_words

    gen = torch.Generator().manual_seed(0)
    w = (torch.randn(64, 256 * blocks, generator=gen) * 0.05).to(torch.bfloat16)
    w[3, 7] = 40.0  # an escape: its decoded weight reads 0 (row_words), the probe adds none
    x = torch.randn(16, 256 * blocks, generator=gen).to(torch.bfloat16)
    packed = w12.encode(w)
    words, scales, xp = probe_inputs(packed, x)
    y = torch.empty(64, 16, device=device)
    words, scales, xp = (t.to(device) for t in (words, scales, xp))
    _probe_kernel[(1,)](words, xp, scales, y, BLOCKS=blocks, num_warps=4)
    ref = row_words(packed).float() @ x.float().T  # [64, 16]
    err = (y.cpu() - ref).abs().max().item() / ref.abs().max().item()
    return dict(relative_error=err, right=err < 1e-4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--check", action="store_true", help="run it on the GPU too (Hopper)")
    args = parser.parse_args()
    os.environ.pop("TRITON_INTERPRET", None)
    from sass_pair_layout import disassemble  # bench/ is on sys.path as a script

    from specpilot.kernels import aot

    kernel = compile_probe(args.blocks)
    sass, _ = disassemble(kernel)
    result = dict(usage=aot.usage(kernel), loop=loop_stats(sass))
    if args.check:
        result["check"] = check(args.blocks)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
