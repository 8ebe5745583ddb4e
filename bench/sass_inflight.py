"""SASS probe (no GPU): shared-memory loads still in flight where a partition frees a buffer.

A warp-specialized W12 kernel frees a ring stage with an mbarrier arrive (SASS SYNCS.ARRIVE)
after the warps' bar.sync. ptxas may issue a stage's last loads (LDS, LDSM) before the arrive and
read their registers only after it: the load is then still in flight when the loader sees the
stage free. Between generic-proxy partitions the barrier's release and acquire order it; a TMA
copy into the stage (the async proxy) is not ordered by them, and may land before the load
reads (run 346: w12_tokens, off in 25 of 40 runs at 16 tokens without a fence.proxy.async
before the arrive, SASS FENCE.VIEW.ASYNC.S, which waits for the loads; in none of 40 with it).

For each arrive, the loads since the last barrier wait (or branch) whose registers no
instruction has read before the arrive, a FENCE.VIEW.ASYNC or MEMBAR clearing them. Compiles
the engine's warp-specialized kernels for sm_90a (w12_tokens with its FENCE and without the
proxy fence, w12_row's W12 and bf16 decode tiles with their epilogues, bf16's also without its
fence, w12_tc's verify kernel) and prints each
arrive with loads in flight, those that may read a ring stage marked (`ring_suspects`: a bf16
x read, LDS.U16, or a meta warp's slot is written by no TMA copy after the kernel's start).
The last line is one JSON object.

    python bench/sass_inflight.py --out bench/results/DATE-sass-inflight.json
"""

from __future__ import annotations

import argparse
import re
from dataclasses import asdict, dataclass

from report import finish
from sass_pair_layout import disassemble  # bench/ is on sys.path when run as a script

INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
PREDICATE = re.compile(r"^@!?U?P\w+\s+")
# what waits for this thread's shared-memory loads
WAITS_FOR_LOADS = ("FENCE.VIEW.ASYNC", "MEMBAR")


@dataclass
class Arrive:
    """An mbarrier arrive and the shared-memory loads in flight at it."""

    address: int
    text: str
    loads: list[str]


def _instructions(sass: str) -> list[tuple[int, str]]:
    return [(int(m.group(1), 16), m.group(2)) for m in INSTRUCTION.finditer(sass)]


def _load_registers(opcode: str, operands: str) -> set[int]:
    """The registers a shared-memory load writes (LDS.128: 4 from its first)."""
    first = re.match(r"R(\d+)", operands)
    if first is None:
        return set()
    bits = re.search(r"\.(64|128)\b", opcode)
    count = int(bits.group(1)) // 32 if bits else 1
    if opcode.startswith("LDSM"):  # .x2 / .x4: 2 / 4 registers
        count = int(m.group(1)) if (m := re.search(r"\.(\d)\b", opcode)) else 1
    return set(range(int(first.group(1)), int(first.group(1)) + count))


def _read_registers(operands: str) -> set[int]:
    """The registers an instruction reads: those after its first operand (its destination)."""
    sources = operands.split(",", 1)[1] if "," in operands else ""
    return {int(r) for r in re.findall(r"\bR(\d+)\b", sources)}


def inflight(sass: str) -> list[Arrive]:
    """Each arrive (SYNCS.ARRIVE) with the loads in flight at it (see the module's docstring)."""
    found = []
    code = _instructions(sass)
    for i, (address, text) in enumerate(code):
        if "SYNCS.ARRIVE" not in text:
            continue
        start = i
        while start > 0 and not re.search(r"SYNCS.PHASECHK|\bBRA\b", code[start - 1][1]):
            start -= 1
        pending: dict[int, tuple[str, set[int]]] = {}
        for at, line in code[start:i]:
            body = PREDICATE.sub("", line)
            opcode, _, operands = body.partition(" ")
            if opcode.startswith(WAITS_FOR_LOADS):
                pending.clear()
            read = _read_registers(operands)
            pending = {a: load for a, load in pending.items() if not read & load[1]}
            if opcode.startswith("LDS"):
                pending[at] = (body, _load_registers(opcode, operands))
        if pending:
            found.append(Arrive(address, text, [load for load, _ in pending.values()]))
    return found


def ring_suspects(arrive: Arrive) -> list[str]:
    """The loads in flight at an arrive that may read a TMA-fed ring stage: wider than 16 bits
    and addressed from the shared window's base in a uniform register ([R + UR + offset]), as
    every stage read in these kernels' SASS is. A heuristic read off this Triton's SASS: a bf16
    x element (LDS.U16) is resident, and the meta warp's slots are addressed as [R + offset];
    it marks too much rather than too little (bf16_row's ldmatrix reads of x, resident, too)."""
    return [load for load in arrive.loads
            if not load.startswith("LDS.U16") and re.search(r"\+UR\d+", load)]  # fmt: skip


def _kernels() -> dict:
    """The compiled kernels to read, by name (sm_90a, no GPU)."""
    from specpilot.kernels import w12_row, w12_tc, w12_tokens

    row = w12_row.ROW_TILES[w12_row.ONE_ROW_TILE]
    return {
        f"w12_tokens (FENCE {w12_tokens.FENCE})": lambda: w12_tokens.compile_sm90(),
        "w12_tokens (FENCE 0: no proxy fence)": lambda: w12_tokens.compile_sm90(fence=0),
        "w12_tokens verify's o (residual, norm handed on)": lambda: w12_tokens.compile_sm90(
            residual=True, pdl=True, hand_out=True),
        "w12_tokens at 8 tokens (HALVES 1)": lambda: w12_tokens.compile_sm90(halves=1),
        "w12_tokens verify's down (x streamed)": lambda: w12_tokens.compile_sm90(
            w12_tokens.STREAM_TILE, k=12288, residual=True, pdl=True, hand_out=True),
        "w12_row decode tile, residual (o, down)": lambda: w12_row.compile_sm90(
            tile=row, residual=True, pdl=True),
        "w12_row decode tile, norm (q|k|v)": lambda: w12_row.compile_sm90(tile=row, norm=True),
        "w12_row decode tile, norm + SwiGLU (gate|up)": lambda: w12_row.compile_sm90(
            tile=row, norm=True, swiglu=True),
        "bf16_row decode tile, norm + SwiGLU": lambda: w12_row.compile_sm90(
            tile=w12_row.ROW_TILES[w12_row.BF16_ONE_ROW_TILE], norm=True, swiglu=True,
            bf16=True),
        "bf16_row decode tile, residual": lambda: w12_row.compile_sm90(
            tile=w12_row.ROW_TILES[w12_row.BF16_ONE_ROW_TILE], residual=True, pdl=True,
            bf16=True),
        "bf16_row decode tile, residual (FENCE 0: no proxy fence)": lambda: w12_row.compile_sm90(
            tile=w12_row.ROW_TILES[w12_row.BF16_ONE_ROW_TILE] | dict(FENCE=0), residual=True,
            pdl=True, bf16=True),
        "w12_tc verify, residual": lambda: w12_tc.compile_sm90(residual=True, pdl=True),
        "w12_tc verify, SwiGLU": lambda: w12_tc.compile_sm90(swiglu=True),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="", help="the JSON report's path")
    args = parser.parse_args()
    results = {}
    for name, build in _kernels().items():
        arrives = inflight(disassemble(build())[0])
        results[name] = [asdict(a) | dict(ring_suspects=ring_suspects(a)) for a in arrives]
        suspects = sum(len(ring_suspects(a)) for a in arrives)
        print(f"{name}: {len(arrives)} arrive(s) with loads in flight, {suspects} of them "
              "perhaps of a ring stage")  # fmt: skip
        for a in arrives:
            print(f"  {a.address:#06x} {a.text}")
            for load in a.loads:
                print(f"      {load}{'  <- ring?' if load in ring_suspects(a) else ''}")
    finish(dict(bench="sass_inflight", kernels=results), args.out)


if __name__ == "__main__":
    main()
