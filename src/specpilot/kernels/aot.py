"""Our Triton kernels compiled ahead of time for a GPU that is not here (the H200: sm_90), and
what ptxas says of them: registers, spills, shared memory, and so how many programs an SM holds.

No GPU is needed: Triton lowers to PTX and its bundled ptxas assembles for the target. The
constants a launcher would pass go in `consts` (kernel constexprs; "num_warps" and "num_stages"
there are compile options), the pointer and scalar types in `types` (others: i32). The launch
switches (kernels/launch.py) and the optional mechanisms default to off (OFF) unless given.
tests/compile_kernels.py compiles every kernel this way; bench/ptxas_audit.py reads the
deployed tiles' resources.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, CompiledKernel
from triton.runtime.jit import JITFunction

HOPPER = GPUTarget("cuda", 90, 32)
# the H200's per-SM budgets (sm_90): 64K 32-bit registers, 228 KB of shared memory (1 KB of it
# reserved a program), 64 warps, 32 programs
SM90 = dict(registers=65536, shared=233472, shared_reserved=1024, warps=64, programs=32)
# constants that are launch switches or optional mechanisms: off unless a case gives them
OFF = {
    "PDL": 0,
    "PREFETCH": 0,
    "MERGE_ROWS": 0,
    "FENCE": 0,
    "SPLIT_K": 1,
    "SPLIT_IN": 1,
    "SUM_IN_KERNEL": 0,
    "ACC_SCALE": 0,
    "ESC_IN_LOOP": 0,
    "HALVES": 0,
    "JOIN": 0,
    "PAIR": 0,
    "NO_DECODE": 0,
    "ESC_ROWS": 0,
    "AHEAD": 0,
    "KV_AHEAD": 0,
    "MERGE_BLOCK": 0,
    "CHUNK": 0,
    "EARLY": 0,
    "EARLY_POS": 0,
    "TMA": 0,
    "TRACE": 0,
    "SHARED": 0,
    "ACCEPT": 0,
    "WIDTH": 1,
    "WIDTH_POW2": 1,
    "HAND_OUT": 0,
    "HAND_IN": 0,
    "SLOTS_IN": 1,
    "HAND_ROWS": 1,
    "LATE": 0,
    "LATE_AHEAD": 0,
    "EARLY_TRIGGER": 0,
    "SCALE": 0,
    "W_LEFT": 0,
    "ROPE": 0,
    "ROPE_FENCE": 0,
    "CERTIFY": 0,
    "TILES_N": 1,
    "TILES_M": 1,
    "DEFER": 0,
    "COMPACT": 0,
    "F16": 0,
    "UPPERS_OUT": 0,
    "STATS_IN": 0,
    "A16": 0,
    "X16_OUT": 0,
    "GROUPS": 1,
}
OPTIONS = ("num_warps", "num_stages", "maxnreg")


def compile_kernel(
    fn: JITFunction,
    types: dict[str, str],
    consts: dict,
    target: GPUTarget = HOPPER,
    divisible: tuple[str, ...] = (),
) -> CompiledKernel:
    """fn (a @triton.jit or @gluon.jit kernel) compiled for `target` with these constants (OFF's
    where not given; compile options among them taken out) -> Triton's compiled kernel
    (.asm["ptx"], .metadata).

    Compiled as the engine's launches get it: Triton's JIT marks every argument whose value is a
    multiple of 16 (a pointer's address, an integer) and compiles for that (vectorized loads,
    pipelined loops), so every pointer, every stride and N and K are 16-divisible here, as at
    the 8B shapes; `divisible` names more integers that are (a 16-token block's T, a 16-row
    multiply's M). Without it the split attention compiled to 255 registers and 620 bytes of
    spills at 16 tokens where the H200 ran 165 registers and none (docs/LOG.md run 117)."""
    from specpilot.kernels import linear

    consts = dict(consts)
    # (an option the kernel also takes, Gluon's num_warps, stays a constant of it too)
    options = {k: consts[k] if k in fn.arg_names else consts.pop(k) for k in OPTIONS if k in consts}
    consts = {k: v for k, v in OFF.items() if k in fn.arg_names} | consts
    # a constexpr parameter's default where not given, as a launch that leaves it out gets it
    # (not an i32 argument: a `tl.static_range` over it would not compile)
    defaults = {p.name: p.default for p in fn.params if p.is_constexpr and p.has_default}
    consts = {k: v for k, v in defaults.items() if k not in consts} | consts
    if "LOOP_STAGES" in fn.arg_names:  # as the launchers set it, at this compile's num_stages
        consts["LOOP_STAGES"] = linear.loop_stages({"num_stages": 3} | consts)
    signature = {
        name: "constexpr" if name in consts else types.get(name, "i32") for name in fn.arg_names
    }
    constexprs = {(fn.arg_names.index(k),): v for k, v in consts.items()}
    aligned = [
        n for n in fn.arg_names if n not in consts and (
            signature[n].startswith("*") or n.startswith("stride") or n in ("N", "K", *divisible)
        )
    ]  # fmt: skip
    attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n in aligned}
    from triton.experimental.gluon._runtime import GluonASTSource, GluonJITFunction

    kind = GluonASTSource if isinstance(fn, GluonJITFunction) else ASTSource
    source = kind(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
    return triton.compile(source, target=target, options=options)


def bank_conflicts(layout, shared_layout, shape: list[int], dtype=None) -> int:
    """Triton's own count of the shared-memory bank conflicts of reading (or writing) a tile of
    `shape` in register layout `layout` (a Gluon distributed layout) from a buffer of that shape
    in `shared_layout` (its swizzle included): the excess passes each wavefront takes (0: none; 7:
    8-way). dtype: the elements' (Gluon's; default int32). No kernel is compiled: this asks
    Triton's layout code directly, as `gl.bank_conflicts` does inside a kernel."""
    from triton._C.libtriton import gluon_ir, ir
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language._core import (
        distributed_type,
        shared_memory_descriptor_type,
    )
    from triton.experimental.gluon.language._semantic import GluonSemantic

    context = ir.context()
    ir.load_dialects(context)
    semantic = GluonSemantic(gluon_ir.GluonOpBuilder(context))
    dtype = dtype or gl.int32
    registers = distributed_type(dtype, list(shape), layout)
    shared = shared_memory_descriptor_type(dtype, list(shape), shared_layout, list(shape))
    return semantic.bank_conflicts(registers, shared)


def ptxas() -> Path:
    """Triton's bundled ptxas."""
    return Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"


def usage(compiled: CompiledKernel, arch: str = "sm_90a") -> dict:
    """ptxas -v of a compiled kernel's PTX: registers, spill stores / loads and stack (bytes a
    thread), shared memory (bytes a program, Triton's), warps, and the programs an SM holds by
    each budget (SM90) and overall."""
    with tempfile.TemporaryDirectory() as tmp:
        ptx = Path(tmp) / "k.ptx"
        ptx.write_text(compiled.asm["ptx"])
        command = [str(ptxas()), f"-arch={arch}", "-v", str(ptx), "-o", str(Path(tmp) / "k.o")]
        done = subprocess.run(command, capture_output=True, text=True)
    text = done.stdout + done.stderr
    if done.returncode:
        raise RuntimeError(f"ptxas failed: {text[-500:]}")

    def number(pattern: str) -> int:
        found = re.search(pattern, text)
        return int(found.group(1)) if found else 0

    warps = compiled.metadata.num_warps
    registers = number(r"Used (\d+) registers")
    shared = compiled.metadata.shared
    by = {
        # registers are allocated per warp in units of 256
        "registers": SM90["registers"] // max(1, -(-registers * 32 // 256) * 256 * warps),
        "shared": SM90["shared"] // (shared + SM90["shared_reserved"]),
        "warps": SM90["warps"] // warps,
        "programs": SM90["programs"],
    }
    return dict(
        registers=registers,
        spill_stores=number(r"(\d+) bytes spill stores"),
        spill_loads=number(r"(\d+) bytes spill loads"),
        stack=number(r"(\d+) bytes stack frame"),
        shared=shared,
        warps=warps,
        programs_per_sm=min(by.values()),
        limited_by=min(by, key=by.get),
    )
