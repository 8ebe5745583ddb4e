"""The token-level steps of a fused forward: embedding rows gathered for a block of token ids
(`embed_rows`, `embed_anchor_blocks`), each logits row's greedy argmax (`argmax_rows`), and a
verify step's end, the argmax with the accept and the packed result (`argmax_accept`).

PyTorch's own ran as plain launches between our PDL chain's kernels, and slowly for their
bytes: in run 151's profile of the pipelined speculative loop (Qwen3-8B shape, 1k), two
index_select gathers of 16 embedding rows took 20.6 us a step and three reductions (the
verify's and the drafter's argmax over 151,936 logits, the accept's sum) 24.8 us, each with
idle time around it; the accept and the packing were 6 more launches. Here each is one launch
that joins the chain (launch.pdl). The drafter's input block, its anchor then mask tokens, is
made inside the gather (one launch instead of a fill, a copy and a gather).

The argmax splits each row into chunks of ARGMAX_BLOCK logits, one program a chunk; the last
of a row's programs (common.count_done) reduces their (value, index) pairs, so a row is one
launch. The order is torch.argmax's: the first index of the largest value, a NaN counting as
larger than any number (the first NaN's index). For a verify step the last row of a block to
finish (a second counter) counts the drafts accepted and writes the block's packed row.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from specpilot.kernels import launch, trace
from specpilot.kernels.common import (
    INTERPRETED,
    count_done,
    count_reset,
    pdl_enter,
    trace_mark,
    zeroed_counters,
)

# logits a program of the argmax reads: 75 chunks of a 151,936-token vocabulary, 1,200
# programs for a 16-row verify block
ARGMAX_BLOCK = 2048
EMBED_BLOCK = 1024  # columns a program of the gather copies
# models/fused.py runs its embedding gathers and argmaxes through these kernels (1) or through
# PyTorch's index_select and argmax (0; bench/engine_speed.py --switch kernels.tokens.ON=0)
ON = True
# with ON, the pipelined loop's next step inputs by `next_meta` (1) or by PyTorch (0:
# spec/accept.next_step_meta), to measure it apart (--switch kernels.tokens.NEXT_META=0)
NEXT_META = True
# with ON, the benchmarks' replayed drafts in the pipelined loop by `replay_drafts` (1) or by
# PyTorch's ~12 launches (0): glue a real drafter does not have (--switch
# kernels.tokens.REPLAY=0)
REPLAY = True
_INDEX_LIMIT = 2**31 - 1


@triton.jit
def _embed_kernel(
    ids_ptr, table_ptr, y_ptr, H, V, stride_i, stride_t, stride_y, width, fill_id,
    BLOCK: tl.constexpr, ANCHORS: tl.constexpr, PDL: tl.constexpr = False,
    TRACE: tl.constexpr = 0, trace_ptr=None, clock_ptr=None,
):  # fmt: skip
    """Row `row` of y = table[its token]: ids[row], or with ANCHORS, ids[row // width] for the
    first row of each block of `width` rows and fill_id for the others. A token outside [0, V)
    gives a row of zeros."""
    trace_mark(trace_ptr, clock_ptr, 0, TRACE)
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    pdl_enter(PDL, trace_ptr, clock_ptr, TRACE)
    if ANCHORS:
        token = tl.load(ids_ptr + (row // width) * stride_i).to(tl.int64)
        token = tl.where(row % width == 0, token, fill_id)
    else:
        token = tl.load(ids_ptr + row * stride_i).to(tl.int64)
    cols = chunk * BLOCK + tl.arange(0, BLOCK)
    inside = cols < H
    known = (token >= 0) & (token < V)
    value = tl.load(table_ptr + token * stride_t + cols, mask=inside & known, other=0.0)
    tl.store(y_ptr + row.to(tl.int64) * stride_y + cols, value, mask=inside)
    trace_mark(trace_ptr, clock_ptr, 2, TRACE)


@triton.jit
def _first_max(x, index, ok):
    """(value, index) of the first largest x where ok, torch.argmax's order: a NaN counts as the
    largest (then value NaN and the first NaN's index)."""
    nan = (x != x) & ok
    nan_at = tl.min(tl.where(nan, index, 2147483647), axis=0)
    number = ok & (x == x)
    top = tl.max(tl.where(number, x, float("-inf")), axis=0)
    first = tl.min(tl.where(number & (x == top), index, 2147483647), axis=0)
    has_nan = nan_at < 2147483647
    return tl.where(has_nan, float("nan"), top), tl.where(has_nan, nan_at, first)


@triton.jit
def _argmax_kernel(
    x_ptr, part_v_ptr, part_i_ptr, count_ptr, out_ptr, ids_ptr, packed_ptr, N, M, stride_x,
    stride_ids, stride_packed, CHUNKS: tl.constexpr, CHUNKS_POW2: tl.constexpr,
    BLOCK: tl.constexpr, FENCE: tl.constexpr, ACCEPT: tl.constexpr = False,
    WIDTH: tl.constexpr = 1, WIDTH_POW2: tl.constexpr = 1, PDL: tl.constexpr = False,
    TRACE: tl.constexpr = 0, trace_ptr=None, clock_ptr=None,
):  # fmt: skip
    """out[row] = the index of row's largest of N values (_first_max's order): program (row,
    chunk) finds its chunk's, the row's last program to finish (count_done on the row's
    counter) the row's from the CHUNKS pairs. With ACCEPT, the M rows are verify blocks of
    WIDTH rows and the block's last row to finish packs it (_pack_block)."""
    trace_mark(trace_ptr, clock_ptr, 0, TRACE)
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    pdl_enter(PDL, trace_ptr, clock_ptr, TRACE)
    cols = chunk * BLOCK + tl.arange(0, BLOCK)
    ok = cols < N
    x = tl.load(x_ptr + row.to(tl.int64) * stride_x + cols, mask=ok, other=0.0).to(tl.float32)
    value, index = _first_max(x, cols, ok)
    if CHUNKS == 1:
        tl.store(out_ptr + row, index.to(tl.int64))
        if ACCEPT:
            _pack_block(out_ptr, ids_ptr, packed_ptr, count_ptr + M + row // WIDTH, row // WIDTH,
                        stride_ids, stride_packed, cols, WIDTH, WIDTH_POW2, FENCE)  # fmt: skip
    else:
        tl.store(part_v_ptr + row * CHUNKS + chunk, value)
        tl.store(part_i_ptr + row * CHUNKS + chunk, index)
        if count_done(count_ptr + row, cols, CHUNKS, FENCE):
            at = tl.arange(0, CHUNKS_POW2)
            mine = at < CHUNKS
            values = tl.load(part_v_ptr + row * CHUNKS + at, mask=mine, other=0.0,
                             cache_modifier=".cg")  # fmt: skip
            indices = tl.load(part_i_ptr + row * CHUNKS + at, mask=mine, other=0,
                              cache_modifier=".cg")  # fmt: skip
            _, index = _first_max(values, indices, mine)
            tl.store(out_ptr + row, index.to(tl.int64))
            count_reset(count_ptr + row)
            if ACCEPT:
                _pack_block(out_ptr, ids_ptr, packed_ptr, count_ptr + M + row // WIDTH,
                            row // WIDTH, stride_ids, stride_packed, cols, WIDTH, WIDTH_POW2,
                            FENCE)  # fmt: skip
    trace_mark(trace_ptr, clock_ptr, 2, TRACE)


@triton.jit
def _pack_block(out_ptr, ids_ptr, packed_ptr, count_ptr, block, stride_ids, stride_packed,
                any_tensor, WIDTH: tl.constexpr, WIDTH_POW2: tl.constexpr,
                FENCE: tl.constexpr):  # fmt: skip
    """After a row of verify block `block` has its token in out: the block's last such row
    (count_done on the block's counter) packs it (pack_rows)."""
    if count_done(count_ptr, any_tensor, WIDTH, FENCE):
        pack_rows(out_ptr, ids_ptr, packed_ptr, block, stride_ids, stride_packed, WIDTH,
                  WIDTH_POW2)  # fmt: skip
        count_reset(count_ptr)


@triton.jit
def pack_rows(out_ptr, ids_ptr, packed_ptr, block, stride_ids, stride_packed,
              WIDTH: tl.constexpr, WIDTH_POW2: tl.constexpr):  # fmt: skip
    """packed[block] = (verify block `block`'s ids: anchor, then drafts; the target's token at
    each of its rows, read from out through L2; the drafts accepted: those before the first
    draft j + 1 that differs from the token at row j, spec/accept.accept_greedy's)."""
    j = tl.arange(0, WIDTH_POW2)
    inside = j < WIDTH
    chosen = tl.load(out_ptr + block * WIDTH + j, mask=inside, other=0, cache_modifier=".cg")
    ids = tl.load(ids_ptr + block * stride_ids + j, mask=inside, other=0).to(tl.int64)
    drafts = tl.load(ids_ptr + block * stride_ids + j + 1, mask=j + 1 < WIDTH, other=0)
    miss = (drafts.to(tl.int64) != chosen) | (j + 1 >= WIDTH)
    accepted = tl.min(tl.where(miss, j, WIDTH - 1), axis=0)
    row = packed_ptr + block * stride_packed
    tl.store(row + j, ids, mask=inside)
    tl.store(row + WIDTH + j, chosen, mask=inside)
    tl.store(row + 2 * WIDTH, accepted.to(tl.int64))


def _check_ids(ids: torch.Tensor, table: torch.Tensor) -> None:
    if ids.dtype not in (torch.int32, torch.int64) or ids.device != table.device:
        raise ValueError(
            f"token ids must be int32/int64 on the table's device ({table.device}), got "
            f"{ids.dtype} on {ids.device}"
        )
    if table.dim() != 2 or table.stride(1) != 1:
        raise ValueError(f"the table must be 2-D with unit column stride, got {tuple(table.shape)}")


def _gather(ids: torch.Tensor, table: torch.Tensor, rows: int, anchors: bool, width: int,
            fill_id: int) -> torch.Tensor:  # fmt: skip
    hidden = table.shape[1]
    y = torch.empty(rows, hidden, device=table.device, dtype=table.dtype)
    if rows == 0:
        return y
    grid = (rows, triton.cdiv(hidden, EMBED_BLOCK))
    _embed_kernel[grid](
        ids, table, y, hidden, table.shape[0], ids.stride(0), table.stride(0), y.stride(0),
        width, fill_id, BLOCK=EMBED_BLOCK, ANCHORS=anchors, **launch.pdl(table),
        **trace.arguments(table, "embed", grid[0] * grid[1], bytes=2 * y.nbytes, rows=rows),
    )  # fmt: skip
    return y


def embed_rows(ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """ids [B, T] (or [N]) -> table's rows [B * T, H] (torch.nn.functional.embedding's values;
    an id outside [0, vocab) gives zeros rather than a device assertion)."""
    _check_ids(ids, table)
    flat = ids.reshape(-1)
    return _gather(flat, table, flat.numel(), False, 1, 0)


def embed_anchor_blocks(
    anchors: torch.Tensor, fill_id: int, width: int, table: torch.Tensor
) -> torch.Tensor:
    """anchors [B] -> the rows [B * width, H] of the blocks [anchor, fill_id, ...]: the
    drafter's input block (its mask token after each anchor) and its embedding in one launch."""
    _check_ids(anchors, table)
    if anchors.dim() != 1 or width < 1 or not 0 <= fill_id < table.shape[0]:
        raise ValueError(
            f"anchor blocks want anchors [B], width >= 1 and a fill id in the vocabulary, got "
            f"{tuple(anchors.shape)}, {width}, {fill_id}"
        )
    return _gather(anchors, table, anchors.shape[0] * width, True, width, fill_id)


def argmax_rows(x: torch.Tensor) -> torch.Tensor:
    """x [..., N] -> the index of each row's largest value, [...] int64: torch.argmax(x, -1)
    (the first of equal values; a NaN counts as the largest)."""
    return _argmax(x, None)[0]


def argmax_accept(logits: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A verify step's end in one launch: logits [B, K, N] of the blocks ids [B, K] (anchor,
    then K - 1 drafts) -> (the target's tokens [B, K], argmax_rows's; packed [B, 2K + 1] =
    (ids, tokens, drafts accepted), spec/accept.accept_greedy's count)."""
    if logits.dim() != 3 or ids.shape != logits.shape[:2] or ids.device != logits.device:
        raise ValueError(
            f"argmax_accept wants logits [B, K, N] and ids [B, K] on one device, got "
            f"{tuple(logits.shape)} and {tuple(ids.shape)}"
        )
    if ids.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"block ids must be int32/int64, got {ids.dtype}")
    return _argmax(logits, ids.contiguous())


def _argmax(x: torch.Tensor, ids: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor | None]:
    if x.dtype not in (torch.bfloat16, torch.float16, torch.float32) or x.stride(-1) != 1:
        raise ValueError(f"argmax_rows wants float rows of unit stride, got {x.dtype}")
    n = x.shape[-1]
    if not 0 < n <= _INDEX_LIMIT:
        raise ValueError(f"argmax_rows wants 1 to {_INDEX_LIMIT} values a row, got {n}")
    rows = x.reshape(-1, n)
    m = rows.shape[0]
    out = torch.empty(m, device=x.device, dtype=torch.int64)
    packed = None
    if m == 0:
        return out.view(x.shape[:-1]), packed
    chunks = triton.cdiv(n, ARGMAX_BLOCK)
    part_v = torch.empty(m, chunks, device=x.device, dtype=torch.float32)
    part_i = torch.empty(m, chunks, device=x.device, dtype=torch.int32)
    accept = {}
    blocks = 0
    if ids is not None:
        blocks, width = ids.shape
        packed = torch.empty(blocks, 2 * width + 1, device=x.device, dtype=torch.int64)
        pow2 = triton.next_power_of_2(width)
        accept = dict(ACCEPT=True, WIDTH=width, WIDTH_POW2=pow2)
    counters = zeroed_counters(x.device, m + blocks)
    grid = (m, chunks)
    _argmax_kernel[grid](
        rows, part_v, part_i, counters, out, ids if ids is not None else out,
        packed if packed is not None else out, n, m, rows.stride(0),
        ids.stride(0) if ids is not None else 0, packed.stride(0) if packed is not None else 0,
        CHUNKS=chunks, CHUNKS_POW2=triton.next_power_of_2(chunks), BLOCK=ARGMAX_BLOCK,
        FENCE=not INTERPRETED, **accept, **launch.pdl(x),
        **trace.arguments(x, "argmax", m * chunks, bytes=rows.nbytes, rows=m),
    )  # fmt: skip
    return out.view(x.shape[:-1]), packed


@triton.jit
def _next_meta_kernel(
    packed_ptr, meta_ptr, limit_ptr, out_ptr, stride_packed, stride_meta, WIDTH: tl.constexpr,
    PDL: tl.constexpr = False, TRACE: tl.constexpr = 0, trace_ptr=None, clock_ptr=None,
):  # fmt: skip
    """Row b of the next speculative step's meta from this step's packed result: (start +
    accepted + 1, at most limit[b]; this step's start; the target's token after the accepted
    drafts)."""
    trace_mark(trace_ptr, clock_ptr, 0, TRACE)
    b = tl.program_id(0)
    pdl_enter(PDL, trace_ptr, clock_ptr, TRACE)
    row = packed_ptr + b * stride_packed
    accepted = tl.load(row + 2 * WIDTH)
    bonus = tl.load(row + WIDTH + accepted)
    start = tl.load(meta_ptr + b * stride_meta)
    limit = tl.load(limit_ptr + b).to(tl.int64)
    tl.store(out_ptr + b * 3, tl.minimum(start + accepted + 1, limit))
    tl.store(out_ptr + b * 3 + 1, start)
    tl.store(out_ptr + b * 3 + 2, bonus)
    trace_mark(trace_ptr, clock_ptr, 2, TRACE)


def next_meta(packed: torch.Tensor, meta: torch.Tensor, limits: torch.Tensor) -> torch.Tensor:
    """The pipelined loop's next step inputs [B, 3] = (start + accepted + 1 held at limits,
    start, the target's token after the accepted drafts) from a step's packed [B, 2K + 1] (int64)
    and its meta [B, 3] (int64: start, context start, anchor) in one launch: spec/accept's
    next_step_meta (a gather, two adds, a minimum and a stack)."""
    batch, cols = packed.shape
    if (
        packed.dtype != torch.int64
        or meta.dtype != torch.int64
        or cols % 2 == 0
        or meta.shape != (batch, 3)
        or limits.shape != (batch,)
        or meta.stride(1) != 1
        or packed.stride(1) != 1
    ):
        raise ValueError(
            f"next_meta wants int64 packed [B, 2K + 1], meta [B, 3] and limits [B], got "
            f"{tuple(packed.shape)} {packed.dtype}, {tuple(meta.shape)} {meta.dtype}, "
            f"{tuple(limits.shape)}"
        )
    out = torch.empty(batch, 3, device=meta.device, dtype=torch.int64)
    if batch:
        limits = limits.contiguous()
        _next_meta_kernel[(batch,)](
            packed, meta, limits, out, packed.stride(0), meta.stride(0), WIDTH=cols // 2,
            **launch.pdl(meta), **trace.arguments(meta, "next_meta", batch, bytes=0, rows=batch),
        )  # fmt: skip
    return out


@triton.jit
def _next_decode_kernel(
    tokens_ptr, ids_ptr, pos_ptr, limit_ptr, stride_tokens, stride_ids, stride_pos,
    stride_limit, LAST: tl.constexpr, PDL: tl.constexpr = False, TRACE: tl.constexpr = 0,
    trace_ptr=None, clock_ptr=None,
):  # fmt: skip
    """Row b of the next AR step's inputs, in place: ids[b] = the token at column LAST of
    tokens[b]; positions[b] + 1, at most limit[b]."""
    trace_mark(trace_ptr, clock_ptr, 0, TRACE)
    b = tl.program_id(0)
    pdl_enter(PDL, trace_ptr, clock_ptr, TRACE)
    tl.store(ids_ptr + b * stride_ids, tl.load(tokens_ptr + b * stride_tokens + LAST))
    position = tl.load(pos_ptr + b * stride_pos) + 1
    tl.store(pos_ptr + b * stride_pos, tl.minimum(position, tl.load(limit_ptr + b * stride_limit)))
    trace_mark(trace_ptr, clock_ptr, 2, TRACE)


def next_decode(
    tokens: torch.Tensor, ids: torch.Tensor, positions: torch.Tensor, limits: torch.Tensor
) -> None:
    """The pipelined AR loop's next step inputs written in place in one launch: ids [B, 1] =
    each row's last token of tokens [B, T] (int32 or int64), positions [B, 1] + 1 held at
    limits [B, 1] (int64): spec/accept.next_decode_inputs (a copy, an add and a minimum)."""
    batch = tokens.shape[0]
    shapes = [tuple(t.shape) for t in (ids, positions, limits)]
    if tokens.dim() != 2 or shapes != [(batch, 1)] * 3:
        raise ValueError(
            f"next_decode wants tokens [B, T] and ids, positions, limits [B, 1], got "
            f"{tuple(tokens.shape)}, {shapes}"
        )
    if tokens.dtype not in (torch.int32, torch.int64) or any(
        t.dtype != torch.int64 for t in (ids, positions, limits)
    ):
        raise ValueError("next_decode wants int32 or int64 tokens and int64 ids, positions, limits")
    if batch:
        _next_decode_kernel[(batch,)](
            tokens, ids, positions, limits, tokens.stride(0), ids.stride(0),
            positions.stride(0), limits.stride(0), LAST=(tokens.shape[1] - 1) * tokens.stride(1),
            **launch.pdl(ids), **trace.arguments(ids, "next_decode", batch, bytes=0, rows=batch),
        )  # fmt: skip


@triton.jit
def _replay_kernel(
    table_ptr, table_len_ptr, meta_ptr, prompt_ptr, counts_ptr, out_ptr, L, stride_t,
    stride_meta, vocab, D: tl.constexpr, D_POW2: tl.constexpr, PDL: tl.constexpr = False,
    TRACE: tl.constexpr = 0, trace_ptr=None, clock_ptr=None,
):  # fmt: skip
    """Row b of replayed drafts (spec/replay.replay_drafts, the emitted count taken from the
    step's start: meta[b, 0] - prompt[b] + 1)."""
    trace_mark(trace_ptr, clock_ptr, 0, TRACE)
    b = tl.program_id(0)
    pdl_enter(PDL, trace_ptr, clock_ptr, TRACE)
    emitted = tl.load(meta_ptr + b * stride_meta) - tl.load(prompt_ptr + b) + 1
    j = tl.arange(0, D_POW2)
    index = emitted + j
    clamped = tl.minimum(tl.maximum(index, 0), L - 1)
    known = tl.load(table_ptr + b * stride_t + clamped, mask=j < D, other=0)
    known = tl.where(index < tl.load(table_len_ptr + b), known, 0)
    right = j < tl.load(counts_ptr + b) - 1
    tl.store(out_ptr + b * D + j, tl.where(right, known, (known + 1) % vocab), mask=j < D)
    trace_mark(trace_ptr, clock_ptr, 2, TRACE)


def replay_drafts(
    table: torch.Tensor,
    table_lengths: torch.Tensor,
    meta: torch.Tensor,
    prompt_lengths: torch.Tensor,
    counts: torch.Tensor,
    num_drafts: int,
    vocab: int,
) -> torch.Tensor:
    """spec/replay.replay_drafts in one launch for the pipelined loop (benchmarks' replayed
    proposals: glue that a real drafter does not have, ~12 PyTorch launches a step): drafts
    [B, num_drafts] from the continuations table [B, L] (int64) and their lengths [B], each
    row's emitted count meta[b, 0] - prompt_lengths[b] + 1, and counts [B] (the sampled
    acceptance lengths, on the device)."""
    batch, longest = table.shape
    per_row = (table_lengths, prompt_lengths, counts)  # one value a sequence
    if any(t.dtype != torch.int64 for t in (table, meta, *per_row)):
        raise ValueError("replay_drafts wants int64 tensors")
    if meta.shape != (batch, 3) or any(t.shape != (batch,) for t in per_row):
        raise ValueError(f"replay_drafts wants rows of {batch} sequences")
    out = torch.empty(batch, num_drafts, device=table.device, dtype=torch.int64)
    if batch and num_drafts:
        table = table.contiguous()
        _replay_kernel[(batch,)](
            table, table_lengths.contiguous(), meta, prompt_lengths.contiguous(),
            counts.contiguous(), out, longest, table.stride(0), meta.stride(0), vocab,
            D=num_drafts, D_POW2=triton.next_power_of_2(num_drafts), **launch.pdl(table),
            **trace.arguments(table, "replay", batch, bytes=0, rows=batch),
        )  # fmt: skip
    return out
