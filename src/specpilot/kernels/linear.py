"""Skinny matrix multiply for decode, verify and draft forwards: y = x @ W^T with M <= 64 rows.

Batch-1 decoding reads every weight once per step, so these multiplies are bound by memory
bandwidth; the kernel streams each weight tile once and folds the small element-wise steps around
it into the same pass, which removes a launch (and a round trip of the activations) each:
- `norm_weight`: RMSNorm of x in the prologue (each program recomputes the row statistics; the
  rows are a few KB and sit in L2);
- `glu=True`: x is [M, 2 * K] = [gate | up] and the input is silu(gate) * up (SwiGLU);
- `residual`: y = residual + x @ W^T (the decoder's skip connection) in the epilogue.
With SPLIT_K > 1 (tensor-core tiles; for shapes with too few tiles to fill the GPU) the programs
of a tile each take a slice of K and store fp32 partial sums; the last of them to finish (a
counter per tile: common.count_done) adds the slices in order, so the result does not depend on
which came last, and runs the epilogue: no second launch. No measured tile uses it: on the
H200 the 16-row sweep with SPLIT_K 2 and 4 found nothing faster (docs/LOG.md run 57).
Each step rounds to the activation dtype where the reference modules do (norm output, scaled
norm, silu, product, matmul output, sum), so only the summation order of the dot products
differs from the PyTorch path; the norm hand-off (`Handoff`: the next RMSNorm handed from a
residual epilogue to the next multiply, no norm kernel) rounds at its own points instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from specpilot.formats.certified import CertifiedHead
from specpilot.formats.fp8 import Fp8Weight
from specpilot.kernels import certified, launch, trace
from specpilot.kernels.certified import certify, fp16_rounding, widen_int8
from specpilot.kernels.common import (
    INTERPRETED,
    dot,
    handed_arguments,
    handed_rstd,
    handed_squares,
    input_tile,
    interpreted_tile,
    l2_prefetch,
    pdl_enter,
    row_rstd,
    store_handoff,
    store_output,
    store_split,
    store_swiglu,
    swiglu_tile_ok,
    trace_mark,
    weight_rows,
    zeroed_counters,
)
from specpilot.kernels.elementwise import silu_mul
from specpilot.kernels.rope import RopeEpilogue, rope_epilogue
from specpilot.layers.norm import rms_norm

MAX_ROWS = 64


@dataclass
class Handoff:
    """An RMSNorm handed from a multiply to the next one (the norm hand-off, no norm kernel
    between them): the multiply ending in the residual add (o, down) also stores u = its output
    times `norm_weight`, rounded, and each of its tiles' per-row sum of squares of that output;
    the next multiply (q|k|v, gate|up, the LM head) takes u as its input and scales its sums by
    the rows' 1 / RMS in its epilogue: (RMSNorm(x) * w) @ W^T = ((x * w) @ W^T) / RMS(x). `u`
    and `squares` stay None where the producing tile cannot hand on (a K split); the caller then
    norms as before. Rounding: the norm kernel rounds x / RMS and then its product by w; this
    rounds x * w and then the scaled sums: the latitude of any change of kernel (token forcing
    checks it)."""

    norm_weight: torch.Tensor
    eps: float
    u: torch.Tensor | None = None
    squares: torch.Tensor | None = None  # [M, tiles] fp32

    @property
    def ready(self) -> bool:
        return self.u is not None


@triton.jit
def _skinny_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    res_ptr,
    nw_ptr,
    M,
    N,
    K,
    stride_xm,
    stride_wn,
    stride_ym,
    stride_rm,
    eps,
    NORM: tl.constexpr,
    GLU: tl.constexpr,
    RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    USE_DOT: tl.constexpr,
    F32_DOT: tl.constexpr,
    PDL: tl.constexpr = False,
    PREFETCH: tl.constexpr = 0,
    SPLIT_K: tl.constexpr = 1,
    part_ptr=None,
    count_ptr=None,
    FENCE: tl.constexpr = False,
    LOOP_STAGES: tl.constexpr = 1,
    SWIGLU: tl.constexpr = False,
    w_desc=None,
    TMA: tl.constexpr = False,
    SHARED: tl.constexpr = 0,  # launch.ask_shared's bytes (unused here: its own compile)
    TRACE: tl.constexpr = 0,
    trace_ptr=None,
    clock_ptr=None,
    HAND_OUT: tl.constexpr = False,
    u_ptr=None,
    hw_ptr=None,
    sq_out_ptr=None,
    stride_um=0,
    stride_sq_out=0,
    HAND_IN: tl.constexpr = False,
    sq_in_ptr=None,
    stride_sq_in=0,
    slots_in=0,
    SLOTS_IN: tl.constexpr = 1,
    HAND_ROWS: tl.constexpr = 1,
    LATE: tl.constexpr = False,
    SCALE: tl.constexpr = False,
    scale_ptr=None,
    W_LEFT: tl.constexpr = False,
    ROPE: tl.constexpr = False,
    rope_count_ptr=None,
    q_out_ptr=None,
    k_cache_ptr=None,
    v_cache_ptr=None,
    pos_ptr=None,
    cos_ptr=None,
    sin_ptr=None,
    qn_ptr=None,
    kn_ptr=None,
    stride_cb=0,
    stride_ch=0,
    stride_cl=0,
    rope_t=1,
    rope_eps=0.0,
    HEADS: tl.constexpr = 0,
    KV_HEADS: tl.constexpr = 0,
    HEAD_DIM: tl.constexpr = 0,
    QK_NORM: tl.constexpr = False,
    ROPE_FENCE: tl.constexpr = False,
    CERTIFY: tl.constexpr = False,
    radius_ptr=None,
    exact_ptr=None,
    stride_en=0,
    floor_ptr=None,
    key_ptr=None,
    token_ptr=None,
    ids_ptr=None,
    packed_ptr=None,
    stride_ids=0,
    stride_packed=0,
    TILES_N: tl.constexpr = 1,
    TILES_M: tl.constexpr = 1,
    ACCEPT: tl.constexpr = False,
    WIDTH: tl.constexpr = 1,
    WIDTH_POW2: tl.constexpr = 1,
    upper_ptr=None,
    flag_ptr=None,
    deferred=0,
    DEFER: tl.constexpr = False,
    COMPACT: tl.constexpr = False,
    F16: tl.constexpr = False,
    STAT_ROWS: tl.constexpr = 1,
    UPPERS_OUT: tl.constexpr = False,
    STATS_IN: tl.constexpr = False,
    stats_ptr=None,
    A16: tl.constexpr = False,
    a16_ptr=None,
):
    trace_mark(trace_ptr, clock_ptr, 0, TRACE)
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    dtype = y_ptr.dtype.element_ty
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn, n_ok = weight_rows(pid_n, N, BLOCK_N, SWIGLU)
    rk0 = tl.arange(0, BLOCK_K)
    m_ok = rm < M
    x_rows = x_ptr + rm[:, None] * stride_xm
    w_rows = w_ptr + rn[:, None] * stride_wn
    # NOTE: the weights never change during a forward, so reading them needs no wait for the
    # kernel before: PREFETCH 1 loads the first tile here (then each tile one step ahead), 2
    # asks for this program's whole slab of rows in L2 (contiguous rows, launcher-checked)
    if PREFETCH == 1:
        w_next = tl.load(w_rows + rk0[None, :], mask=n_ok[:, None] & (rk0 < K)[None, :], other=0.0)
    if PREFETCH == 2:
        if pid_m == 0:
            rows_here = tl.minimum(N - pid_n * BLOCK_N, BLOCK_N)
            nbytes = rows_here * K * (w_ptr.dtype.element_ty.primitive_bitwidth // 8)
            l2_prefetch(w_ptr + pid_n * BLOCK_N * stride_wn, nbytes)
    # x and the residual come from the kernel before: wait for it here (LATE: the next kernel
    # launches as these programs exit, launch.LATE_TRIGGER)
    pdl_enter(PDL, trace_ptr, clock_ptr, TRACE, LATE)
    rstd = tl.zeros([BLOCK_M], dtype=tl.float32)
    if NORM:
        rstd = row_rstd(x_rows, m_ok, K, eps, BLOCK_M, BLOCK_K)
    if HAND_IN:  # x is a handed-on norm's u: its squares loaded now, summed after the loop
        # (HAND_ROWS 1: a one-row multiply on a taller tile holds one row of them, not BLOCK_M)
        hm = pid_m * BLOCK_M + tl.arange(0, HAND_ROWS)
        squares = handed_squares(sq_in_ptr, hm, hm < M, stride_sq_in, slots_in, SLOTS_IN)
    # NOTE: without tensor cores (M < 16 rows) the products accumulate element-wise in a
    # [BLOCK_M, BLOCK_N, BLOCK_K] tile and are reduced once at the end: a cross-lane reduction
    # per step would stall the loads.
    k_lo = 0
    k_hi = K
    if SPLIT_K > 1:  # this program's slice of K, whole BLOCK_K steps
        per_split = tl.cdiv(tl.cdiv(K, SPLIT_K), BLOCK_K) * BLOCK_K
        k_lo = tl.program_id(2) * per_split
        k_hi = tl.minimum(K, k_lo + per_split)
    if USE_DOT and W_LEFT:  # y^T = W x^T: the weights the left operand (wgmma takes it from
        # registers, where a widened FP8 tile is; the right operand comes from shared memory)
        acc_t = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)
    elif USE_DOT:
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    else:
        acc3 = tl.zeros([BLOCK_M, BLOCK_N, BLOCK_K], dtype=tl.float32)
    if CERTIFY:  # the inputs' squares, element-wise (a certified head's ||a||), and with F16
        # the squares of what rounding them to fp16 changed (its ||a - a'||); STAT_ROWS 1: a
        # one-row launch on a taller tile sums its one row's, from a load of that row alone
        # (no NORM prologue then: the launcher's), not BLOCK_M rows' of which one is real;
        # STATS_IN: none summed here, each row's two sums read after the loop (certified.row_stats)
        tl.static_assert(STAT_ROWS == BLOCK_M or (STAT_ROWS == 1 and not NORM))
        tl.static_assert(not (STATS_IN and NORM))
        tl.static_assert(not A16 or (STATS_IN and F16 and not GLU))
        squares3 = tl.zeros([STAT_ROWS, BLOCK_K], dtype=tl.float32)
        changes3 = tl.zeros([STAT_ROWS, BLOCK_K], dtype=tl.float32)
        x_first = x_ptr + (pid_m * BLOCK_M + tl.arange(0, STAT_ROWS))[:, None] * stride_xm
        first_ok = (pid_m * BLOCK_M + tl.arange(0, STAT_ROWS)) < M
    # LOOP_STAGES: the loop's loads software-pipelined through shared memory (cp.async) this
    # many steps deep (loop_stages: the launcher's default)
    for k0 in tl.range(k_lo, k_hi, BLOCK_K, num_stages=LOOP_STAGES):
        rk = k0 + rk0
        k_ok = rk < k_hi
        xm = m_ok[:, None] & k_ok[None, :]
        if A16:  # x rounded to fp16 by certified.row_stats ([M, K]): no conversion here
            a = tl.load(a16_ptr + rm[:, None] * K + rk[None, :], mask=xm, other=0.0)
        else:
            a = input_tile(x_rows, rk[None, :], xm, nw_ptr, rstd, K, dtype, NORM, GLU)
        if PREFETCH == 1:  # this tile was loaded one step ago; load the next (masked past K)
            w = w_next
            rk_next = rk + BLOCK_K
            w_next = tl.load(
                w_rows + rk_next[None, :],
                mask=n_ok[:, None] & (rk_next < K)[None, :],
                other=0.0,
            )
        elif TMA:  # one bulk copy of the tile into shared memory (zeros past N and K)
            w = w_desc.load([pid_n * BLOCK_N, k0])
        else:
            w = tl.load(w_rows + rk[None, :], mask=n_ok[:, None] & k_ok[None, :], other=0.0)
        if SCALE:  # FP8 weights (formats/fp8.py): both operands in fp16, which holds every e4m3
            a = a.to(tl.float16)
            w = w.to(tl.float16)
        if CERTIFY:  # int8 weights (formats/certified.py): exact in bf16, fp16 and fp32
            if not STATS_IN:
                if STAT_ROWS == BLOCK_M:
                    first = a
                else:
                    first = input_tile(x_first, rk[None, :], first_ok[:, None] & k_ok[None, :],
                                       nw_ptr, rstd, K, dtype, False, GLU)  # fmt: skip
                squares3 += first.to(tl.float32) * first.to(tl.float32)
                if F16:  # a rounded to fp16 below: what that changed
                    _, change = fp16_rounding(first)
                    changes3 += change * change
            if F16:  # the sums on fp16 tensor cores: a rounded to fp16 (its change bounded,
                # formats/certified.py), the weights widened to fp16 (fewer instructions)
                a = a.to(tl.float16)
                w = widen_int8(w, tl.float16, False)
            else:
                w = widen_int8(w, dtype, not USE_DOT)
        if USE_DOT and W_LEFT:
            acc_t += dot(w, tl.trans(a), F32_DOT)
        elif USE_DOT:
            acc += dot(a, tl.trans(w), F32_DOT)
        else:
            acc3 += a.to(tl.float32)[:, None, :] * w.to(tl.float32)[None, :, :]
    if not USE_DOT:
        acc = tl.sum(acc3, axis=2)
    elif W_LEFT:
        acc = tl.trans(acc_t)
    if SCALE:  # each weight row's scale
        acc = acc * tl.load(scale_ptr + rn, mask=n_ok, other=0.0)[None, :]
    post = tl.full([BLOCK_M], 1.0, tl.float32)
    if HAND_IN:  # (RMSNorm(x) * w) @ W^T = (x * w) @ W^T / RMS(x)
        post = handed_rstd(squares, K, eps)
        if not CERTIFY:  # (the certified head's epilogue scales its bounds and sums)
            acc = acc * post[:, None]
    if STATS_IN:  # [BLOCK_M, 1]: each row's sum of squares and of changes, summed before
        squares3 = tl.load(stats_ptr + 2 * rm, mask=m_ok, other=0.0)[:, None]
        changes3 = tl.load(stats_ptr + 2 * rm + 1, mask=m_ok, other=0.0)[:, None]
    if CERTIFY:  # an LM head's argmax (kernels/certified.py): tokens, no logits
        certify(acc, squares3, post, rm, m_ok, rn, n_ok, pid_n, pid_m, x_rows, nw_ptr, rstd, K,
                dtype, scale_ptr, radius_ptr, exact_ptr, stride_en, floor_ptr, key_ptr,
                count_ptr, token_ptr, ids_ptr, packed_ptr, M, N, stride_ids, stride_packed,
                upper_ptr, flag_ptr, deferred, NORM, GLU, BLOCK_M, BLOCK_N, BLOCK_K, USE_DOT,
                F32_DOT, TILES_N, TILES_M, ACCEPT, WIDTH, WIDTH_POW2, FENCE, DEFER,
                COMPACT, changes3, F16, UPPERS_OUT)  # fmt: skip
    elif SPLIT_K > 1:  # this slice's sums; the tile's last program adds them in order
        tile = pid_m * tl.num_programs(0) + pid_n
        store_split(acc, part_ptr, count_ptr, y_ptr, res_ptr, rm, rn, m_ok, n_ok, M, N,
                    stride_ym, stride_rm, tl.program_id(2), tile, SPLIT_K, RESIDUAL, True,
                    FENCE)  # fmt: skip
    elif SWIGLU:
        store_swiglu(acc, y_ptr, rm, pid_n, N, m_ok, stride_ym, BLOCK_M, BLOCK_N)
    else:
        out = store_output(acc, y_ptr, res_ptr, rm, rn, m_ok, n_ok, stride_ym, stride_rm, RESIDUAL)
        if HAND_OUT:
            store_handoff(out, u_ptr, hw_ptr, sq_out_ptr, rm, rn, m_ok, n_ok, stride_um,
                          stride_sq_out, pid_n)  # fmt: skip
        if ROPE:  # a q|k|v multiply: the rope kernel's work for the heads it completes
            rope_epilogue(y_ptr, rm, m_ok, stride_ym, rope_count_ptr, q_out_ptr, k_cache_ptr,
                          v_cache_ptr, pos_ptr, cos_ptr, sin_ptr, qn_ptr, kn_ptr, stride_cb,
                          stride_ch, stride_cl, rope_t, rope_eps, HEADS, KV_HEADS, HEAD_DIM,
                          BLOCK_N, QK_NORM, ROPE_FENCE)  # fmt: skip
    trace_mark(trace_ptr, clock_ptr, 2, TRACE)


# Tiles measured per weight shape (N, K) on the H200 that beat the rules below, for one row and
# for 2-16 rows: bench/kernel_sweep.py with the weights read from HBM, runs 54 (--grid quick)
# and 55 (full), docs/LOG.md; TB/s of the default -> these. At 16 rows q|k|v 3.15 -> 3.19-3.27,
# gate|up 3.92-3.97 -> 4.09-4.17, lm_head 4.31 -> 4.41-4.46. One row: element-wise tiles whose
# loop pipelines its loads (LOOP_STAGES; run 83, --grid loop): q|k|v 3.45 -> 3.54, o 3.24 ->
# 3.32, gate|up 4.05 -> 4.14, down 3.96 -> 4.02, lm_head 4.34 -> 4.51; bf16 AR 1.030x [1.008-
# 1.051] in paired rounds. Other shapes take the rules.
# Runs 131-132 (bench/timeline.py, the kernels timed inside the captured graphs): the one-row
# gate|up and LM head read faster on the 16-row tensor-core tiles (one token row of 16, masked)
# than on their element-wise tiles: 50.9 -> 47.5 us and 288.7 -> 278.1 us, the one-token
# forward 4.286 -> 4.235 ms (back-to-back replays, both runs); in isolation (kernel_sweep, cold
# L2) the element-wise tiles had won.
_DOT_ONE_ROW = dict(BLOCK_M=16, BLOCK_K=128, USE_DOT=True, num_stages=3)
MEASURED_TILES = {
    (1, 6144, 4096): dict(BLOCK_N=16, BLOCK_K=256, LOOP_STAGES=4),
    (1, 4096, 4096): dict(BLOCK_N=8, BLOCK_K=512, LOOP_STAGES=3),
    (1, 24576, 4096): _DOT_ONE_ROW | dict(BLOCK_N=64, num_warps=4),
    (1, 4096, 12288): dict(BLOCK_N=8, BLOCK_K=512, LOOP_STAGES=3),
    (1, 151936, 4096): _DOT_ONE_ROW | dict(BLOCK_N=128, num_warps=8),
    # Llama-3.1-8B (run 87, --model llama3.1-8b; its o is Qwen3's, above): gate|up 4.10 ->
    # 4.23, down 4.11 -> 4.16, lm_head 4.39 -> 4.58; AR 226.1 -> 229.3 tok/s with them
    (1, 28672, 4096): dict(BLOCK_N=8, BLOCK_K=512, LOOP_STAGES=3),
    (1, 4096, 14336): dict(BLOCK_N=8, BLOCK_K=512, LOOP_STAGES=3),
    (1, 128256, 4096): dict(BLOCK_N=8, BLOCK_K=1024, LOOP_STAGES=4),
    # Llama-3.1-8B's 16-row gate|up on Qwen3's swept tile (runs 166-167, in the graph; it took
    # the rules' until then): verify 4.364 -> 4.316 ms back to back, the gate|up -3.2 us a
    # layer; paired, pipelined, 5 rounds: spec@6.55 1.013x [1.007-1.017], AR 0.999x
    (16, 28672, 4096): dict(BLOCK_N=64, BLOCK_K=128, num_stages=3),
    (16, 6144, 4096): dict(BLOCK_N=64, BLOCK_K=256, num_stages=4),
    (16, 24576, 4096): dict(BLOCK_N=64, BLOCK_K=128, num_stages=3),
    (16, 151936, 4096): dict(BLOCK_N=128, BLOCK_K=128, num_warps=8, num_stages=3),
}


# FP8 weights (a drafter's, formats/fp8.py): tiles by (rows, N, K) measured with them, else
# tile_config's (bench/fp8_speed.py sweeps them, each timing inside a CUDA graph, cold weights).
# Run 180 (16 rows, Qwen3-8B's drafter and head), us against bf16 on its tiles: head 150.6 /
# 278.5, q|k|v 13.0 / 15.4, k|v 8.1 / 11.3, o 10.1 / 12.4, gate|up 29.3 / 48.8, down 19.5 /
# 29.5, fc 28.2 / 46.2. The small shapes read only 1.0-2.6 TB/s (room left); the K splits won
# down, fc and k|v; mma.sync (weights on the right) the head, W_LEFT (wgmma) o and k|v.
_FP8 = dict(BLOCK_N=64, BLOCK_K=256, num_warps=4, num_stages=4)
FP8_TILES: dict[tuple[int, int, int], dict] = {
    # the head and q|k|v: run 190's in-graph picks over bench/h200/tiles191's families, head
    # 155.7 -> 152.1 us, q|k|v 11.4 -> 10.9 us a layer; the draft 0.618 -> 0.611 ms back to
    # back (base twice), paired spec@6.55 0.999x [0.979-1.017] (level)
    (16, 151936, 4096): dict(_FP8),
    (16, 6144, 4096): dict(_FP8, BLOCK_N=32, BLOCK_K=512, W_LEFT=True),
    (16, 2048, 4096): dict(_FP8, W_LEFT=True, SPLIT_K=4),
    # every drafter layer's k|v stacked (models/fused.DRAFT_CONTEXT_ONCE), run 181: 17.2 us
    # against bf16's 27.8 on its tile; in the draft graph 15.7 us for the five 6.5 us k|v
    (16, 10240, 4096): dict(_FP8, BLOCK_N=32, W_LEFT=True),
    # o, gate|up and fc: runs 186-187's in-graph picks (bench/compose_tiles.py --kind fp8
    # --forwards draft over bench/h200/tiles187's families; each was second or third in run
    # 180's isolated sweep): in the draft graph o 9.2 -> 8.2 us, gate|up 28.5 -> 27.2, fc 32.5
    # -> 27.1; the draft 0.627 -> 0.613 ms back to back with q|k|v's pick too (left out:
    # slower together, 11.75 against 11.5 us), paired spec@6.55 0.996x [0.981-1.010] (level);
    # this table against the old tiles (run 189, another H200): draft 0.633 -> 0.617 ms
    (16, 4096, 4096): dict(_FP8, BLOCK_N=32, BLOCK_K=512, W_LEFT=True),
    (16, 24576, 4096): dict(_FP8, num_stages=3),
    (16, 4096, 12288): dict(_FP8, SPLIT_K=4),
    (16, 4096, 20480): dict(_FP8, BLOCK_N=32, W_LEFT=True, SPLIT_K=4),
    # Llama-3.1-8B's drafter down (run 191, bench/fp8_speed.py's sweep, then in the draft
    # graph): 29.5 -> 19.4 us a layer on the bf16 tile it took before; the Llama draft 0.676
    # -> 0.632 ms, paired spec@6.55 1.008x [0.993-1.020]. Its gate|up and head: the sweep's
    # picks were level in the graph (34.7 / 127.7 against 34.9 / 128.3 us), not taken
    (16, 4096, 14336): dict(_FP8, SPLIT_K=4),
}


def tile_config(m: int, n: int, k: int) -> dict:
    """Tile sizes by shape: rules from bench/kernel_sweep.py on the H200 (LOG run 8), then
    MEASURED_TILES for the shapes where a sweep with HBM-resident weights found better."""
    cfg = _rule_tiles(m, n, k)
    cfg.update(MEASURED_TILES.get((tile_rows(m), n, k), {}))
    return cfg


def fp8_tile_config(m: int, n: int, k: int) -> dict:
    """The tile of a multiply by FP8 weights: FP8_TILES' over the rules where it has the
    shape, else tile_config's (the bf16 tile of the shape). Not over tile_config's: a bf16
    tile of the same shape (a tiles file's W_LEFT or LOOP_STAGES, say) then leaked into the
    FP8 one; on an H100 (docs/LOG.md run 184) any W_LEFT tiles file made the FP8 draft ~15%
    slower that way."""
    measured = FP8_TILES.get((tile_rows(m), n, k))
    return _rule_tiles(m, n, k) | measured if measured else tile_config(m, n, k)


def tile_rows(m: int) -> int:
    """The row count under which MEASURED_TILES keeps a multiply of m rows: 1, 16 for 2-16
    (the sweeps' 16-row tiles serve them all), else m."""
    return 1 if m == 1 else (16 if m <= 16 else m)


def loop_stages(cfg: dict) -> int:
    """The tile's LOOP_STAGES: its own, else the launch's num_stages for tensor-core tiles
    (whose loads the compiler pipelines at that depth anyway) and 1 for element-wise tiles (the
    depth their loads had before LOOP_STAGES: none)."""
    if "LOOP_STAGES" in cfg:
        return cfg["LOOP_STAGES"]
    return cfg.get("num_stages", 3) if cfg["USE_DOT"] else 1


def _rule_tiles(m: int, n: int, k: int) -> dict:
    common = dict(num_warps=4, num_stages=3)
    # NOTE: only M = 1 takes element-wise products. At M = 2 and 4 they made whole Qwen3-8B
    # forwards take 5.9 and 8.1 ms where M = 8 on tensor cores took 4.9 (H200 run 19).
    if m == 1:  # element-wise products: 8 rows x 1024 columns of weights per step
        return dict(BLOCK_M=1, BLOCK_N=8, BLOCK_K=1024, USE_DOT=False, **common)
    block_m = 16 if m <= 16 else (32 if m <= 32 else 64)
    block_n = 64 if n >= 8192 else 32
    return dict(
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        BLOCK_K=256 if m <= 16 else 128,
        USE_DOT=True,
        num_warps=4,
        num_stages=4,
    )


def check_prologue_epilogue(
    m: int,
    n: int,
    k: int,
    norm_weight: torch.Tensor | None,
    glu: bool,
    residual: torch.Tensor | None,
    swiglu: bool = False,
) -> None:
    """The optional RMSNorm / SwiGLU prologue and residual / SwiGLU epilogue of an [M, K] x
    [N, K]^T multiply (skinny_linear's and w12_linear's contract)."""
    if glu and norm_weight is not None:
        raise ValueError("norm prologue and glu prologue are exclusive")
    if swiglu and (residual is not None or n % 2):
        raise ValueError(f"the swiglu epilogue takes an even N ({n}) and no residual")
    if norm_weight is not None and norm_weight.shape != (k,):
        raise ValueError(f"norm_weight {tuple(norm_weight.shape)} != ({k},)")
    if residual is not None and (residual.shape != (m, n) or residual.stride(1) != 1):
        raise ValueError(f"residual {tuple(residual.shape)} must be a row-major [{m}, {n}]")


def skinny_linear(
    x: torch.Tensor,
    weight: torch.Tensor | Fp8Weight,
    *,
    norm_weight: torch.Tensor | None = None,
    eps: float = 1e-6,
    glu: bool = False,
    residual: torch.Tensor | None = None,
    config: dict | None = None,
    swiglu: bool = False,
    handoff: Handoff | None = None,
    handed: Handoff | None = None,
    rope: RopeEpilogue | None = None,
) -> torch.Tensor:
    """x [M, K] (or [M, 2K] with glu) @ weight [N, K]^T -> [M, N] in x's dtype; see module doc.
    swiglu: the weight is [gate | up] and the result silu(gate) * up, [M, N / 2], each product
    rounded first (elementwise.silu_mul's bits), in the tile's epilogue where it can end so
    (swiglu_tile_ok), else by silu_mul after the multiply.
    handoff (with residual): also fill it for the next multiply, where the tile can (Handoff);
    handed: x is a filled Handoff's u, the product is scaled by its rows' 1 / RMS.
    An Fp8Weight (a drafter's, formats/fp8.py) is multiplied as fp8_linear_reference does:
    the input and the weights in fp16, each column times its row's scale.
    rope: a q|k|v multiply's rope work in the epilogue, where the tile can (RopeEpilogue: its
    `q` filled, the cache written; the projection is returned either way)."""
    fp8 = weight if isinstance(weight, Fp8Weight) else None
    if fp8 is not None:
        weight = fp8.weight
    if x.dim() != 2 or weight.dim() != 2:
        raise ValueError(
            f"skinny_linear wants 2-D x and weight, got {tuple(x.shape)}, {tuple(weight.shape)}"
        )
    m, n, k = x.shape[0], weight.shape[0], weight.shape[1]
    if x.shape[1] != (2 * k if glu else k):
        raise ValueError(f"x has {x.shape[1]} columns; weight {tuple(weight.shape)} glu={glu}")
    if m > MAX_ROWS:
        raise ValueError(f"skinny_linear handles at most {MAX_ROWS} rows, got {m}")
    weight_dtype = x.dtype if fp8 is not None else weight.dtype
    if x.dtype != weight_dtype or x.dtype not in (torch.bfloat16, torch.float16):
        raise ValueError(
            f"skinny_linear wants bf16/fp16 x and weight, got {x.dtype}, {weight.dtype}"
        )
    if fp8 is not None and fp8.device != x.device:
        raise ValueError(f"FP8 weight on {fp8.device}, x on {x.device}")
    if x.stride(1) != 1 or weight.stride(1) != 1:
        raise ValueError("skinny_linear wants unit stride along K")
    check_prologue_epilogue(m, n, k, norm_weight, glu, residual, swiglu)
    check_handoff(x, n, norm_weight, glu, residual, swiglu, handoff, handed)
    if config is None:
        config = fp8_tile_config(m, n, k) if fp8 is not None else tile_config(m, n, k)
        config = interpreted_tile(config, n)
    cfg = dict(config)
    if swiglu and not swiglu_tile_ok(cfg):
        return silu_mul(skinny_linear(x, fp8 or weight, norm_weight=norm_weight, eps=eps,
                                      glu=glu, config=config, handed=handed))  # fmt: skip
    y = torch.empty(m, n // 2 if swiglu else n, device=x.device, dtype=x.dtype)
    split = cfg.pop("SPLIT_K", 1)
    cfg["LOOP_STAGES"] = loop_stages(cfg)
    if split > 1 and not cfg["USE_DOT"]:
        raise ValueError("SPLIT_K > 1 needs the tensor-core tiles (USE_DOT)")
    # NOTE: with swiglu (N and BLOCK_N even) tile pid_n takes rows of each half: N / BLOCK_N
    # tiles either way
    grid = (triton.cdiv(n, cfg["BLOCK_N"]), triton.cdiv(m, cfg["BLOCK_M"]), split)
    tma_args = tma_arguments(weight, cfg, swiglu)  # its TMA is the tile's, where it can be
    cfg.pop("TMA", None)
    split_args = {}
    if split > 1:  # fp32 slices, counters per tile (left zero by the kernel)
        part = torch.empty(split, m, n, device=x.device, dtype=torch.float32)
        counters = zeroed_counters(x.device, grid[0] * grid[1])
        split_args = dict(part_ptr=part, count_ptr=counters, FENCE=not INTERPRETED)
    hand_args = hand_arguments(x, n, grid[0], cfg["BLOCK_M"], split, handoff, handed)
    rope_args = {}
    if rope is not None and fp8 is None:
        rope_args = rope.arguments(y, cfg, split, swiglu)
    prefetch = 0 if split > 1 or swiglu or tma_args["TMA"] else launch.prefetch_mode(weight)
    nbytes = fp8.nbytes() if fp8 else weight.nbytes
    scale = fp8.scale if fp8 is not None else None
    extra = dict(SPLIT_K=split, SWIGLU=swiglu, **split_args, **tma_args, **rope_args,
                 SCALE=fp8 is not None, scale_ptr=scale)  # fmt: skip
    _launch(x, weight, y, grid, cfg, hand_args, residual=residual, norm_weight=norm_weight,
            eps=eps, glu=glu, handed=handed, prefetch=prefetch, nbytes=nbytes,
            **extra)  # fmt: skip
    return y


def _launch(
    x: torch.Tensor,
    weight: torch.Tensor,
    y: torch.Tensor,
    grid: tuple[int, int, int],
    cfg: dict,
    hand_args: dict,
    *,
    residual: torch.Tensor | None,
    norm_weight: torch.Tensor | None,
    eps: float,
    glu: bool,
    handed: Handoff | None,
    prefetch: int,
    nbytes: int,
    name: str = "linear",
    **extra,
) -> None:
    """_skinny_kernel on `grid` with the launch switches of kernels/launch.py (PDL, shared
    memory), the timeline's arguments and `extra` (an epilogue's)."""
    m, n, k = x.shape[0], weight.shape[0], weight.shape[1]
    eps = handed.eps if handed is not None else eps
    programs = grid[0] * grid[1] * grid[2]
    elementwise = not cfg["USE_DOT"]
    launched = launch.multiply(x, programs, elementwise, handed is not None, hand_args["LATE"])
    kernel = _skinny_kernel[grid](
        x,
        weight,
        y,
        residual if residual is not None else y,
        norm_weight if norm_weight is not None else weight,
        m,
        n,
        k,
        x.stride(0),
        weight.stride(0),
        y.stride(0),
        residual.stride(0) if residual is not None else 0,
        eps,
        NORM=norm_weight is not None,
        GLU=glu,
        RESIDUAL=residual is not None,
        F32_DOT=INTERPRETED,
        PREFETCH=prefetch,
        **launched,
        **trace.arguments(x, name, programs, bytes=nbytes, rows=m, n=n, k=k),
        **hand_args,
        **extra,
        **cfg,
    )
    launch.ask_shared(kernel, launched["SHARED"])


# Certified heads (formats/certified.py) by (rows, N, K): tiles measured with them, else the
# rules' (an int8 tile reads half a bf16 tile's bytes). Run 198 (in the decode graph, Qwen3-8B,
# COMPACT): the one-row head on an element-wise tile of 16 rows x 512 columns 261.7 us, against
# 273.9 on BLOCK_N 64 tensor-core tiles and 375.4 on the rules' (the exact head 271 + its
# argmax 7.5). Run 199, the weights widened without I2F (certified.widen_int8): that tile
# 224.0 us, this one (32 x 256, 4 load stages) 213.2 against the exact head's ~282 + 8; the
# decode 4.090 ms against 4.164 / 4.167 exact; paired AR 1.022x [1.008-1.035]. At 16 rows no
# tile beat the rules' (343 us against the exact head's ~291 + 14): verify stays exact.
# Llama-3.1-8B's head on the same tile (run 201): 181.5 us against the rules' 357.5, decode
# 4.028 ms against 4.088 / 4.089 exact; paired AR 1.006x [0.994-1.017]. Qwen3 paired again
# there (8 rounds, "auto"): AR 1.012x [1.009-1.016], spec@6.55 0.999x. That element-wise tile
# (BLOCK_M 1, BLOCK_N 32, BLOCK_K 256, 4 warps, LOOP_STAGES 4) served both one-row heads until
# run 241.
# Qwen3-8B's one-row head on fp16 tensor cores (F16: formats/certified.py; the one row's
# squares only, STAT_ROWS): runs 239-240 (decode graph, H200) 182.3 us against 201.8 / 202.8
# (element-wise, base / base2), decode 3.975 against 3.999 / 3.999 ms back to back; 4 stages
# 192.5, 5 stages 227, 8 warps 296, K 512 204. Run 241, as the default: 181.6 us against
# 203.9; paired pipelined AR 1.009x over the element-wise tile (249.2 against 247.1 tok/s;
# control 0.996x), spec@6.55 1.003x (within the control's spread). Run 242: on 2 warps
# 162.9 us (base 181.7 / 181.6), decode 3.964 against 3.980 / 3.973 ms; 128 x 256 on 4 warps,
# 2 stages 174.8; the exact pass deferred at one row too level (182.0), COMPACT 0 198.6.
# Llama-3.1-8B's head on 4 warps 157.6 against its element-wise tile's 177.3 / 177.4, decode
# 3.932 against 3.955 / 3.958 ms. Run 243: Qwen3's on 2 warps 163.9 / 162.8 (base / base2)
# against 182.4 on 4, 4 stages 171.9, 2 stages 177.6, K 128 170.2, 32 rows 198.8, 1 warp
# 194.5; paired pipelined AR 1.006x over 4 warps (250.3 against 248.8 tok/s; control 249.1),
# spec@6.55 level. Llama's on 2 warps 140.8 against 157.6 / 156.7 (decode 3.917 against
# 3.932 / 3.932 ms). Every measured certified tile is this one on 2 warps.
_CERTIFIED_F16 = dict(
    BLOCK_M=16, BLOCK_N=64, BLOCK_K=256, USE_DOT=True, F16=True, num_warps=2, num_stages=3
)
# Qwen3-8B's 16-row verify head (runs 246-249, with TWO_PASS and ROW_STATS): the multiply
# 157.2 us on 2 warps (161.3 on 4) + the second launch 24.0 (certified.EXACT_ROWS) + the row
# sums 1.5 against the exact head's 283 + argmax 14; verify 4.322 -> 4.215 ms back to back
# (run 249); paired pipelined, the exact verify head's spec@6.55 0.978x [0.975-0.981] of it
# (run 251: 1,267 against 1,296 tok/s; AR level)
CERTIFIED_TILES: dict[tuple[int, int, int], dict] = {
    (1, 151936, 4096): dict(_CERTIFIED_F16),
    (16, 151936, 4096): dict(_CERTIFIED_F16),
    # Llama-3.1-8B's on the same tile (run 249, the second launch on 256 rows): 129.3 + 37.1 +
    # 1.6 us against the exact head's 246.8 + argmax 12.0, verify 4.256 -> 4.177 ms back to
    # back; run 251, paired: the exact verify head's spec@6.55 0.979x [0.974-0.984] of it
    (16, 128256, 4096): dict(_CERTIFIED_F16),
    (1, 128256, 4096): dict(_CERTIFIED_F16),
}


def certified_tile_config(m: int, n: int, k: int) -> dict:
    """The tile of a certified head's multiply: CERTIFIED_TILES' over the rules, else the rules'
    (never a bf16 tile's switches: no K split, no TMA, no W_LEFT)."""
    return _rule_tiles(m, n, k) | CERTIFIED_TILES.get((tile_rows(m), n, k), {})


def certified_argmax(
    x: torch.Tensor,
    head: CertifiedHead,
    *,
    norm_weight: torch.Tensor | None = None,
    eps: float = 1e-6,
    handed: Handoff | None = None,
    ids: torch.Tensor | None = None,
    config: dict | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The argmax of each row of (RMSNorm(x) * norm_weight, or a handed norm's) @ head.exact^T
    [M, N] as the plain head's logits would give it (rounded to x's dtype, the first index of
    the largest), in one launch that reads the int8 copy and the candidates' rows only
    (formats/certified.py) -> (tokens [M] int64, packed). ids [B, W] (B * W = M): the rows are
    verify blocks (anchor, then drafts), and packed [B, 2W + 1] is tokens.argmax_accept's;
    else packed is None."""
    if x.dim() != 2 or x.shape[1] != head.shape[1]:
        raise ValueError(f"certified_argmax wants x [M, {head.shape[1]}], got {tuple(x.shape)}")
    m, (n, k) = x.shape[0], head.shape
    if not 0 < m <= MAX_ROWS:
        raise ValueError(f"certified_argmax handles 1 to {MAX_ROWS} rows, got {m}")
    if x.dtype != head.exact.dtype or x.device != head.device or x.stride(1) != 1:
        raise ValueError(
            f"certified_argmax wants x of the head's dtype ({head.exact.dtype}) on its device "
            f"with unit stride along K, got {x.dtype} on {x.device}"
        )
    if n > 2**31 - 1:
        raise ValueError(f"a certified head takes at most 2^31 - 1 rows, got {n}")
    check_prologue_epilogue(m, n, k, norm_weight, False, None)
    check_handoff(x, n, norm_weight, False, None, False, None, handed)
    accept: dict = {}
    packed = None
    if ids is not None:
        if ids.dim() != 2 or ids.numel() != m or ids.dtype not in (torch.int32, torch.int64):
            raise ValueError(
                f"verify blocks' ids must be int32/int64 [B, W] with B * W = {m}, got "
                f"{tuple(ids.shape)} {ids.dtype}"
            )
        ids = ids.contiguous()
        blocks, width = ids.shape
        packed = torch.empty(blocks, 2 * width + 1, device=x.device, dtype=torch.int64)
        accept = dict(ACCEPT=True, WIDTH=width, WIDTH_POW2=triton.next_power_of_2(width),
                      ids_ptr=ids, packed_ptr=packed, stride_ids=ids.stride(0),
                      stride_packed=packed.stride(0))  # fmt: skip
    cfg = dict(config) if config is not None else certified_tile_config(m, n, k)
    for switch in ("SPLIT_K", "TMA", "W_LEFT"):
        if cfg.pop(switch, None) not in (None, False, 1):
            raise ValueError(f"a certified head's tile takes no {switch}")
    cfg["LOOP_STAGES"] = loop_stages(cfg)
    grid = (triton.cdiv(n, cfg["BLOCK_N"]), triton.cdiv(m, cfg["BLOCK_M"]), 1)
    tokens = torch.empty(m, device=x.device, dtype=torch.int64)
    dev = x.device
    floors = certified.held(dev, "floors", m, float("-inf"), torch.float32)
    keys = certified.held(dev, "keys", m, -(2**63), torch.int64)
    two_pass = certified.two_pass(m)
    deferred = 0 if two_pass else certified.deferred_tiles(dev, grid[0], m)
    defer = {}
    if two_pass:  # the upper bounds for the second launch (kernels/certified.TWO_PASS)
        bounds = certified.held(dev, "bounds", m * n, 0.0, torch.float32)
        defer = dict(UPPERS_OUT=True, upper_ptr=bounds)
    if deferred:  # the first tiles' bounds, checked by the last ones (kernels/certified.py)
        tile = cfg["BLOCK_M"] * cfg["BLOCK_N"]
        uppers = certified.held(dev, "uppers", grid[1] * deferred * tile, 0.0, torch.float32)
        flags = certified.held(dev, "flags", grid[1] * deferred, 0, torch.int32)
        defer = dict(DEFER=True, deferred=deferred, upper_ptr=uppers, flag_ptr=flags)
    counters = zeroed_counters(dev, grid[1] + 1)
    hand_args = hand_arguments(x, n, grid[0], cfg["BLOCK_M"], 1, None, handed)
    # one row on a taller tile: its squares from its own row (the kernel's STAT_ROWS); or every
    # row's sums from a launch before (certified.ROW_STATS)
    stat_rows = 1 if m == 1 and norm_weight is None else cfg["BLOCK_M"]
    stats = {}
    if certified.stats_first(m, norm_weight is not None):
        f16 = bool(cfg.get("F16"))
        sums, x16 = certified.row_stats(x, f16, f16 and bool(certified.X16))
        stats = dict(STATS_IN=True, stats_ptr=sums)
        if x16 is not None:  # the multiply's input as it sums it (certified.X16)
            stats |= dict(A16=True, a16_ptr=x16)
    extra = dict(CERTIFY=True, STAT_ROWS=stat_rows, scale_ptr=head.scale, radius_ptr=head.radius,
                 exact_ptr=head.exact, stride_en=head.exact.stride(0), floor_ptr=floors,
                 key_ptr=keys, count_ptr=counters, token_ptr=tokens, FENCE=not INTERPRETED,
                 TILES_N=grid[0], TILES_M=grid[1], COMPACT=bool(certified.COMPACT), **accept,
                 **defer, **stats)  # fmt: skip
    _launch(x, head.weight, x, grid, cfg, hand_args, residual=None, norm_weight=norm_weight,
            eps=eps, glu=False, handed=handed, prefetch=0, nbytes=head.nbytes(),
            name="certified_head", **extra)  # fmt: skip
    if two_pass:
        certified.exact_pass(x, head, bounds, floors, keys, tokens, norm_weight=norm_weight,
                             eps=handed.eps if handed is not None else eps,
                             squares=handed.squares if handed is not None else None,
                             accept=accept)  # fmt: skip
    return tokens, packed


def hand_arguments(
    x: torch.Tensor,
    n: int,
    tiles: int,
    block_m: int,
    split: int,
    handoff: Handoff | None,
    handed: Handoff | None,
) -> dict:
    """The skinny and W12 kernels' norm hand-off arguments for an [M, K] x [N, K]^T multiply of
    `tiles` tiles along N (BLOCK_M rows a tile, K split `split` ways): `handoff` filled here
    (u [M, N], squares [M, tiles]) unless the K is split, `handed`'s squares read; LATE:
    launch.LATE_TRIGGER for a multiply that hands a norm on."""
    m = x.shape[0]
    args: dict = {"LATE": False}
    if handoff is not None and split == 1:
        handoff.u = torch.empty(m, n, device=x.device, dtype=x.dtype)
        handoff.squares = torch.empty(m, tiles, device=x.device, dtype=torch.float32)
        args = dict(HAND_OUT=True, u_ptr=handoff.u, hw_ptr=handoff.norm_weight,
                    sq_out_ptr=handoff.squares, stride_um=handoff.u.stride(0),
                    stride_sq_out=handoff.squares.stride(0),
                    LATE=bool(launch.LATE_TRIGGER))  # fmt: skip
    if handed is not None:
        args |= handed_arguments(handed.squares) | dict(HAND_ROWS=1 if m == 1 else block_m)
    return args


def check_handoff(
    x: torch.Tensor,
    n: int,
    norm_weight: torch.Tensor | None,
    glu: bool,
    residual: torch.Tensor | None,
    swiglu: bool,
    handoff: Handoff | None,
    handed: Handoff | None,
) -> None:
    """skinny_linear's handoff (a residual epilogue's, the next norm's weight [N]) and handed
    (a filled Handoff whose u is x, no other prologue)."""
    if handoff is not None:
        if residual is None or swiglu:
            raise ValueError("a norm hand-off comes from a residual epilogue, without swiglu")
        if handoff.norm_weight.shape != (n,) or handoff.norm_weight.dtype != x.dtype:
            raise ValueError(
                f"hand-off norm weight {tuple(handoff.norm_weight.shape)} "
                f"{handoff.norm_weight.dtype} != ({n},) {x.dtype}"
            )
    if handed is not None:
        if not handed.ready or handed.u is not x:
            raise ValueError("a handed norm's multiply takes its filled u as x")
        if norm_weight is not None or glu:
            raise ValueError("a handed norm excludes the norm and glu prologues")


# NOTE: a bulk copy's box takes at most this many elements along each dimension
TMA_MAX_BOX = 256


def tma_arguments(weight: torch.Tensor, cfg: dict, swiglu: bool) -> dict:
    """The weight's tensor descriptor for a tile with TMA (its weight tiles fetched by bulk
    copies into shared memory, no registers held while they are in flight): element-wise
    tiles of consecutive rows, a box of at most TMA_MAX_BOX rows and columns. A weight whose
    rows are not 16-byte aligned (which the copy engine needs) takes the plain loads (same
    values)."""
    if not cfg.get("TMA"):
        return {"TMA": False}
    if cfg["USE_DOT"] or swiglu or max(cfg["BLOCK_N"], cfg["BLOCK_K"]) > TMA_MAX_BOX:
        raise ValueError(
            f"TMA tiles are element-wise, without swiglu, of at most {TMA_MAX_BOX} rows and "
            f"columns: got {cfg}, swiglu={swiglu}"
        )
    row_bytes = weight.stride(0) * weight.element_size()
    if row_bytes % 16 or weight.data_ptr() % 16 or cfg["BLOCK_K"] * weight.element_size() < 16:
        return {"TMA": False}
    box = [cfg["BLOCK_N"], cfg["BLOCK_K"]]
    return {"TMA": True, "w_desc": TensorDescriptor.from_tensor(weight, box)}


def skinny_linear_reference(
    x: torch.Tensor,
    weight: torch.Tensor,
    *,
    norm_weight: torch.Tensor | None = None,
    eps: float = 1e-6,
    glu: bool = False,
    residual: torch.Tensor | None = None,
    swiglu: bool = False,
) -> torch.Tensor:
    """The same contract in plain PyTorch, step by step as the model's modules compute it."""
    if glu:
        gate, up = x.chunk(2, dim=-1)
        x = F.silu(gate) * up
    if norm_weight is not None:
        x = rms_norm(x, norm_weight, eps)
    y = F.linear(x, weight)
    if swiglu:
        gate, up = y.chunk(2, dim=-1)
        return F.silu(gate) * up
    return y if residual is None else residual + y
