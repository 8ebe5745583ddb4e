"""How the engine's Triton kernels are launched on the GPU: two process-wide switches that the
Generator sets from its EngineConfig (`configure`), read by every launcher.

- Programmatic dependent launch (PDL, Hopper and later): a kernel launched with it may start while
  the kernel before it in the stream is still finishing. Its programs wait for the previous one
  to complete (`gdc_wait`) before they read anything it wrote or write anything at all, so the
  order of effects is that of a plain launch, and only then let the next kernel launch
  (`gdc_launch_dependents`), so that at most one kernel is resident ahead of the one running.
  A Qwen3-8B decode forward is ~250 dependent launches, most a few microseconds; with plain
  launches each boundary drains one grid before the next one is scheduled.
- Weight prefetch (the skinny multiply), which needs no wait since the weights never change
  during a forward: "tile" loads the first weight tile before the wait, then each step the next
  tile while it computes with the last; "l2" asks for each program's whole slab of weight rows
  in L2 with one bulk prefetch (Hopper), so that the programs resident early (PDL) stream their
  weights during the previous kernel's tail. Both lost on the H200 (runs 49-50: AR 177-187
  against 206-212 tok/s): off by default.
- L2 ahead (`l2_ahead`): a kernel that reads little from HBM asks L2 for the weights that a
  later kernel will read, so that they stream in while HBM would idle: "o", each layer's
  attention split programs ask for its output projection (the attention between the q|k|v and
  o multiplies is ~8 us at a 1k context, about the o weight's 34 MB at 4.2 TB/s); "all", also
  the RMSNorm and SwiGLU kernels for the first rows (HEAD_BYTES) of the multiply after them.
  Hopper's bulk prefetch; a hint, no values change. At the Qwen3-8B shape both modes made the
  one-token forward slower (run 91: the early requests queue ahead of the attention's and the
  multiply's own): off by default.

PDL has seven modes: "off", "all", "decode", which is on only inside a target forward of one
token row (`forward_rows`, set by models/fused.FusedTarget), "small", decode's and, outside
one-row forwards, PDL for every kernel but the multiplies' launches, "kernels", that rule
in every forward (one-row ones too), and "chain", small's but with a one-row multiply
launched plainly where it directly follows a multiply; "waves" (level with "chain", run 111),
PDL everywhere but for a multiply right after a multiply or one whose grid is under
PDL_MIN_WAVES programs an SM. EngineConfig.pdl="auto"
picks one per target (`resolve_pdl`): on the H200 PDL shortened the 8B one-token forward and
lengthened its 16-token verify when every kernel used it (runs 50-52: "decode" won), and
"small" then shortened the verify and the draft by 2-4% with the one-token forward unchanged
(runs 93-94). "kernels" alone is level with "small" (runs 103-104), but under it a one-row
multiply may follow a multiply without the slowdown that "small" showed (run 102: without the
norm and SwiGLU kernels the one-token forward 0.27 ms longer under "small", 0.13 ms shorter
under "kernels", run 103), so the SwiGLU epilogue at every row count runs under it (models/
fused.SWIGLU_EPILOGUE_MIN_ROWS; runs 104-105). "chain" keeps "kernels"' rule outside one-row
forwards and gives the one-row forward small's PDL back where no multiply follows a multiply
(run 107, one process, 6 interleaved rounds: AR 1.023x [1.008-1.040] over "kernels"; its
speculative step runs the same launches): "chain" is the 8B default. Since run 133 (kernel
timeline) only a multiply after one on element-wise tiles is launched plainly. Since run 145
the multiplies of wider forwards take PDL too under "kernels", "chain" and "small" (WIDE_PDL,
with one-wave grids padded to one program an SM: ONE_WAVE_SHARED), but a grid of more than
one wave right after a multiply: verify -3.1%, draft -3.0% at the Qwen3-8B shape. At the
SmolLM2-135M shape, where every kernel lasts a few microseconds, "all" shortened the whole
speculative step (runs 60, 62).
The settings are read when a kernel is launched, so a CUDA graph keeps the ones it was captured
with; the last Generator built sets them.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

import torch

from specpilot.config import L2_AHEAD_MODES
from specpilot.config import WEIGHT_PREFETCH_MODES as PREFETCH_MODES
from specpilot.kernels import interpreted

LAUNCH_PDL_MODES = ("off", "decode", "all", "small", "kernels", "chain", "waves")  # "auto" first
# pdl="auto": "all" below this many bytes of target weights, "chain" from it on. Set between the
# two sizes measured (SmolLM2-135M: 0.27 GB, "all" wins; Qwen3-8B: 15 GB, "kernels" wins).
PDL_ALL_BELOW_BYTES = 1 << 30
_SETTINGS: dict = {"pdl": "off", "prefetch": "off", "ahead": "off"}
# l2_ahead "all": the bytes of a multiply's first rows that the norm or SwiGLU kernel before it
# asks L2 for: about what HBM delivers in such a kernel's ~2 us at ~4 TB/s
HEAD_BYTES = 8 << 20
# the most bytes of the output projection's weight (its first rows; of each W12 plane) that
# l2_ahead "o" asks for; 0: all of it. Run 164 (with attention.LATE_AHEAD, back to back): 8 MB
# the o multiply -28 us a one-row forward and -23 a 16-row one, but the split launch seems to
# end only once its programs' requests have landed (the merge's gap 0.44 -> 1.00 us): level
# (4.146 -> 4.149 ms, 4.381 -> 4.375); 16 MB and all of it lose. bench/engine_speed.py
# --switch kernels.launch.O_AHEAD_BYTES=N.
O_AHEAD_BYTES = 0
# the bytes of each layer's output projection weight (its first rows; of each W12 plane) that a
# target forward of more than one row (verify; SIDE_AHEAD_ONE_ROW: also one-row ones) asks L2
# for from a kernel on a side stream, launched as the layer's
# q|k|v multiply ends (models/fused.FusedTarget._layers), so that HBM, idle while the rope,
# attention and merge kernels wait on latency, fetches what the o multiply reads next; joined
# at the forward's end, so no kernel of the layer waits for the requests to land (in-line,
# after the split programs' own loads, the split launch evidently ended only once they had:
# run 164, the merge's gap 0.44 -> 1.00 us at 8 MB, 3.19 at all 34 MB). 0: off. Run 165
# (back to back, 8 MB / 16 MB / all): verify -0.2% bf16 (its o -22 us, the attention +9: the
# requests queue with its loads), -0.45% W12 "auto"; the one-row forward +0.9% (the attention
# +20 us and the o +15: the side kernels' launches among the PDL chain's).
# bench/engine_speed.py --switch kernels.launch.SIDE_AHEAD_BYTES=N.
SIDE_AHEAD_BYTES = 0
# ... in one-row forwards too (run 165: those lost; forwards of more rows gained a little)
SIDE_AHEAD_ONE_ROW = 0
_FORWARD_ROWS: list[int] = []  # token rows of the target forwards being launched, innermost last
# what launch.pdl was last asked about ("chain", "waves"): a multiply, on element-wise tiles,
# letting the next kernel launch late or early (O_EARLY), and whether the launch before it did
# so early (prefetch_mode's "after_early")
_LAST_LAUNCH = {"multiply": False, "elementwise": False, "late": False, "early": False,
                "after_early": False}  # fmt: skip
# In one-row forwards under "chain", the attention's merge lets the next kernel (the output
# projection o) launch first thing, before its own wait (EARLY in common.pdl_enter), so that
# o's programs are resident while the attention runs, and o, a bf16 multiply, asks for its
# program's rows in L2 before its wait (PREFETCH 2): HBM idles ~6 us a layer while the rope,
# attention and merge wait on latency (docs/LOG.md runs 102, 164-165), and o's weights
# fetched then made o 22-43 us faster a forward (run 164). 0: off. Run 174 (kernel timeline,
# one process, 1k): o's programs then launched early (100%, waiting 4.25 us) but o took no
# less, and the merge took 1.8 us longer a layer: the one-row forward +1.5% bf16 (4.209 against
# 4.147 ms back to back), +1.3% W12 "auto". 2: only where o is W12 (kernels/w12_row's
# one-row loader asks for o's first stages while the attention runs). Run 322 (H100, Qwen3-8B's
# W12 decode graph, every matrix W12, back to back): 1 4.358 ms against 4.388 / 4.403 without.
# On (2) since run 322. bench/engine_speed.py --switch kernels.launch.O_EARLY=N.
O_EARLY = 2
# WIDE_EARLY (bits; 0: off): in target forwards of more than one row (verify) under "kernels",
# "chain" or "small", the short kernels between two multiplies let the next kernel launch before
# their own wait (EARLY in common.pdl_enter): 1 the attention's merge (before o), 2 the RMSNorm
# (before gate|up and q|k|v), 4 the split sum (before that norm). The multiply after them then
# launches while they still wait or run (two kernels ahead where 2 and 4 are both on), and its
# programs become resident as soon as an SM has room for them: kernels/w12_tc.py's loader asks
# for its first STAGES stages of weights (constants) before its own wait, so the weights of the
# multiply stream while the short kernels wait on latency. Run 318 (H100, the W12 verify graph,
# traced): a 16-row w12_tc launch after a short kernel enters ~0.6 us after that kernel's exit
# and its first stage lands 2.7-5 us later (q|k|v 17.7 us exit to exit against a 12.7 bound, o
# 12.3 against 8.4, gate|up 57.1 against 50.7). Run 319 (the same graph, back to back, one
# process): 7 5.082 ms against 5.107 / 5.135 (q|k|v 17.7 -> 13.9 us, o 12.3 -> 10.5, gate|up
# 57.1 -> 52.5; the norm 1.9 -> 3.7 and o's split sum 2.8 -> 5.7: their loads queue behind the
# early weights), 6 (no merge) 5.166; with w12_linear.SPLIT_SUM_BLOCK 256 4.886 against 4.985
# for that alone; the bf16 verify level (5.590 against 5.594 / 5.598). Run 320: 5 (no norm)
# 4.914 against 7's 4.877, 0 5.099. Run 321: end to end, W12 spec@6.55 over bf16 1.135x with
# it (and SPLIT_SUM_BLOCK 128) against 1.059x before run 319. On (7) since run 319.
# bench/engine_speed.py --switch kernels.launch.WIDE_EARLY=0 turns it off.
WIDE_EARLY = 7
# pdl="waves": a multiply's grid of at least this many programs per SM is launched with PDL
# (between the 16-row o and down of the Qwen3-8B shape, 0.97 waves, and their tiles with half
# the weight rows, 1.94: bench/h200/half16.json; bench/engine_speed.py --pdl-min-waves)
PDL_MIN_WAVES = 1.5
# "kernels" and "chain" launched every multiply plainly in forwards of more than one row (run 50;
# run 133: under "all" the 16-row verify forward took 4.69 -> 5.55 ms, most of it the down
# multiply behind gate|up, 27.2 -> 48.5 us, while q|k|v behind an RMSNorm kept its 14.1 us and
# lost its 1.35 us gap). Run 144 (kernel timeline, one process) found why: a grid launched early
# is placed where the kernels before leave room, several programs an SM, and a grid of one wave
# (the 16-row q|k|v, o and down: 96-128 programs) then runs unevenly. Asking for 120 KB of
# shared memory a program (ONE_WAVE_SHARED, unused: ask_shared) leaves room for one of its
# programs an SM, as a plain launch on an idle GPU places them. WIDE_PDL 1 launches the
# one-wave multiplies of such forwards with PDL, 2 also the larger grids but one right after a
# multiply (run 144: W12's split-K down behind its gate|up +293 us with PDL). At the Qwen3-8B
# shape, 1k, back to back: bf16 verify 4.546 -> 4.436 ms under 2 with the padding (4.467
# under 1; 5.394 under 2 without it, 4.550 under 1), draft 1.000 -> 0.977; W12 verify 4.436 ->
# 4.371 under 1 (its down plain). Token forcing inside the graphs passed (runs 144-146).
WIDE_PDL = 2
ONE_WAVE_SHARED = 120 << 10
MAX_SHARED = 227 << 10  # Hopper's shared memory a program can ask for
# EVEN_SHARED: a multiply of more than one wave that the rules launch plainly because it directly
# follows a multiply (the one-row down behind an element-wise gate|up under "chain", run 133:
# W12's 22.9 -> 29.1 us with PDL; the split-K W12 down behind its 16-row gate|up, run 144: +293
# us) is launched with PDL instead, asking for the shared memory with which at most
# ceil(programs / SMs) of its programs fit an SM (even_shared): the spread of a plain launch on
# an idle GPU. 1 (default): in one-row forwards only; 2: in wider ones too; 0: never. Run 148
# (Qwen3-8B shape, 1k, back to back, one process): under 2, W12 "auto" decode 3.823 -> 3.791 ms
# (-0.8%; its one-row gaps 184 -> 148 us) but verify 4.366 -> 4.481 (+2.6%); bf16 level (its
# one-row gate|up is a tensor-core tile, so its down already took PDL).
EVEN_SHARED = 1
# The norm hand-off (models/fused.NORM_HANDOFF_MAX_ROWS) puts a multiply right after the one
# that hands it the norm (gate|up after o, q|k|v after down). In one-row forwards under "chain"
# such a multiply behind an element-wise tile is launched plainly: with EVEN_SHARED's early,
# padded launch its programs' shared memory kept the multiply before off the SMs (run 156: the
# one-row down 24.3 -> 37.3 us, the forward +10%). LATE_TRIGGER 1: a multiply that hands a
# norm on lets the next kernel launch at the end of each of its programs instead of after its
# PDL wait, and the handed multiply after it is launched with PDL, unpadded: its launch
# overlaps the tail of the one before without taking room from it. 0: run 158 (Qwen3-8B shape,
# 1k, paired, pipelined, 5 rounds) AR 0.999x [0.999-1.000], spec@6.55 0.992x [0.989-0.997]; back
# to back one row 4.087 -> 4.096 ms, 16 rows 4.324 -> 4.334.
LATE_TRIGGER = 0
# HANDED_PDL 1: such a handed multiply behind an element-wise tile in a one-row forward is
# launched with PDL after all, unpadded (its own occupancy: 8 programs an SM for the one-row
# q|k|v), instead of plainly; 0: plainly (the one-row decode's gaps 148 -> 188 us with the
# hand-off, run 158). 0: run 162 (the kernel timeline, one process) the one-row forward 4.146
# -> 4.974 ms back to back (+20%: the early gate|up 47.5 -> 55 us a layer, the down after it
# 24.8 -> 31.9), paired AR 0.839x; the 16-row forwards are untouched.
HANDED_PDL = 0
RESERVED_SHARED = 1 << 10  # what each program of an SM90 kernel holds beside its own
SWITCH_RULES = {
    "WIDE_PDL": (lambda n: n in (0, 1, 2), "0, 1 or 2"),
    "ONE_WAVE_SHARED": (lambda n: 0 <= n <= MAX_SHARED, f"0 to {MAX_SHARED} bytes"),
    "EVEN_SHARED": (lambda n: n in (0, 1, 2), "0, 1 or 2"),
    "LATE_TRIGGER": (lambda n: n in (0, 1), "0 or 1"),
    "HANDED_PDL": (lambda n: n in (0, 1), "0 or 1"),
    "O_EARLY": (lambda n: n in (0, 1, 2), "0, 1 or 2 (W12 o only)"),
    "WIDE_EARLY": (lambda n: 0 <= n <= 7, "0 to 7 (bits: 1 merge, 2 norm, 4 split sum)"),
    "SIDE_AHEAD_ONE_ROW": (lambda n: n in (0, 1), "0 or 1"),
    "O_AHEAD_BYTES": (lambda n: n >= 0, "a non-negative number of bytes (0: all)"),
    "SIDE_AHEAD_BYTES": (lambda n: n >= 0, "a non-negative number of bytes (0: off)"),
}


def resolve_pdl(mode: str, weight_bytes: int) -> str:
    """EngineConfig.pdl for a target of `weight_bytes`: "auto" becomes "all" for small targets
    (launch-bound) and "chain" for the rest; other modes stay."""
    if mode != "auto":
        return mode
    return "all" if weight_bytes < PDL_ALL_BELOW_BYTES else "chain"


def configure(pdl: str, prefetch: str, ahead: str = "off") -> None:
    """Switch programmatic dependent launch (one of LAUNCH_PDL_MODES), the skinny multiply's
    weight prefetch (one of PREFETCH_MODES) and the weights asked for ahead in L2 (one of
    L2_AHEAD_MODES)."""
    if pdl not in LAUNCH_PDL_MODES:
        raise ValueError(f"pdl must be one of {LAUNCH_PDL_MODES}, got {pdl!r}")
    if prefetch not in PREFETCH_MODES:
        raise ValueError(f"prefetch must be one of {PREFETCH_MODES}, got {prefetch!r}")
    if ahead not in L2_AHEAD_MODES:
        raise ValueError(f"ahead must be one of {L2_AHEAD_MODES}, got {ahead!r}")
    _SETTINGS.update(pdl=pdl, prefetch=prefetch, ahead=ahead)


def settings() -> dict:
    return dict(_SETTINGS)


@contextlib.contextmanager
def forward_rows(rows: int) -> Iterator[None]:
    """The kernels launched inside belong to a target forward of `rows` token rows (what the
    "decode" PDL mode looks at)."""
    _FORWARD_ROWS.append(rows)
    try:
        yield
    finally:
        _FORWARD_ROWS.pop()


def _one_row_forward() -> bool:
    """The kernels launched now belong to a target forward of one token row (forward_rows)."""
    return _FORWARD_ROWS[-1:] == [1]


def pdl_wanted() -> bool:
    """Whether the PDL mode asks for it here: "all"; "decode" and "small" inside a one-row
    forward (launch.pdl says what "small" does outside one)."""
    mode = _SETTINGS["pdl"]
    return mode == "all" or (mode in ("decode", "small") and _one_row_forward())


@functools.cache
def _hopper_or_later(index: int) -> bool:
    return torch.cuda.get_device_capability(index)[0] >= 9


def _on_hopper(t: torch.Tensor) -> bool:
    """t on a CUDA device of compute capability 9 or later, kernels compiled (not interpreted):
    where griddepcontrol and bulk prefetches exist."""
    return t.is_cuda and not interpreted() and _hopper_or_later(t.device.index or 0)


# True inside kernels/emulate.gluon(): Gluon launchers then take CPU tensors, which the emulator
# runs (gluon_device); set and reset by that context alone
GLUON_EMULATED = False


def gluon_device(t: torch.Tensor) -> bool:
    """Whether a Gluon launcher can run on t: a CUDA tensor, or any under kernels/emulate."""
    return t.is_cuda or GLUON_EMULATED


def gluon_routes(t: torch.Tensor) -> bool:
    """Whether the engine may route t's multiplies to the Gluon kernels (their switches on):
    compiled on a Hopper GPU, or a CPU tensor under kernels/emulate (tests of the routes)."""
    return _on_hopper(t) or (GLUON_EMULATED and not t.is_cuda)


@functools.cache
def _sm_count(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def pdl(
    t: torch.Tensor,
    multiply: bool = False,
    programs: int = 0,
    elementwise: bool = False,
    handed: bool = False,
    late: bool = False,
    early: bool = False,
) -> dict[str, bool]:
    """The launch keyword (`launch_pdl`) and kernel constant (`PDL`) for a kernel on t's device:
    on where asked for, on a CUDA device that has it (never under the interpreter). "small"
    outside one-row forwards: every kernel waits and lets the next one launch (PDL), but a
    `multiply` is launched plainly, after the kernel before it has completed, so that no
    waiting program of its grid holds an SM slot (run 50: the 16-row tiles lost with PDL);
    "kernels": the same in every forward; "chain": small's rule, but in one-row forwards a
    multiply that directly follows a multiply on `elementwise` tiles (the SwiGLU epilogue's
    gate|up, then down) is launched plainly (run 102's slow multiply-after-multiply under PDL:
    W12's down 22.9 -> 29.1 us in run 133's timeline; after bf16's tensor-core gate|up tile it
    took 24.6 us either way, and PDL cut its gap 1.39 -> 0.47 us); "waves", in every
    forward, every kernel with PDL but a multiply that directly follows a multiply or whose
    grid (`programs`) is under PDL_MIN_WAVES programs an SM (bench/pdl_pairs.py's guess: a grid
    of about one wave launched early sits unevenly on the SMs the kernel before has left).
    Under "kernels", "chain" and "small", WIDE_PDL (on by default since run 145) launches
    most of the multiplies of wider forwards with PDL after all (wide_pdl), padded by
    `multiply`'s SHARED to one program an SM where their grid fits one wave; EVEN_SHARED
    (1, the default: one-row forwards; 2: wider ones too) also launches those right after a
    multiply, spread by even_shared. Called once a launch, in launch order
    (what "chain", "waves" and WIDE_PDL count on). `handed`: the multiply takes a norm handed
    on by the one before it; `late`: this multiply lets the next kernel launch only at its
    programs' ends (LATE_TRIGGER); `early`: this kernel lets the next one launch before its own
    wait (early_trigger)."""
    after_multiply, _LAST_LAUNCH["multiply"] = _LAST_LAUNCH["multiply"], multiply
    after_elementwise = _LAST_LAUNCH["elementwise"]
    _LAST_LAUNCH["elementwise"] = multiply and elementwise
    after_late, _LAST_LAUNCH["late"] = _LAST_LAUNCH["late"], late
    _LAST_LAUNCH["after_early"], _LAST_LAUNCH["early"] = _LAST_LAUNCH["early"], early
    if not _on_hopper(t):
        return {"PDL": False, "launch_pdl": False}
    mode = _SETTINGS["pdl"]
    one_row = _one_row_forward()
    if handed and after_late and mode in ("kernels", "chain", "small"):
        return {"PDL": True, "launch_pdl": True}
    if mode == "waves":
        waves = programs / _sm_count(t.device.index or 0)
        plain = multiply and (after_multiply or waves < PDL_MIN_WAVES)
        return {"PDL": True, "launch_pdl": not plain}
    if mode == "chain" and one_row:
        behind_elementwise = multiply and after_elementwise
        early = EVEN_SHARED >= 1 if not handed else HANDED_PDL >= 1
        return {"PDL": True, "launch_pdl": not behind_elementwise or early}
    if mode in ("kernels", "chain") or (mode == "small" and not one_row):
        wide = not one_row and wide_pdl(t, programs, after_multiply)
        return {"PDL": True, "launch_pdl": not multiply or wide}
    on = pdl_wanted()
    return {"PDL": on, "launch_pdl": on}


def wide_pdl(t: torch.Tensor, programs: int, after_multiply: bool) -> bool:
    """Whether WIDE_PDL launches a multiply of `programs` programs with PDL in a forward of more
    than one row under "kernels", "chain" or "small"."""
    if one_wave(t, programs):
        return WIDE_PDL >= 1
    return WIDE_PDL == 2 and (EVEN_SHARED == 2 or not after_multiply)


def one_wave(t: torch.Tensor, programs: int) -> bool:
    """A grid of `programs` fits one wave of t's device: at most one program an SM."""
    return 0 < programs <= _sm_count(t.device.index or 0)


def padded_shared(
    t: torch.Tensor, launched: dict, programs: int, after: dict, handed: bool = False
) -> int:
    """The shared memory (bytes, 0: the kernel's own) that a multiply launched with `launched`
    (launch.pdl's answer) after the launch that `after` describes (launch.pdl's record of the
    one before) asks for, under "kernels", "chain" or "small" (whose rules WIDE_PDL and
    EVEN_SHARED extend), never more than the device allows a program: in a forward of more
    than one row where WIDE_PDL launched it with PDL and its grid fits one wave,
    ONE_WAVE_SHARED; where EVEN_SHARED launched it with PDL right after a multiply (on
    element-wise tiles in one-row forwards) and its grid is larger, even_shared's."""
    if _SETTINGS["pdl"] not in ("kernels", "chain", "small") or not launched["launch_pdl"]:
        return 0
    index = t.device.index or 0
    one_row = _one_row_forward()
    if (after["late"] or handed) and one_row:  # LATE_TRIGGER's, HANDED_PDL's: not spread
        return 0
    if one_wave(t, programs):
        padded = ONE_WAVE_SHARED if WIDE_PDL and not one_row else 0
    else:
        behind = after["elementwise"] if one_row else after["multiply"]
        level = 1 if one_row else 2
        padded = even_shared(index, programs) if EVEN_SHARED >= level and behind else 0
    return min(padded, _shared_optin(index))


def even_shared(index: int, programs: int) -> int:
    """The shared memory a program asks for so that at most ceil(programs / SMs) of a grid's
    programs fit an SM of device `index` (0 where the device does not say its SM's)."""
    most = -(-programs // _sm_count(index))
    return max(_shared_per_sm(index) // most - RESERVED_SHARED, 0)


@functools.cache
def _shared_optin(index: int) -> int:
    return torch.cuda.get_device_properties(index).shared_memory_per_block_optin


@functools.cache
def _shared_per_sm(index: int) -> int:
    props = torch.cuda.get_device_properties(index)
    return getattr(props, "shared_memory_per_multiprocessor", 0)


def multiply(
    t: torch.Tensor, programs: int, elementwise: bool, handed: bool = False, late: bool = False
) -> dict:
    """A multiply's launch keywords: launch.pdl's, and SHARED, the shared memory (bytes) that
    padded_shared has it ask for (a kernel constant, so that it compiles apart; the launcher
    passes it to ask_shared after the launch); `handed`, `late`: launch.pdl's."""
    after = dict(_LAST_LAUNCH)
    kw = dict(programs=programs, elementwise=elementwise, handed=handed, late=late)
    launched = pdl(t, multiply=True, **kw)
    return launched | {"SHARED": padded_shared(t, launched, programs, after, handed)}


def ask_shared(kernel, nbytes: int) -> None:
    """Every later launch of Triton's compiled `kernel` asks for at least `nbytes` of shared
    memory (none of which it uses): its module loaded again with that much allowed, and the
    size the launcher passes raised. The launch that compiled it asked for its own. Triton's
    launch metadata as 3.x's NVIDIA backend packs it, (warps, CTAs, shared bytes), or nothing
    is changed (a warning, once): the launches stay correct, only unpadded."""
    from triton.runtime.driver import driver

    if not nbytes:
        return
    if not 0 < nbytes <= MAX_SHARED:
        raise ValueError(f"shared memory a program must be 1 to {MAX_SHARED} bytes, got {nbytes}")
    packed = getattr(kernel, "packed_metadata", None)
    if not (isinstance(packed, tuple) and len(packed) == 3 and all(type(v) is int for v in packed)):
        _warn_unpadded(type(kernel).__name__)
        return
    if packed[2] >= nbytes:
        return
    kernel.run  # noqa: B018 - loads the kernel's handles (Triton does so on first use)
    device = driver.active.get_current_device()
    loaded = driver.active.utils.load_binary(kernel.name, kernel.kernel, nbytes, device)
    kernel.module, kernel.function = loaded[:2]
    kernel.packed_metadata = (*packed[:2], nbytes)


@functools.cache
def _warn_unpadded(kind: str) -> None:
    import warnings

    warnings.warn(
        f"launch.ask_shared: this Triton's launch metadata ({kind}) is not (warps, CTAs, "
        "shared bytes); multiplies launched with PDL stay unpadded (set launch.WIDE_PDL = 0 "
        "if they run slower)",
        RuntimeWarning,
        stacklevel=3,
    )


def early_trigger(t: torch.Tensor, w12_o: bool = False) -> bool:
    """Whether the attention's merge launched now on t's device lets the next kernel launch
    before its own wait (O_EARLY: one-row forwards under "chain", on Hopper, every o or, at 2,
    a W12 o (`w12_o`) only; WIDE_EARLY's bit 1: wider target forwards)."""
    wanted = O_EARLY == 1 or (O_EARLY == 2 and w12_o)
    one_row = wanted and _one_row_forward() and _SETTINGS["pdl"] == "chain"
    return (one_row and _on_hopper(t)) or wide_early(t, 1)


def pdl_early(t: torch.Tensor, early: bool) -> dict[str, bool]:
    """`pdl`'s keywords for a kernel that lets the next one launch before its own wait where
    `early` (its EARLY_TRIGGER constant, common.pdl_enter's EARLY: the merge, the norm, the
    split sum), that constant among them, so that the launch's record and the kernel agree."""
    return pdl(t, early=early) | {"EARLY_TRIGGER": early}


def wide_early(t: torch.Tensor, bit: int) -> bool:
    """Whether the kernel of WIDE_EARLY's `bit` (1 merge, 2 norm, 4 split sum) launched now on
    t's device lets the next kernel launch before its own wait: in a target forward of more
    than one row, under "kernels", "chain" or "small", on Hopper."""
    wide = _FORWARD_ROWS[-1:] != [] and _FORWARD_ROWS[-1] > 1
    modes = ("kernels", "chain", "small")
    return bool(WIDE_EARLY & bit) and wide and _SETTINGS["pdl"] in modes and _on_hopper(t)


def prefetch_mode(weight: torch.Tensor) -> int:
    """The skinny multiply's PREFETCH constant for this weight (called after its launch.multiply):
    0 none, 1 the first tile before the wait and each next tile one step ahead (any device:
    plain Triton), 2 the program's rows into L2 in one bulk prefetch (CUDA, sm_90+, rows
    contiguous and 16-byte aligned); 2 also right after an early_trigger launch (O_EARLY)."""
    mode = "l2" if _LAST_LAUNCH["after_early"] else _SETTINGS["prefetch"]
    if mode != "l2":
        return 1 if mode == "tile" else 0
    row_bytes = weight.shape[1] * weight.element_size()
    ok = (
        _on_hopper(weight)
        and weight.stride(0) == weight.shape[1]
        and row_bytes % 16 == 0
        and weight.data_ptr() % 16 == 0
    )
    return 2 if ok else 0


def l2_ahead(where: str, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The bytes of `tensors` (a weight, or a W12 weight's planes) as uint8 views for a kernel to
    ask L2 for ahead of the multiply that reads them: `where` "o" (the attention, for the
    whole output projection: l2_ahead "o" or "all") or "head" (a norm or SwiGLU kernel, for
    the first rows, about HEAD_BYTES, of the multiply after it: "all"); on a CUDA device with
    the bulk prefetch, each tensor contiguous, 16-byte aligned and a multiple of 16 bytes;
    else none."""
    mode = _SETTINGS["ahead"]
    if not (mode == "all" or mode == where):
        return ()
    return _first_bytes(HEAD_BYTES if where == "head" else O_AHEAD_BYTES, tensors)


def side_ahead(*tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """SIDE_AHEAD_BYTES of `tensors` (a weight, or a W12 weight's planes) as uint8 views for
    the side stream's prefetch kernel (elementwise.prefetch_l2), where it can ask for them (see
    l2_ahead); else none. Not in one-row forwards unless SIDE_AHEAD_ONE_ROW."""
    if not SIDE_AHEAD_BYTES or (_one_row_forward() and not SIDE_AHEAD_ONE_ROW):
        return ()
    return _first_bytes(SIDE_AHEAD_BYTES, tensors)


def _first_bytes(limit: int, tensors: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    """The same first rows of each tensor, about `limit` bytes in all (0: all of them), as
    uint8 views where the bulk prefetch can take them; else none."""
    if limit:
        rows = max(1, limit // sum(t[:1].nbytes for t in tensors))
        tensors = tuple(t[:rows] for t in tensors)
    ok = all(
        _on_hopper(t) and t.is_contiguous() and t.data_ptr() % 16 == 0 and t.nbytes % 16 == 0
        for t in tensors
    )
    return tuple(t.reshape(-1).view(torch.uint8) for t in tensors) if ok else ()
