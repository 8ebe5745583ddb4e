"""The 16-row (or one-row) W12 multiplies' variants at a target's layer shapes, on the GPU: JOIN
tiles, ESC_ROWS, and bounds that take one part of the work out.

Why: at 16 rows the default W12 tiles ran at bf16's time, not their bytes' (docs/LOG.md run 258:
gate|up 3.38 TB/s of 12-bit bytes). JOIN (kernels/w12_linear) puts a half block's 4 slices in
one tl.dot (2 warpgroup waits a block instead of 8) with K in word order, so each decoded pair
already is an operand register; JOIN 1 permutes the input tile inside the program, JOIN 2 reads
it already permuted (`join_order`), which a producer kernel would have to write. The bounds
(wrong products, not checked): "nodecode", the planes' words taken as the weights with no
decode, "noesc", the escape table emptied; and bf16's kernel over 3/4 of K (W12's bytes in
bf16's pattern). They showed the decode is not what limits (run 263) and the escapes' dependent
loads are (run 264): ESC_ROWS fetches each row's first escapes over the loop's first two steps.
--deep: tiles with 3-8 load stages.

Each tile is checked against the reference (the decoded weights' products, to fp32 order; JOIN 2
on the permuted input), then timed in CUDA graphs with the weights cycled from HBM. Prints a
table (microseconds and TB/s of the W12 bytes, each variant's best tile); the last line is one
JSON object.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from kernel_sweep import cycled, graph_time, layer_shapes  # bench/ is on sys.path as a script
from report import finish, save
from w12_speed import check

from specpilot.formats import w12
from specpilot.kernels import w12_row, w12_tc, w12_ws
from specpilot.kernels.linear import skinny_linear, skinny_linear_reference
from specpilot.kernels.w12_linear import join_order, tile_config, w12_linear, w12_linear_reference

# variants of each tile: JOIN (1: the input permuted in the program, 2: given permuted), the
# bounds and ESC_ROWS (run 262's BASE_EARLY variants, the group bases loaded at the step's top,
# were level and are deleted)
VARIANTS = {
    "plain": {}, "j1": dict(JOIN=1), "j2": dict(JOIN=2),
    # bounds, wrong products (not checked): the planes' words taken as the weights, no decode
    "nodecode": dict(NO_DECODE=1), "j2nodecode": dict(JOIN=2, NO_DECODE=1),
    # a bound, wrong products (not checked): the escape table emptied (as w12_speed's bare)
    "noesc": {},
    # ESC_ROWS: each row's first 1, 2 or 4 escapes fetched over the first two loop steps, their
    # products after the loop (run 264: an emptied table took 7-15% off the 16-row tiles)
    "esc1": dict(ESC_ROWS=1), "esc2": dict(ESC_ROWS=2), "esc4": dict(ESC_ROWS=4),
    "j2esc2": dict(JOIN=2, ESC_ROWS=2),
    # JOIN_INPUT's tiles (on since run 270) take the ESCAPE_TILES' ESC_ROWS with JOIN 2
    "j2esc1": dict(JOIN=2, ESC_ROWS=1), "j2esc4": dict(JOIN=2, ESC_ROWS=4),
}  # fmt: skip
# the fastest tiles of run 259 a shape (label: BLOCK_N, warps, stages, K split)
BEST_TILES = {
    "qkv": ((64, 4, 3, 2), (64, 4, 3, 4), (32, 2, 2, 4)),
    "o": ((64, 4, 3, 4), (32, 2, 3, 4)),
    "gate_up": ((64, 4, 3, 1),),
    "down": ((64, 4, 3, 8), (32, 2, 3, 8), (64, 4, 3, 4)),
    "lm_head": ((64, 4, 3, 1),),
}


# --ws: kernels/w12_ws.py's tiles (the decode in warps of its own), beside the variants
WS_TILES = (
    # the default: a unit's group bases loaded at once, its first 4 escapes a row gathered at
    # once (runs 279-280: each block's bases loaded in the loop cost a round trip a block, and
    # the escapes one after another a chain of them a unit; "64r4s/run279" has both)
    ("64r4s", {}), ("64r4s/noslab", dict(BASE_SLAB=0)), ("64r4s/esc0", dict(ESC_BATCH=0)),
    ("64r4s/run279", dict(BASE_SLAB=0, ESC_BATCH=0)), ("64r4s/escafter", dict(ESC_FIRST=0)),
    ("64r3s", dict(STAGES=3)), ("64r5s1w", dict(STAGES=5, W_STAGES=1)),
    ("64r4s8d", dict(DECODE_WARPS=8, DECODE_REGS=80)), ("64r4s1w", dict(W_STAGES=1)),
    ("64r4s/pers", dict(PERSISTENT=1)),
    # (run 286) the planes' stage freed once read (before the decode), the input's ring deeper
    ("64r4s/early", dict(EARLY_FREE=1)), ("64r4s/early/pers", dict(EARLY_FREE=1, PERSISTENT=1)),
    ("64r4s/x8", dict(X_STAGES=8)), ("64r4s/lag", dict(MMA_LAG=1)),
    ("64r4s/lag/early/pers", dict(MMA_LAG=1, EARLY_FREE=1, PERSISTENT=1)),
    ("64r4s8d/lag/early/pers", dict(DECODE_WARPS=8, DECODE_REGS=80, MMA_LAG=1, EARLY_FREE=1,
                                    PERSISTENT=1)),
    ("64r3s3w/lag", dict(STAGES=3, W_STAGES=3, MMA_LAG=1)),
    # the decoders restore each weight's exponent, the multiplier sums into one accumulator
    ("64r4s/restore", dict(RESTORE=1)), ("64r4s/restore/pers", dict(RESTORE=1, PERSISTENT=1)),
    ("64r4s8d/restore/early/pers", dict(RESTORE=1, DECODE_WARPS=8, DECODE_REGS=80,
                                        EARLY_FREE=1, PERSISTENT=1)),
    # bounds, wrong products (not checked): without the decode, the multiply, or both
    ("64r4s/nodec", dict(BOUND=1)), ("64r4s/nomma", dict(BOUND=2)), ("64r4s/loads", dict(BOUND=3)),
    ("64r4s/loads/pers", dict(BOUND=3, PERSISTENT=1)),
    ("64r4s/loads/run279", dict(BOUND=3, BASE_SLAB=0, ESC_BATCH=0)),
    # (run 282) without the input's copies: the weights' bytes alone through the ring
    ("64r4s/nox", dict(BOUND=4)), ("64r4s/pers/nox", dict(BOUND=4, PERSISTENT=1)),
    ("64r4s/loads/nox", dict(BOUND=7)), ("64r4s/loads/pers/nox", dict(BOUND=7, PERSISTENT=1)),
    # and whether the ring's depth (bytes in flight) sets the loads' pace
    ("64r2s1w/loads", dict(STAGES=2, W_STAGES=1, BOUND=3)),
    ("64r6s1w/loads", dict(STAGES=6, W_STAGES=1, BOUND=3)),
    ("64r6s1w/loads/nox", dict(STAGES=6, W_STAGES=1, BOUND=7)),
    ("128r2s8d", dict(BLOCK_N=128, STAGES=2, W_STAGES=1, DECODE_WARPS=8, DECODE_REGS=80)),
)  # fmt: skip


# --row: kernels/w12_row.py's tiles (one row, the planes through a TMA ring, the decode in the
# warps that multiply, the group scales and escapes from a warp of their own): BLOCK_N rows on
# WARPS warps (ROWS a thread), STAGES stages of SB blocks
ROW_TILES = (
    ("16r8w6s2b", {}), ("16r8w4s2b", dict(STAGES=4)), ("16r8w8s2b", dict(STAGES=8)),
    ("16r8w12s1b", dict(SB=1, STAGES=12)), ("16r8w3s4b", dict(SB=4, STAGES=3)),
    ("16r4w6s2b", dict(ROWS=4, WARPS=4)), ("8r8w6s2b", dict(ROWS=1)),
    ("32r8w3s2b", dict(ROWS=4, STAGES=3)), ("16r8w6s2b/fence", dict(FENCE=1)),
    # (session 53) x widened to fp32 in shared memory once: 8% fewer instructions in the stage
    # loop (bench/sass_one_row.py --row: 5.88 -> 5.38 a weight; ROWS 4: 4.88 -> 4.62), the
    # same bits
    ("16r8w6s2b/x32", dict(X32=1)), ("32r8w3s2b/x32", dict(ROWS=4, STAGES=3, X32=1)),
    # bounds, wrong products (not checked): the loader's copies alone (no consumer waited on),
    # and the multiplying warps' hand-off alone (each stage waited for and freed, not read)
    ("16r8w6s2b/copies", dict(BOUND=8)), ("16r8w6s2b/handoff", dict(BOUND=2)),
)  # fmt: skip
# --row, bf16 weights (w12_row.bf16_row_linear: the same ring, 512 bytes a row a block): against
# skinny_linear's one-row tiles (issue 3: its one-row q|k|v and o lose 67 and 75 us a decode to
# their bounds, run 190)
ROW_BF16_TILES = (
    ("16r8w6s2b", {}), ("16r8w4s2b", dict(STAGES=4)), ("16r8w8s1b", dict(STAGES=8, SB=1)),
    ("8r8w8s2b", dict(ROWS=1, STAGES=8)), ("16r4w6s2b", dict(ROWS=4, WARPS=4)),
    ("16r8w6s2b/copies", dict(BOUND=8)),
)  # fmt: skip


# --tc: kernels/w12_tc.py's tiles (2-16 rows: the weights decoded into wgmma's register operand,
# fed by a TMA ring; 64 rows a unit, STAGES stages, K split for two waves unless SPLIT_K)
TC_TILES = (
    ("64r4s", {}), ("64r3s", dict(STAGES=3)), ("64r6s", dict(STAGES=6)),
    ("64r4s/k1", dict(SPLIT_K=1)), ("64r4s/esc0", dict(ESC_BATCH=0)),
    ("64r4s/grid", dict(PERSISTENT=0)),
    # the planes through TMA's 128-byte swizzle (w12_tc.TILE's SWIZZLE: no bank conflicts in
    # the operand reads; run 309: 18-33% faster)
    ("64r4s/sw", dict(SWIZZLE=128)), ("64r4s/k1/sw", dict(SPLIT_K=1, SWIZZLE=128)),
    ("64r3s/sw", dict(STAGES=3, SWIZZLE=128)), ("64r5s/sw", dict(STAGES=5, SWIZZLE=128)),
    ("64r6s/sw", dict(STAGES=6, SWIZZLE=128)), ("64r6s/k1/sw", dict(STAGES=6, SPLIT_K=1,
    SWIZZLE=128)),
    # more K splits than split_plan's (o 2, down 4): shorter units, more of them a wave
    ("64r4s/k2/sw", dict(SPLIT_K=2, SWIZZLE=128)), ("64r4s/k4/sw", dict(SPLIT_K=4,
    SWIZZLE=128)), ("64r4s/k6/sw", dict(SPLIT_K=6, SWIZZLE=128)), ("64r4s/k8/sw",
    dict(SPLIT_K=8, SWIZZLE=128)),
    # each warp's own mma.sync instead of the warpgroup's wgmma (w12_tc.TILE's MMA; run 309)
    ("64r4s/sw/mma2", dict(SWIZZLE=128, MMA=2)), ("64r4s/k1/sw/mma2", dict(SPLIT_K=1,
    SWIZZLE=128, MMA=2)), ("64r4s/mma2", dict(MMA=2)),
    # bounds (w12_tc.TILE's BOUND; wrong products): no decode, no multiply, neither, the copies
    # alone, swizzled: which of the loads, the decode and the multiply holds it
    ("64r4s/sw/nodec", dict(SWIZZLE=128, BOUND=1)), ("64r4s/sw/nomma", dict(SWIZZLE=128,
    BOUND=2)), ("64r4s/sw/loads", dict(SWIZZLE=128, BOUND=3)), ("64r4s/copies", dict(BOUND=8)),
    ("64r4s/nodec", dict(BOUND=1)),
)  # fmt: skip


# --ws-two (run 282): two programs an SM (80 registers a thread at launch, 2 stages, 1 decoded
# stage: 98 kB of shared memory each), beside the same tile at one program an SM
TWO_AN_SM = dict(STAGES=2, W_STAGES=1, DECODE_REGS=80, MAXNREG=80)
WS_TWO_TILES = (
    ("64r2s1w", dict(STAGES=2, W_STAGES=1)), ("64r2s1w/2an", TWO_AN_SM),
    ("64r2s1w/2an/pers", TWO_AN_SM | dict(PERSISTENT=2)),
    ("64r2s1w/2an/loads", TWO_AN_SM | dict(BOUND=3)),
)  # fmt: skip


# --ws-loader (run 285): the loader's copies alone, no consumer waited on (BOUND 8 | 3), beside
# the loads with their consumers' hand-offs (BOUND 3): which of the two holds the loads
WS_LOADER_TILES = (
    ("64r4s/loads", dict(BOUND=3)), ("64r4s/copies", dict(BOUND=11)),
    ("64r4s/copies/nox", dict(BOUND=15)), ("64r6s1w/copies", dict(STAGES=6, W_STAGES=1, BOUND=11)),
    ("64r4s/copies/pers", dict(BOUND=11, PERSISTENT=1)),
)  # fmt: skip


# --deep: deeper load rings than any sweep took (up to 4 stages), where run 263 found the
# loads, not the decode, limiting the 16-row tiles: (BLOCK_N, warps, stages, K split)
DEEP_TILES = {
    "gate_up": tuple((bn, w, s, 1) for bn, w, ss in ((64, 4, (3, 4, 5)), (32, 2, (4, 6, 8)),
                                                      (32, 4, (4, 6)), (16, 2, (6, 8)))
                     for s in ss),
    # and (session 49) one-wave grids with deep rings, bf16's pattern at this shape (32 rows on 4
    # warps, no K split, 4 stages of 256 columns: 128 programs, ~64 kB in flight an SM): 64 rows
    # with K split 2 and 32 rows without one (128 programs each)
    "down": tuple((bn, w, s, k) for bn, w, ss, ks in ((64, 4, (3, 4, 5), (4, 8)),
                                                       (32, 2, (3, 4, 6, 8), (4, 8)),
                                                       (64, 4, (3, 4, 6, 8), (2,)),
                                                       (32, 2, (4, 6, 8), (1,)))
                  for s in ss for k in ks),
}  # fmt: skip


def tiles(name: str, deep: bool = False, shape: tuple[int, int, int] = (16, 0, 0)) -> list:
    """BEST_TILES' (or DEEP_TILES') tensor-core tiles of the shape (ACC_SCALE: JOIN needs
    it), and the shape's default tile (tile_config) where it is none of them ("default"; run
    271 had left out Llama-3.1-8B's 2-warp gate_up); one row: the default tile. The variants
    set ESC_ROWS and JOIN: the default's own are dropped."""
    default = {k: v for k, v in tile_config(*shape).items() if k not in ("ESC_ROWS", "JOIN")}
    if shape[0] == 1:  # (rows, N, K)
        return [("default", default)]
    out = [
        (f"{bn}r{warps}w{stages}s/k{split}",
         dict(BLOCK_M=16, BLOCK_N=bn, UNROLL=1, SPLIT_K=split, USE_DOT=True, num_warps=warps,
              num_stages=stages, ACC_SCALE=True))
        for bn, warps, stages, split in (DEEP_TILES if deep else BEST_TILES)[name]
    ]  # fmt: skip
    if shape[1] and not any(_same(default, cfg) for _, cfg in out):
        out.append(("default", default | dict(ACC_SCALE=True)))
    return out


def _same(a: dict, b: dict) -> bool:
    """Whether two W12 tiles launch alike (num_warps 4, num_stages 1 and ACC_SCALE True where
    unset: the launcher's defaults for 16-row tiles)."""
    unset = dict(num_warps=4, num_stages=1, ACC_SCALE=True)
    return unset | a == unset | b


def micros(call) -> float:
    """Microseconds a call of `call` takes, in CUDA graphs (kernel_sweep.graph_time)."""
    return graph_time(call) * 1e6


def timed_entry(entry: dict, checked, call, nbytes: int) -> dict:
    """entry with `call`'s time (us, and TB/s of nbytes) once `checked()` (a run of the tile,
    checked unless a bound) passes; else the error of a tile that does not compile, fit or
    check."""
    try:
        checked()
        us = micros(call)
        entry |= dict(us=us, tb_s=nbytes / us / 1e6)
    except Exception as exc:  # noqa: BLE001 - a tile that does not compile or fit
        entry["error"] = f"{type(exc).__name__}: {str(exc)[:160]}"
    return entry


def bench(
    m: int,
    name: str,
    n: int,
    k: int,
    variants: list[str],
    deep: bool = False,
    ws_tiles: tuple = (),
    row_tiles: tuple = (),
    tc_tiles: tuple = (),
) -> dict:
    """Shape `name` (N x K) at m rows: bf16's times, then each variant of each of its tiles
    (`tiles`), checked (but the bounds) and timed with the weights cycled from HBM; ws_tiles:
    kernels/w12_ws.py tiles (label, tile) to time beside them, row_tiles kernels/w12_row.py's
    (one row), tc_tiles kernels/w12_tc.py's."""
    w = (torch.randn(n, k, device="cuda") * 0.02).to(torch.bfloat16)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    packed = w12.encode(w)
    ref = w12_linear_reference(x, packed)
    xj = join_order(x)
    ws, ps = cycled(w, True), cycled(packed, True)
    bare = cycled(packed.without_escapes())
    nbytes = packed.nbytes_bound()
    row = dict(shape=name, m=m, n=n, k=k, w12_bytes=nbytes,
               bf16_us=micros(lambda: skinny_linear(x, ws())),
               cublas_us=micros(lambda: F.linear(x, ws())), tiles=[])  # fmt: skip
    # bf16's kernel reading W12's bytes (a weight of 3/4 the columns): its access pattern's speed
    w3 = cycled(w[:, : 3 * k // 4].contiguous(), True)
    row["bf16_3q_us"] = micros(lambda: skinny_linear(x[:, : 3 * k // 4], w3()))
    for label, base in tiles(name, deep, (m, n, k)):
        for variant in variants:
            cfg = base | VARIANTS[variant]
            xin = xj if cfg.get("JOIN") == 2 else x
            order = "join" if cfg.get("JOIN") == 2 else "natural"
            weights = bare if variant == "noesc" else ps

            def checked(c=cfg, a=xin, o=order, what=f"{name} {label} {variant}"):
                y = w12_linear(a, packed, config=c, x_order=o)
                if not c.get("NO_DECODE"):
                    check(y, ref, what)

            def call(c=cfg, a=xin, g=weights, o=order):
                return w12_linear(a, g(), config=c, x_order=o)

            entry = dict(tile=label, variant=variant, config=cfg)
            row["tiles"].append(timed_entry(entry, checked, call, nbytes))

    def w12_epilogues(**kw):  # an epilogue's reference and w12_linear's call, for _kernel_tiles
        return (w12_linear_reference(x, packed, **kw), lambda: w12_linear(x, ps(), **kw))

    if ws_tiles:  # kernels/w12_ws.py, its input given in pair order (as a producer would write it)
        xp = w12_ws.pair_order(x)

        def ws_run(t, g, **kw):
            return w12_ws.w12_ws_linear(xp, g, t, x_order="pair", **kw)

        _kernel_tiles(row, "ws", ws_tiles, ws_run, (packed, ps, bare), ref, nbytes, w12_epilogues)
    if row_tiles:  # kernels/w12_row.py: one row

        def row_run(t, g, **kw):
            return w12_row.w12_row_linear(x, g, t, **kw)

        _kernel_tiles(row, "row", row_tiles, row_run, (packed, ps, bare), ref, nbytes,
                      w12_epilogues)  # fmt: skip

        # the same kernel's ring on the bf16 weight, beside skinny_linear (bf16_us)
        def bf16_run(t, g, **kw):
            return w12_row.bf16_row_linear(x, g, t, **kw)

        def bf16_epilogues(**kw):  # (reference, skinny_linear's call)
            return (skinny_linear_reference(x, w, **kw), lambda: skinny_linear(x, ws(), **kw))

        _kernel_tiles(row, "row_bf16", ROW_BF16_TILES, bf16_run, (w, ws, None),
                      skinny_linear_reference(x, w), w.nbytes, bf16_epilogues)  # fmt: skip
    if tc_tiles:  # kernels/w12_tc.py, its input given in pair order (as w12_ws's)
        xtc = w12_ws.pair_order(x)

        def tc_run(t, g, **kw):
            return w12_tc.w12_tc_linear(xtc, g, t, x_order="pair", **kw)

        _kernel_tiles(row, "tc", tc_tiles, tc_run, (packed, ps, bare), ref, nbytes, w12_epilogues)
    for variant in variants:
        timed = [t for t in row["tiles"] if t["variant"] == variant and "us" in t]
        if timed:
            row[f"best_{variant}"] = min(timed, key=lambda t: t["us"])
    return row


def _kernel_tiles(
    row: dict, key: str, kernel_tiles: tuple, run, weights: tuple, ref, nbytes: int, epilogues
) -> None:
    """A prototype kernel's tiles (label, tile) into row[key], each checked against `ref` (but
    its bounds, tiles with BOUND) and timed with the weights cycled (`run(tile, weight,
    **epilogue)`; weights: the weight, a getter of cycled copies, and one of copies with the
    escape table emptied or None); then the default tile with the escapes emptied (a bound),
    and where the shape is gate_up or o / down as the forward runs it, SwiGLU or the residual in
    the epilogue beside the baseline's own (`epilogues(**kw)`: the reference and a call of the
    baseline); row["best_<key>"]: the fastest checked tile."""
    weight, cycled_weights, bare = weights
    name = row["shape"]
    row[key] = []
    for label, tile in kernel_tiles:

        def checked(t=tile, what=f"{name} {key} {label}"):
            y = run(t, weight)
            if not t.get("BOUND"):
                check(y, ref, what)

        entry = dict(tile=label, config=tile)
        call = lambda t=tile: run(t, cycled_weights())  # noqa: E731
        row[key].append(timed_entry(entry, checked, call, nbytes))
    if bare is not None:
        row[f"{key}_noesc_us"] = micros(lambda: run({}, bare()))
    kinds = {}
    if name == "gate_up":  # as the forward runs it: SwiGLU in the epilogue
        kinds["swiglu"] = dict(swiglu=True)
    elif name in ("o", "down") and ref.shape[0] == 1:  # the residual in the epilogue
        kinds["residual"] = dict(residual=torch.randn_like(ref))
    for label, kw in kinds.items():
        expected, baseline = epilogues(**kw)

        def checked(kw=kw, expected=expected, what=f"{name} {key} {label}"):
            check(run({}, weight, **kw), expected, what)

        call = lambda kw=kw: run({}, cycled_weights(), **kw)  # noqa: E731
        entry = timed_entry(dict(tile=label), checked, call, nbytes)
        row[f"{key}_{label}_us"] = entry.get("us", entry.get("error"))
        row[f"{key}_baseline_{label}_us"] = micros(baseline)
    timed = [t for t in row[key] if "us" in t and not t["config"].get("BOUND")]
    if timed:
        row[f"best_{key}"] = min(timed, key=lambda t: t["us"])


def table(rows: list[dict], variants: list[str]) -> list[str]:
    """A line a shape: bf16's time (all of K, 3/4 of it), then each variant's best tile (us,
    TB/s of W12 bytes)."""
    for key in ("ws", "row", "row_bf16", "tc"):  # the prototypes' best tiles
        if any(key in r for r in rows):
            variants = [*variants, key]
    lines = [f"{'shape':<8} {'bf16':>6} {'bf16 3/4':>8} " + " ".join(f"{v:>11}" for v in variants)]
    for r in rows:
        cells = []
        for v in variants:
            b = r.get(f"best_{v}")
            cells.append(f"{b['us']:6.2f} {b['tb_s']:4.2f}" if b else f"{'-':>11}")
        lines.append(
            f"{r['shape']:<8} {r['bf16_us']:6.2f} {r['bf16_3q_us']:8.2f} " + " ".join(cells)
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen3-8b", choices=("qwen3-8b", "llama3.1-8b"))
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument("--shapes", default="qkv,o,gate_up,down", help="comma-separated")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated")
    parser.add_argument("--deep", action="store_true", help="DEEP_TILES (gate_up, down)")
    parser.add_argument("--ws", action="store_true", help="kernels/w12_ws.py's WS_TILES too")
    parser.add_argument("--ws-two", action="store_true", help="with --ws: WS_TWO_TILES instead")
    parser.add_argument("--ws-loader", action="store_true", help="with --ws: WS_LOADER_TILES")
    parser.add_argument("--row", action="store_true", help="kernels/w12_row.py's ROW_TILES too")
    parser.add_argument("--tc", action="store_true", help="kernels/w12_tc.py's TC_TILES too")
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated labels: of the prototypes' tiles (--ws, --row, --tc) only these",
    )
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    known = {label for tiles in (WS_TILES, WS_TWO_TILES, WS_LOADER_TILES, ROW_TILES, TC_TILES)
             for label, _ in tiles}  # fmt: skip
    if only - known:
        parser.error(f"--only: no prototype tile {sorted(only - known)}")
    if not torch.cuda.is_available():
        raise SystemExit("w12_join needs CUDA")
    if args.row and args.rows != 1:
        raise SystemExit("--row: kernels/w12_row.py multiplies one row (--rows 1)")
    shapes = layer_shapes(args.model)
    variants = args.variants.split(",")
    rows = []
    print(table([], variants)[0])
    for name in args.shapes.split(","):
        n, k = shapes[name]
        ws = WS_TWO_TILES if args.ws_two else WS_LOADER_TILES if args.ws_loader else WS_TILES
        ws = ws if args.ws else ()
        row = ROW_TILES if args.row else ()
        tc = TC_TILES if args.tc else ()
        if only:
            ws, row, tc = ([t for t in tiles if t[0] in only] for tiles in (ws, row, tc))
        rows.append(bench(args.rows, name, n, k, variants, args.deep, ws, row, tc))
        print("\n".join(table(rows[-1:], variants)[1:]), flush=True)
        save(dict(model=args.model, rows=args.rows, shapes=rows, partial=True), args.out)
    print("\n".join(table(rows, variants)))
    finish(dict(model=args.model, rows=args.rows, shapes=rows, gpu=torch.cuda.get_device_name()),
           args.out)  # fmt: skip


if __name__ == "__main__":
    main()
