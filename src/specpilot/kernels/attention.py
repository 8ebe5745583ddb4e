"""Decode and verify attention over the KV cache: split-K (flash-decoding) with GQA in the kernel.

Queries are B sequences of T consecutive tokens; the token at position p sees cache keys 0..p. One
program takes one KV head of one sequence and one slice of the keys, and handles all of that head's
query heads and tokens at once (GROUP * T query rows), so each key and value is read once per step
from HBM. The keys read stop at the sequence's own last position + 1, read on the device, so CUDA
graphs stay valid while contexts grow. A second kernel merges the slices' partial softmaxes.
The number of slices is fixed per launch shape (grid) and the slice length follows each sequence's
length, so long contexts spread over every SM and short ones waste nothing.

With few query rows (a decode step: GROUP * T <= FUSED_MERGE_MAX_ROWS) there can be no merge launch:
each program publishes its partial, counts itself done on a per-(sequence, KV head) counter, and
the one that finds the others done merges the slices itself (reading the partials from L2, in
split order, so the result does not depend on which program came last) and resets the counter
for the next launch. Verify and draft blocks have 4-16x the rows, which one program would merge
serially: they keep the merge kernel.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from specpilot.kernels import launch, trace
from specpilot.kernels.common import (
    INTERPRETED,
    ahead_arguments,
    count_done,
    count_reset,
    dot,
    l2_prefetch,
    l2_prefetch_regions,
    pair_position,
    pdl_enter,
    trace_mark,
    zeroed_counters,
)

BLOCK_KV = 64
# the most query rows (GROUP * T) whose slices the last split program merges itself; 0: always
# the merge kernel. 0: on the H200 (GPU tests pass) 8 gave the same AR as 0 at the Qwen3-8B shape
# (217.8 tok/s either way, docs/LOG.md run 57); 64 (verify and draft blocks too, run 103) made
# the 16-row forward 4.80 -> 5.16 ms and the draft 1.06 -> 1.10 ms (the last program of each
# head merges 17 slices of 64 rows alone); 8 under pdl "chain" (run 113): AR 0.956x at 1k,
# 0.929x at 8k; rechecked under today's defaults (run 217, the timeline's variants, 1k): the
# one-token forward 4.241 ms against 4.052, the attention 356.6 us a forward against 124.4 +
# 48.4 for split + merge. Its slices taken 16 a step, loads at once (FUSED_MERGE_SLICES, run
# 219): worse still (attention 404.4 us a forward against 274.3 one a step and 125.2 + 48.3;
# paired AR 0.938x): under Nsight Compute (run 218) the fused launch took 13.3 us against 5.6 +
# 3.6, its stalls on the barrier, the fence (ERRBAR) and shared memory: one program a KV head
# merges alone what the merge kernel spreads over 32. Deleted; settled.
# bench/engine_speed.py --merge-rows N measures it.
FUSED_MERGE_MAX_ROWS = 0
# the fewest keys a slice takes (a multiple of BLOCK_KV). The launch has a fixed number of slices
# (num_splits_for, from the cache's capacity, so graphs stay valid); each slice's length follows
# the sequence's length on the device, but not below this, so a short context fills only its
# first slices, the rest store nothing and the merge reads only the filled ones. BLOCK_KV: a
# slice of one key block, as many slices filled as the keys allow (the behaviour before it).
# bench/engine_speed.py --attention-min-keys N measures it.
MIN_SPLIT_KEYS = BLOCK_KV
# the same for launches of more query rows (GROUP * T) than WIDE_ROWS: verify and draft blocks
# (64 rows at the 8B shapes), whose partials grow with the rows (32 KB a slice at 64) and whose
# merge reads every filled slice's; 0: MIN_SPLIT_KEYS. Run 89 measured one minimum for both:
# 256 made verify 2% shorter (within the spread) and decode 2% longer. For wide launches only
# (run 103, one process): 16-row forward 4.782 against 4.799 ms, draft 1.055 against 1.061,
# spec within its spread: nothing to tell, off. 128: the kernel timeline's variants (runs
# 137-138, bench/timeline.py --variants, one process, graphs replayed back to back) at the
# Qwen3-8B shape, 1k: the 16-token forward 4.631 -> 4.583 ms (its merge 173 -> 138 us, the
# split 198 -> 191), the one-token forward unchanged (it takes MIN_SPLIT_KEYS); 192 and 256
# shorter merges but longer splits. bench/engine_speed.py --attention-min-keys-wide N.
WIDE_MIN_SPLIT_KEYS = 128
WIDE_ROWS = 8
# warps a program of the split and merge launches. 4: run 107 (one process, 6 rounds) measured
# 8 warps in verify and draft launches: spec@6.55 0.913x [0.899-0.928] (bench/engine_speed.py
# --attention-warps). With 4 the split kernel runs at 104 registers (one token) and 165 (a
# 16-token block), no spills, the merge at 38-72 (Nsight Compute, run 117; ptxas_audit agrees
# since it compiles with the launches' 16-divisibility; before, it reported 255 registers and
# 28-756 bytes of spills, which the H200's kernels never had). The merge: 1 warp (its row's
# slices summed in each thread's registers, no reduction across warps): runs 138-140 (the
# kernel timeline's variants, Qwen3-8B shape, with MAX_SPLITS 32 and WIDE_MIN_SPLIT_KEYS 128)
# the 16-token forward's merges 178 -> 94 (2 warps) -> 50 us (1 warp) at 1k, 8 warps 369; the
# forwards back to back, 4 warps -> 1: at 1k one token 4.202 -> 4.193 ms, 16 tokens 4.685 ->
# 4.547, draft 1.022 -> 1.001 (W12 "auto" 3.798 / 4.572 / 0.966 -> 3.786 / 4.427 / 0.945); at
# 8k 4.484 / 5.011 / 1.064 -> 4.454 / 4.898 / 1.050; at 32k 5.350 / 5.869 / 1.184 -> 5.337 /
# 5.759 / 1.180. bench/engine_speed.py --attention-warps.
SPLIT_WARPS = {"narrow": 4, "wide": 4}  # launches of at most / more than WIDE_ROWS query rows
MERGE_WARPS = 1
# the split launches' num_stages: how many key blocks the loop's cp.async pipeline holds in
# shared memory (3: Triton's default, what every launch had before it was a switch). Nsight
# Compute (run 117, 1k cache, 16-token block): 165 registers, 115 KB of shared memory, two
# programs an SM, 7.7 us; but at 1k each slice is one 64-key block, one loop step, for which
# the pipeline's buffers and prologue do nothing. ptxas (sm_90, 16 tokens / one token): 1 stage
# 168 / 144 registers, 32 / 22 KB, no cp.async; 2 stages 165 / 107 registers, 80 / 38 KB.
# 3: run 118 (Qwen3-8B shape, one process, 6 rounds) 1 or 2 stages were level at 1k and lost
# 2-3% at 8k, where a slice takes several loop steps (1 stage: AR 0.971x, spec@6.55 0.973x);
# 1 stage in verify and draft launches only, spec@6.55 0.966x at 8k. bench/engine_speed.py
# --attention-stages.
SPLIT_STAGES = {"narrow": 3, "wide": 3}  # launches of at most / more than WIDE_ROWS query rows
# the split and merge programs read the positions (and so their slices' bounds and how many
# slices hold keys) before their PDL wait, while the kernel before them runs, instead of after
# it: one dependent L2 round trip (~0.5-1 us) fewer after the wait in each of the two launches
# a layer. Safe as the K/V prefetch is: the positions are written before the forward, at least
# two kernels earlier, and a kernel launches its dependents only after its own wait; read with
# .cg (from L2, never a stale L1 line). Only with PDL. Off: run 118, level at 1k and 8k (AR
# 0.993x / 1.002x, spec@6.55 1.006x / 1.001x); bench/engine_speed.py
# --attention-early-positions 1.
EARLY_POSITIONS = False
# the most keys of its slice whose keys and values a split program asks L2 for before its PDL
# wait, while the kernel before it (the rope kernel, which writes only the new tokens' keys)
# still runs; 0: none. A hint (Hopper's bulk prefetch), no value changes; the positions it reads
# for the slice's bounds were written at least two kernels earlier (pdl_enter lets a kernel
# launch only once the one before has waited). A slice's first KV_PREFETCH_KEYS keys: at 1k
# keys and 33 slices the whole slice (64 keys, 32 KB a program), at 32k a 64 KB head of each
# 1,024-key slice, 17 MB in all, within the H200's 50 MB L2. 0: run 109 (Qwen3-8B shape, one
# process, 8 rounds) 128 keys AR 1.003x [0.994-1.012] at 1k, 0.995x [0.990-0.999] at 8k, 512
# keys 0.980x at 8k: the early requests gain nothing the kernel waits on and queue ahead of the
# rope kernel's (as l2_ahead's did, run 91). bench/engine_speed.py --attention-kv-prefetch N.
KV_PREFETCH_KEYS = 0
# the query rows a split program takes in launches of more than WIDE_ROWS (verify and draft
# blocks: 16 tokens x 4 query heads a KV head = 64 rows at the 8B shapes), a power of two >= 16;
# 0: all of them in one program, which holds a 64 x 128 fp32 accumulator, its query tile and a
# 64 x 64 score tile. With 16 rows a program, four programs share each slice's keys (read once
# from HBM, then from L2). 0: run 113 (Qwen3-8B shape, one process, 6 rounds) 16 rows spec@6.55
# 0.973x at 1k and 0.892x at 8k, 32 rows 0.985x / 0.935x: more programs and more traffic for
# a kernel that waits on latency (the spills that motivated it were the audit's error, run
# 117). bench/engine_speed.py --attention-q-rows N.
WIDE_Q_ROWS = 0
# the keys a split program's loop takes a step (a power of two dividing BLOCK_KV, which stays
# the slices' grain). BLOCK_KV: run 113, 32 keys spec@6.55 0.994x at 1k, 0.975x at 8k (alone),
# 0.965x / 0.890x with 16 query rows. bench/engine_speed.py --attention-kv-step N.
# ptxas for sm_90, 4 warps, no spills in any case (bench/ptxas_audit.py --attention-variants,
# an 8k cache; bench/results/2026-12-01-ptxas-divisible-cpu/), registers / shared KB, causal:
#   64 query rows a program: 165 / 115 at 64 keys a step, 152 / 66 at 32
#   32 rows: 168 / 78 at 64 keys, 128 / 43 at 32; 16 rows: 104 / 72 at 64 keys, 85 / 38 at 32
SPLIT_KV_STEP = BLOCK_KV
# the query rows a merge program takes; 0: one (_merge_kernel: every filled slice's partial of
# the row loaded at once: 72 registers, 7 programs an SM at 33 slices, which caches of more
# than 2,048 tokens get; 40 and 12 at 17-32), else that many rows (at most the launch's) walked
# slice by slice in order (the in-kernel merge's loop, _merge_rows; 16 rows 62 registers and 8
# programs an SM, 4 rows 30 and 16; ptxas with the launches' divisibility). 0: run 113, 16
# rows AR 0.965x and spec@6.55 0.969x at 1k, 0.959x / 0.950x at 8k (the slices walked one
# after another). bench/engine_speed.py --attention-merge-program-rows N.
MERGE_PROGRAM_ROWS = 0
# the most key slices a launch has (num_splits_for); 0: no cap beyond its two programs an SM
# (33 slices at the 8B shapes' 8 KV heads on 132 SMs, whose merge loads a tile of 64 slices,
# the next power of two, for each query row: 255 registers and 88 bytes of spills a thread on
# one warp, against 162 and none for 32). 32: with the merge on 1 warp (MERGE_WARPS), the
# merges at 8k 81 -> 52 us (one token) and 202 -> 112 (16 tokens) while the splits take 3-5%
# longer; without the cap the 1-warp merge lost at 8k (one-token forward 4.49 -> 4.65 ms, run
# 139). bench/engine_speed.py --attention-max-splits N.
MAX_SPLITS = 32
# the slices a one-row merge program loads at a time (a power of two; 0: all at once, a tile of
# the next power of two of the launch's slices: 64 at the 8B shapes' 33, 256 registers a thread
# for the partials on one warp). 0: run 140 (33 slices, 1 warp) chunks of 8, 16 or 32 slices
# (a loop of dependent loads) made the merges longer than MAX_SPLITS 32's one tile: 16-token
# forward at 8k 4.898 (one tile) against 4.960 (32) and 5.14 ms (16). bench/engine_speed.py
# --attention-merge-chunk N.
MERGE_SPLIT_CHUNK = 0
# the most key slices of launches of more query rows than WIDE_ROWS (verify and draft blocks),
# below num_splits_for's (and MAX_SPLITS); 0: the same as one-token launches. MAX_SPLITS 16 for
# every launch made the 16-token forward 1% shorter at 1k and the one-token forward 1.9% longer
# (run 138). Run 143 (cap 8 / 16): level at 1k, verify +1.9% / -0.2% at 8k and +10.7% / +6.5%
# at 32k (fewer, longer slices): off. bench/engine_speed.py --switch
# kernels.attention.WIDE_MAX_SPLITS=N.
WIDE_MAX_SPLITS = 0
# slots a (sequence, KV head)'s partials take beyond its slices: its partials start SLOTS =
# slices + SLOT_PAD slots apart (a slot: BLOCK_Q rows of HEAD_DIM fp32), so that 32 slices do
# not put every head's partials a power of two apart (1 MB at 16 tokens). 0: none. Whether
# that stride is why MAX_SPLITS 32 lengthened the 8k and 32k splits 1.5-2.5% (run 140): it is
# not (run 143, SLOT_PAD 1: level at 1k, 8k and 32k). bench/engine_speed.py --switch
# kernels.attention.SLOT_PAD=N.
SLOT_PAD = 0
# l2_ahead "o" (EngineConfig.l2_ahead): when the split programs ask L2 for the output projection's
# weights. 0: first, before their PDL wait (run 91: the one-token forward +0.05 ms, the requests
# queued ahead of the attention's own loads); 1: last, after their partials are stored, only
# the programs whose slices hold keys (then HBM idles through the merge and the o multiply's
# ramp, ~2-3 us a layer, while the requests no longer delay the attention's loads).
# launch.O_AHEAD_BYTES bounds the bytes. 0: run 164 (kernel timeline, bf16 and W12 "auto", 1k)
# the o multiply took 22-43 us less a forward, but the merge's gap after the split launch grew
# with the bytes (0.44 -> 3.19 us with all of o, 1.00 with 8 MB: a split program evidently ends
# only once its requests have landed): all
# of o +1.9% one row, +0.2% 16 rows; 8 MB level (+0.07% / -0.15%; W12 -0.12% / -0.38%); the
# first, early requests ("o" alone) +1.8% / +1.2% (the attention +75 us). Each program's
# requests from a side stream instead: launch.SIDE_AHEAD_BYTES. bench/engine_speed.py
# --l2-ahead o --switch kernels.attention.LATE_AHEAD=1.
LATE_AHEAD = 0


def _power_of_two(n: int) -> bool:
    return n > 0 and not n & (n - 1)


# the values the launches take of the switches above that have rules (checked), with the rule
SWITCH_RULES = {
    "KV_PREFETCH_KEYS": (lambda n: n >= 0 and n % BLOCK_KV == 0,
                         f"a non-negative multiple of {BLOCK_KV}"),
    "WIDE_Q_ROWS": (lambda n: n == 0 or (_power_of_two(n) and n >= 16),
                    "0 or a power of two >= 16"),
    "SPLIT_KV_STEP": (lambda n: _power_of_two(n) and 16 <= n <= BLOCK_KV,
                      f"a power of two from 16 to {BLOCK_KV}"),
    "MERGE_PROGRAM_ROWS": (lambda n: n == 0 or _power_of_two(n), "0 or a power of two"),
    "EARLY_POSITIONS": (lambda n: n in (0, 1), "0 or 1"),
    "MAX_SPLITS": (lambda n: n >= 0, "0 (no cap) or a positive number of slices"),
    "MERGE_SPLIT_CHUNK": (lambda n: n == 0 or _power_of_two(n), "0 or a power of two"),
    "WIDE_MAX_SPLITS": (lambda n: n >= 0, "0 (no cap) or a positive number of slices"),
    "SLOT_PAD": (lambda n: n >= 0, "a non-negative number of slots"),
    "LATE_AHEAD": (lambda n: n in (0, 1), "0 or 1"),
}  # fmt: skip


def checked(name: str, value: int) -> int:
    """`value` for the switch `name` of SWITCH_RULES, or a ValueError that states the rule (the
    launchers check the module's values with it, bench/engine_speed.py its options)."""
    ok, rule = SWITCH_RULES[name]
    if not ok(value):
        raise ValueError(f"{name} must be {rule}, got {value}")
    return value


def kv_step() -> int:
    """SPLIT_KV_STEP, checked: the keys a split program's loop takes a step."""
    return checked("SPLIT_KV_STEP", SPLIT_KV_STEP)


def split_query_rows(rows: int, block_q: int, fused_merge: bool) -> int:
    """The query rows a split program takes, of a launch's `rows` (padded to block_q): all of
    them, or WIDE_Q_ROWS in launches of more than WIDE_ROWS rows (not with the in-kernel
    merge, where the last of a KV head's split programs merges all of its rows)."""
    if rows > WIDE_ROWS and checked("WIDE_Q_ROWS", WIDE_Q_ROWS) and not fused_merge:
        return min(block_q, WIDE_Q_ROWS)
    return block_q


def kv_prefetch_arguments(k_cache: torch.Tensor, v_cache: torch.Tensor) -> dict:
    """The split launch's KV_AHEAD and cache_len: KV_PREFETCH_KEYS where the keys can be asked
    for (a CUDA bf16 cache whose keys are contiguous rows, 16-byte aligned; never under the
    interpreter), else none."""
    keys = checked("KV_PREFETCH_KEYS", KV_PREFETCH_KEYS)
    ok = (
        keys > 0
        and not INTERPRETED
        and k_cache.is_cuda
        and k_cache.dtype == torch.bfloat16
        and k_cache.stride(2) == k_cache.shape[3]
        and k_cache.data_ptr() % 16 == 0
        and v_cache.data_ptr() % 16 == 0
    )
    return {"KV_AHEAD": keys if ok else 0, "cache_len": k_cache.shape[2]}


def min_split_keys(rows: int) -> int:
    """The fewest keys a slice takes in a launch of `rows` query rows (GROUP * T)."""
    if rows > WIDE_ROWS and WIDE_MIN_SPLIT_KEYS:
        return WIDE_MIN_SPLIT_KEYS
    return MIN_SPLIT_KEYS


@triton.jit
def _span(pos_ptr, b, T, NUM_SPLITS: tl.constexpr, BLOCK_KV: tl.constexpr,
          MIN_KEYS: tl.constexpr, MOD: tl.constexpr):  # fmt: skip
    """Sequence b's keys (its last position + 1), the keys of each slice (a multiple of
    BLOCK_KV, at least MIN_KEYS) and the number of slices that hold any (positions loaded with
    cache modifier MOD)."""
    kv_end = tl.load(pos_ptr + b * T + T - 1, cache_modifier=MOD) + 1
    per_split = tl.cdiv(tl.cdiv(kv_end, NUM_SPLITS), BLOCK_KV) * BLOCK_KV
    per_split = tl.maximum(per_split, MIN_KEYS)
    return kv_end, per_split, tl.cdiv(kv_end, per_split)


@triton.jit
def _prefetch_slice(k_ptr, v_ptr, pos_ptr, base, b, split, T, cache_len, HEAD_DIM: tl.constexpr,
                    NUM_SPLITS: tl.constexpr, BLOCK_KV: tl.constexpr, MIN_KEYS: tl.constexpr,
                    KEYS: tl.constexpr):  # fmt: skip
    """Ask L2 for the first KEYS keys and values of this program's slice (rows of HEAD_DIM
    contiguous elements from `base`, the cache's key stride HEAD_DIM), kept inside the cache's
    cache_len rows."""
    kv_end, per_split, _ = _span(pos_ptr, b, T, NUM_SPLITS, BLOCK_KV, MIN_KEYS, "")
    lo = tl.minimum(split * per_split, cache_len)
    keys = tl.minimum(tl.minimum(per_split, KEYS), tl.minimum(kv_end, cache_len) - lo)
    if keys > 0:
        row_bytes: tl.constexpr = HEAD_DIM * 2  # bf16 (the launcher checks)
        l2_prefetch(k_ptr + base + lo * HEAD_DIM, keys * row_bytes)
        l2_prefetch(v_ptr + base + lo * HEAD_DIM, keys * row_bytes)


@triton.jit
def _merge_rows(part_ptr, stats_ptr, out_ptr, bh, rows, row_ok, T, filled, HEADS: tl.constexpr,
                GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, SLOTS: tl.constexpr,
                BLOCK_Q: tl.constexpr, PAIR: tl.constexpr = False):  # fmt: skip
    """out for query rows `rows` of (sequence, KV head) bh: the partial softmaxes of its first
    `filled` splits combined, split by split in order, read through L2 (other programs of this
    launch wrote them). PAIR: out's columns in kernels/w12_ws.pair_order (`_out_column`)."""
    kv_heads = HEADS // GROUP
    b = bh // kv_heads
    kvh = bh % kv_heads
    t = rows // GROUP
    d = tl.arange(0, HEAD_DIM)
    mod: tl.constexpr = ".cg"
    m_max = tl.full(rows.shape, float("-inf"), dtype=tl.float32)
    for s in range(filled):
        slot = (bh * SLOTS + s) * BLOCK_Q + rows
        m = tl.load(stats_ptr + slot * 2, mask=row_ok, other=float("-inf"), cache_modifier=mod)
        m_max = tl.maximum(m_max, m)
    m_max = tl.where(row_ok, m_max, 0.0)  # rows past the block: no NaN from -inf - -inf
    num = tl.zeros([rows.shape[0], HEAD_DIM], dtype=tl.float32)
    den = tl.zeros(rows.shape, dtype=tl.float32)
    for s in range(filled):
        slot = (bh * SLOTS + s) * BLOCK_Q + rows
        m = tl.load(stats_ptr + slot * 2, mask=row_ok, other=float("-inf"), cache_modifier=mod)
        l_s = tl.load(stats_ptr + slot * 2 + 1, mask=row_ok, other=0.0, cache_modifier=mod)
        w = tl.where(m == float("-inf"), 0.0, tl.exp2(m - m_max))
        part = tl.load(
            part_ptr + slot[:, None] * HEAD_DIM + d[None, :],
            mask=row_ok[:, None],
            other=0.0,
            cache_modifier=mod,
        )
        num += part * w[:, None]
        den += l_s * w
    out = num / tl.where(row_ok, den, 1.0)[:, None]
    head = kvh * GROUP + rows % GROUP
    col = _out_column(head[:, None] * HEAD_DIM + d[None, :], PAIR)
    dst = out_ptr + ((b * T + t) * HEADS * HEAD_DIM)[:, None] + col
    tl.store(dst, out.to(out_ptr.dtype.element_ty), mask=row_ok[:, None])


@triton.jit
def _out_column(col, PAIR: tl.constexpr):
    """Where an output column lies in a row: col, or with PAIR its place in w12_ws.pair_order
    (the input a kernels/w12_tc multiply reads: the o projection's)."""
    if PAIR:
        return pair_position(col)
    return col


@triton.jit
def _split_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    pos_ptr,
    part_ptr,
    stats_ptr,
    stride_kb,
    stride_kh,
    stride_kl,
    T,
    scale_log2,
    HEADS: tl.constexpr,
    GROUP: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    NUM_SPLITS: tl.constexpr,
    SLOTS: tl.constexpr,
    BLOCK_Q: tl.constexpr,
    BLOCK_KV: tl.constexpr,
    F32_DOT: tl.constexpr,
    CAUSAL: tl.constexpr,
    MIN_KEYS: tl.constexpr = 64,
    PDL: tl.constexpr = False,
    out_ptr=None,
    count_ptr=None,
    MERGE_ROWS: tl.constexpr = 0,
    FENCE: tl.constexpr = False,
    AHEAD: tl.constexpr = 0,
    ahead0_ptr=None,
    ahead0_bytes=0,
    ahead1_ptr=None,
    ahead1_bytes=0,
    KV_AHEAD: tl.constexpr = 0,
    cache_len=0,
    Q_ROWS: tl.constexpr = 0,
    KV_STEP: tl.constexpr = 0,
    EARLY_POS: tl.constexpr = False,
    TRACE: tl.constexpr = 0,
    trace_ptr=None,
    clock_ptr=None,
    LATE_AHEAD: tl.constexpr = False,
    PAIR: tl.constexpr = False,
):
    trace_mark(trace_ptr, clock_ptr, 0, TRACE)
    tl.static_assert(Q_ROWS >= 16, "Q_ROWS: the query rows a program takes (split_query_rows)")
    tl.static_assert(KV_STEP >= 16 and BLOCK_KV % KV_STEP == 0, "KV_STEP: keys a loop step")
    bh = tl.program_id(0)
    split = tl.program_id(1)
    kv_heads = HEADS // GROUP
    b = bh // kv_heads
    kvh = bh % kv_heads
    # weights (never written): asked for before the wait, while the last kernel runs (or, with
    # LATE_AHEAD, at the end)
    if not LATE_AHEAD:
        l2_prefetch_regions(AHEAD, ahead0_ptr, ahead0_bytes, ahead1_ptr, ahead1_bytes,
                            bh * NUM_SPLITS + split, tl.num_programs(0) * NUM_SPLITS)  # fmt: skip
    if KV_AHEAD > 0:  # this slice's first keys and values too (KV_PREFETCH_KEYS)
        _prefetch_slice(k_ptr, v_ptr, pos_ptr, b * stride_kb + kvh * stride_kh, b, split, T,
                        cache_len, HEAD_DIM, NUM_SPLITS, BLOCK_KV, MIN_KEYS, KV_AHEAD)  # fmt: skip
    if not EARLY_POS:
        pdl_enter(PDL, trace_ptr, clock_ptr, TRACE)
    # this program's Q_ROWS of the launch's BLOCK_Q query rows (row = t * GROUP + g)
    rows = tl.program_id(2) * Q_ROWS + tl.arange(0, Q_ROWS)
    t = rows // GROUP
    g = rows % GROUP
    row_ok = t < T
    d = tl.arange(0, HEAD_DIM)
    # EARLY_POS: the positions before the wait (EARLY_POSITIONS), from L2
    MOD: tl.constexpr = ".cg" if EARLY_POS else ""
    q_pos = tl.load(pos_ptr + b * T + t, mask=row_ok, other=-1, cache_modifier=MOD)
    kv_end, per_split, filled = _span(pos_ptr, b, T, NUM_SPLITS, BLOCK_KV, MIN_KEYS, MOD)
    if EARLY_POS:
        pdl_enter(PDL, trace_ptr, clock_ptr, TRACE)
    lo = split * per_split
    hi = tl.minimum(lo + per_split, kv_end)
    q_rows = (b * T + t) * HEADS + kvh * GROUP + g
    q = tl.load(q_ptr + q_rows[:, None] * HEAD_DIM + d[None, :], mask=row_ok[:, None], other=0.0)
    m_i = tl.full([Q_ROWS], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([Q_ROWS], dtype=tl.float32)
    acc = tl.zeros([Q_ROWS, HEAD_DIM], dtype=tl.float32)
    base = b * stride_kb + kvh * stride_kh
    for start in range(lo, hi, KV_STEP):
        keys = start + tl.arange(0, KV_STEP)
        k_ok = keys < hi
        k = tl.load(
            k_ptr + base + keys[:, None] * stride_kl + d[None, :], mask=k_ok[:, None], other=0.0
        )
        s = dot(q, tl.trans(k), F32_DOT) * scale_log2
        if CAUSAL:
            visible = (keys[None, :] <= q_pos[:, None]) & k_ok[None, :]
        else:
            visible = (q_pos[:, None] >= 0) & k_ok[None, :]
        s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(
            v_ptr + base + keys[:, None] * stride_kl + d[None, :], mask=k_ok[:, None], other=0.0
        )
        acc = acc * alpha[:, None] + dot(p.to(v.dtype), v, F32_DOT)
        m_i = m_new
    slot = (bh * SLOTS + split) * BLOCK_Q + rows
    if split < filled:  # the merge reads only the filled slices
        tl.store(part_ptr + slot[:, None] * HEAD_DIM + d[None, :], acc)
        tl.store(stats_ptr + slot * 2, m_i)
        tl.store(stats_ptr + slot * 2 + 1, l_i)
        if LATE_AHEAD:  # shares among the programs that hold keys, once their loads are done
            l2_prefetch_regions(AHEAD, ahead0_ptr, ahead0_bytes, ahead1_ptr, ahead1_bytes,
                                bh * filled + split, tl.num_programs(0) * filled)  # fmt: skip
    if MERGE_ROWS > 0:  # publish, then count; the last split merges (reading through L2)
        tl.static_assert(Q_ROWS == BLOCK_Q, "the in-kernel merge wants one program a slice")
        if count_done(count_ptr + bh, rows, NUM_SPLITS, FENCE):
            mrows = tl.arange(0, MERGE_ROWS)
            _merge_rows(part_ptr, stats_ptr, out_ptr, bh, mrows, mrows < GROUP * T, T, filled,
                        HEADS, GROUP, HEAD_DIM, SLOTS, BLOCK_Q, PAIR)  # fmt: skip
            count_reset(count_ptr + bh)
    trace_mark(trace_ptr, clock_ptr, 2, TRACE)


@triton.jit
def _merge_chunk(part_ptr, stats_ptr, bh, row, c0, filled, m_max, SLOTS: tl.constexpr,
                 BLOCK_Q: tl.constexpr, HEAD_DIM: tl.constexpr, SLICES: tl.constexpr):  # fmt: skip
    """Query row `row` of (sequence, KV head) bh: the weighted sum of the partials of slices c0
    .. c0 + SLICES - 1 (those below `filled`), and of their softmax denominators, against the
    row's maximum m_max over all slices."""
    sp = c0 + tl.arange(0, SLICES)
    sp_ok = sp < filled
    slot = (bh * SLOTS + sp) * BLOCK_Q + row
    m = tl.load(stats_ptr + slot * 2, mask=sp_ok, other=float("-inf"))
    l_s = tl.load(stats_ptr + slot * 2 + 1, mask=sp_ok, other=0.0)
    w = tl.where(m == float("-inf"), 0.0, tl.exp2(m - m_max))
    d = tl.arange(0, HEAD_DIM)
    part = tl.load(part_ptr + slot[:, None] * HEAD_DIM + d[None, :], mask=sp_ok[:, None], other=0.0)
    return tl.sum(part * w[:, None], axis=0), tl.sum(l_s * w, axis=0)


@triton.jit
def _merge_kernel(
    part_ptr,
    stats_ptr,
    out_ptr,
    pos_ptr,
    T,
    HEADS: tl.constexpr,
    GROUP: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    NUM_SPLITS: tl.constexpr,
    SLOTS: tl.constexpr,
    SPLITS_P2: tl.constexpr,
    BLOCK_Q: tl.constexpr,
    BLOCK_KV: tl.constexpr,
    MIN_KEYS: tl.constexpr = 64,
    PDL: tl.constexpr = False,
    MERGE_BLOCK: tl.constexpr = 0,
    EARLY_POS: tl.constexpr = False,
    TRACE: tl.constexpr = 0,
    trace_ptr=None,
    clock_ptr=None,
    CHUNK: tl.constexpr = 0,
    EARLY_TRIGGER: tl.constexpr = False,
    PAIR: tl.constexpr = False,
):
    """The filled slices' partials of (sequence, KV head) combined into out: one query row a
    program, every slice loaded at once (MERGE_BLOCK 0, CHUNK 0) or CHUNK slices at a time in
    order (MERGE_SPLIT_CHUNK), or MERGE_BLOCK rows a program walking the slices in order as the
    in-kernel merge does (MERGE_PROGRAM_ROWS). EARLY_TRIGGER: the next kernel may launch before
    this one's wait (launch.O_EARLY)."""
    trace_mark(trace_ptr, clock_ptr, 0, TRACE)
    if not EARLY_POS:
        pdl_enter(PDL, trace_ptr, clock_ptr, TRACE, EARLY=EARLY_TRIGGER)
    bh = tl.program_id(0)
    kv_heads = HEADS // GROUP
    b = bh // kv_heads
    kvh = bh % kv_heads
    # EARLY_POS: the positions before the wait (EARLY_POSITIONS), from L2
    _, _, filled = _span(pos_ptr, b, T, NUM_SPLITS, BLOCK_KV, MIN_KEYS,
                         ".cg" if EARLY_POS else "")  # fmt: skip
    if EARLY_POS:
        pdl_enter(PDL, trace_ptr, clock_ptr, TRACE, EARLY=EARLY_TRIGGER)
    if MERGE_BLOCK > 0:
        rows = tl.program_id(1) * MERGE_BLOCK + tl.arange(0, MERGE_BLOCK)
        _merge_rows(part_ptr, stats_ptr, out_ptr, bh, rows, rows < GROUP * T, T, filled, HEADS,
                    GROUP, HEAD_DIM, SLOTS, BLOCK_Q, PAIR)  # fmt: skip
        trace_mark(trace_ptr, clock_ptr, 2, TRACE)
        return
    row = tl.program_id(1)  # row = t * GROUP + g
    t = row // GROUP
    if t >= T:
        trace_mark(trace_ptr, clock_ptr, 2, TRACE)
        return
    sp = tl.arange(0, SPLITS_P2)
    slot = (bh * SLOTS + sp) * BLOCK_Q + row
    m_max = tl.max(tl.load(stats_ptr + slot * 2, mask=sp < filled, other=float("-inf")), axis=0)
    d = tl.arange(0, HEAD_DIM)
    if CHUNK == 0:  # every filled slice's partial loaded at once
        num, den = _merge_chunk(part_ptr, stats_ptr, bh, row, 0, filled, m_max, SLOTS,
                                BLOCK_Q, HEAD_DIM, SPLITS_P2)  # fmt: skip
    else:  # CHUNK slices at a time, in order
        num = tl.zeros([HEAD_DIM], dtype=tl.float32)
        den = tl.sum(tl.zeros([1], dtype=tl.float32), axis=0)
        for c0 in range(0, filled, CHUNK):
            n_c, d_c = _merge_chunk(part_ptr, stats_ptr, bh, row, c0, filled, m_max, SLOTS,
                                    BLOCK_Q, HEAD_DIM, CHUNK)  # fmt: skip
            num += n_c
            den += d_c
    out = num / den
    head = kvh * GROUP + row % GROUP
    col = _out_column(head * HEAD_DIM + d, PAIR)
    tl.store(out_ptr + (b * T + t) * HEADS * HEAD_DIM + col, out.to(out_ptr.dtype.element_ty))
    trace_mark(trace_ptr, clock_ptr, 2, TRACE)


def merge_chunk(num_splits: int) -> int:
    """The slices a one-row merge program loads at a time (_merge_kernel's CHUNK): 0 (all at
    once, a tile of the next power of two of num_splits) or MERGE_SPLIT_CHUNK, where it is
    fewer."""
    chunk = checked("MERGE_SPLIT_CHUNK", MERGE_SPLIT_CHUNK)
    return chunk if chunk and chunk < triton.next_power_of_2(num_splits) else 0


def merge_program_rows(rows: int) -> int:
    """The query rows a merge program takes in a launch of `rows` (_merge_kernel's MERGE_BLOCK): 0
    (one a program, the slices combined at once), or MERGE_PROGRAM_ROWS, at most the launch's
    rows rounded up to a power of two."""
    block = checked("MERGE_PROGRAM_ROWS", MERGE_PROGRAM_ROWS)
    return min(block, triton.next_power_of_2(rows)) if block else 0


def num_splits_for(batch: int, kv_heads: int, max_len: int, num_sms: int = 132) -> int:
    """Enough key slices to give every SM about two programs, no more than the keys allow (nor
    MAX_SPLITS, where set)."""
    want = max(1, (2 * num_sms) // (batch * kv_heads))
    cap = checked("MAX_SPLITS", MAX_SPLITS)
    want = min(want, cap) if cap else want
    return max(1, min(want, triton.cdiv(max_len, BLOCK_KV)))


def decode_attention(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    positions: torch.Tensor,
    num_splits: int,
    causal: bool = True,
    ahead: tuple[torch.Tensor, ...] = (),
    pair: bool = False,
    w12_o: bool = False,
) -> torch.Tensor:
    """q [B*T, heads, D] at positions [B, T] (consecutive per row), k/v_cache [B, kv_heads, L, D]
    (one layer, already holding these tokens' keys) -> [B*T, heads * D]; pair: its columns in
    kernels/w12_ws.pair_order (heads * D a multiple of 256), for an o projection on w12_tc;
    w12_o: the output projection after it is W12 (launch.O_EARLY 2).

    causal: the token at position p sees keys 0..p; otherwise every token of a row sees keys
    0..(its row's last position), as a DFlash block does (context plus the whole block).
    ahead: bytes (common.ahead_arguments) that the split programs ask L2 for, in equal shares,
    while they run: the weights read next."""
    batch, t = positions.shape
    _, kv_heads, length, head_dim = k_cache.shape
    heads = q.shape[1]
    if q.shape != (batch * t, heads, head_dim) or not q.is_contiguous():
        raise ValueError(
            f"q {tuple(q.shape)} must be a contiguous [{batch * t}, heads, {head_dim}]"
        )
    if heads % kv_heads or k_cache.shape[0] != batch or v_cache.stride() != k_cache.stride():
        raise ValueError(f"cache {tuple(k_cache.shape)} does not fit {heads} query heads")
    if k_cache.stride(3) != 1 or head_dim & (head_dim - 1) or head_dim < 16:
        raise ValueError("head_dim must be a power of two >= 16, contiguous in the cache")
    if pair and (heads * head_dim) % 256:
        raise ValueError("attention output in pair order wants heads * D a multiple of 256")
    regions = ahead_arguments(ahead)
    group = heads // kv_heads
    block_q = max(16, triton.next_power_of_2(group * t))
    wide_max = checked("WIDE_MAX_SPLITS", WIDE_MAX_SPLITS)
    if group * t > WIDE_ROWS and wide_max:
        num_splits = min(num_splits, wide_max)
    slots = num_splits + checked("SLOT_PAD", SLOT_PAD)  # a (sequence, KV head)'s partials
    pos = positions.contiguous()
    part = torch.empty(
        batch * kv_heads * slots * block_q, head_dim, device=q.device, dtype=torch.float32
    )
    stats = torch.empty(batch * kv_heads * slots * block_q, 2, device=q.device, dtype=torch.float32)
    out = torch.empty(batch * t, heads * head_dim, device=q.device, dtype=q.dtype)
    min_keys = min_split_keys(group * t)  # the split and the merge launch must agree
    merge_rows = triton.next_power_of_2(group * t)
    fused_merge = group * t <= FUSED_MERGE_MAX_ROWS
    counters = zeroed_counters(q.device, batch * kv_heads) if fused_merge else stats
    q_rows = split_query_rows(group * t, block_q, fused_merge)
    early = bool(checked("EARLY_POSITIONS", int(EARLY_POSITIONS)))  # the split and merge agree
    width = "wide" if group * t > WIDE_ROWS else "narrow"  # SPLIT_WARPS / SPLIT_STAGES
    _split_kernel[(batch * kv_heads, num_splits, block_q // q_rows)](
        q,
        k_cache,
        v_cache,
        pos,
        part,
        stats,
        k_cache.stride(0),
        k_cache.stride(1),
        k_cache.stride(2),
        t,
        head_dim**-0.5 * math.log2(math.e),
        HEADS=heads,
        GROUP=group,
        HEAD_DIM=head_dim,
        NUM_SPLITS=num_splits,
        SLOTS=slots,
        BLOCK_Q=block_q,
        BLOCK_KV=BLOCK_KV,
        F32_DOT=INTERPRETED,
        CAUSAL=causal,
        MIN_KEYS=min_keys,
        **launch.pdl(q),
        out_ptr=out,
        count_ptr=counters,
        MERGE_ROWS=merge_rows if fused_merge else 0,
        FENCE=fused_merge and not INTERPRETED,
        **regions,
        **kv_prefetch_arguments(k_cache, v_cache),
        Q_ROWS=q_rows,
        KV_STEP=kv_step(),
        EARLY_POS=early,
        **trace.arguments(
            q,
            "attention",
            batch * kv_heads * num_splits * (block_q // q_rows),
            rows=batch * t,
            splits=num_splits,
        ),
        num_warps=SPLIT_WARPS[width],
        num_stages=SPLIT_STAGES[width],
        LATE_AHEAD=bool(regions.get("AHEAD")) and bool(checked("LATE_AHEAD", LATE_AHEAD)),
        PAIR=pair,
    )
    if fused_merge:
        return out
    block = merge_program_rows(group * t)  # 0: one row a program
    grid = (batch * kv_heads, triton.cdiv(group * t, block) if block else group * t)
    _merge_kernel[grid](
        part,
        stats,
        out,
        pos,
        t,
        HEADS=heads,
        GROUP=group,
        HEAD_DIM=head_dim,
        NUM_SPLITS=num_splits,
        SLOTS=slots,
        SPLITS_P2=triton.next_power_of_2(num_splits),
        BLOCK_Q=block_q,
        BLOCK_KV=BLOCK_KV,
        MIN_KEYS=min_keys,
        **launch.pdl_early(out, launch.early_trigger(out, w12_o)),
        MERGE_BLOCK=block,
        EARLY_POS=early,
        CHUNK=merge_chunk(num_splits),
        PAIR=pair,
        **trace.arguments(out, "merge", grid[0] * grid[1], rows=batch * t),
        num_warps=MERGE_WARPS,
    )
    return out


def decode_attention_reference(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    positions: torch.Tensor,
    num_splits: int = 1,
    causal: bool = True,
) -> torch.Tensor:
    batch, t = positions.shape
    heads, head_dim = q.shape[1], q.shape[2]
    kv_len = int(positions.max()) + 1
    k, v = k_cache[:, :, :kv_len], v_cache[:, :, :kv_len]
    last = positions if causal else positions[:, -1:].expand(-1, t)
    mask = torch.arange(kv_len, device=q.device)[None, None, :] <= last[:, :, None]
    qh = q.view(batch, t, heads, head_dim).transpose(1, 2)
    out = F.scaled_dot_product_attention(qh, k, v, attn_mask=mask.unsqueeze(1), enable_gqa=True)
    return out.transpose(1, 2).reshape(batch * t, heads * head_dim)
