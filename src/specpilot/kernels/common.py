"""Pieces shared by the kernels: the interpreter switch for tl.dot, the two ends of the skinny
multiplies (bf16 and W12): RMSNorm statistics and input tile in the prologue, residual add and
store in the epilogue, each rounded where the PyTorch modules round; and the counters with which
the last of a group of programs finds the others done (`zeroed_counters`, `count_done`: split
partial results combined in the kernel instead of a second launch).
"""

import torch
import triton
import triton.language as tl

from specpilot.kernels import interpreted
from specpilot.kernels.trace import LANES

# NOTE: Triton's CPU interpreter (tests) multiplies bf16 operands of tl.dot wrongly (numpy has no
# bf16), so there the kernels widen them to fp32 first (`dot` with F32_DOT); same values, exact
# products.
INTERPRETED = interpreted()
TRACE_LANES = tl.constexpr(LANES)  # kernels/trace.py: a traced launch's atomics spread this wide


@triton.jit
def dot(a, b, F32_DOT: tl.constexpr):
    """tl.dot(a, b) with an fp32 accumulator; operands widened to fp32 under the interpreter."""
    if F32_DOT:
        return tl.dot(a.to(tl.float32), b.to(tl.float32))
    return tl.dot(a, b)


@triton.jit
def trace_mark(trace_ptr, clock_ptr, WHICH: tl.constexpr, TRACE: tl.constexpr):
    """The kernel timeline (kernels/trace.py): one launch's row of trace.LANES lanes of 4 int64
    at trace_ptr, each lane for the programs whose linear id is its index modulo LANES (so that
    a grid's atomics spread over LANES addresses): 0 their first entry (min), 1 their first pass
    of the PDL wait (min), 2 their last exit (max), 3 how many exited (count). WHICH 0, 1 or 2
    marks this program's moment; at 2 after a barrier, so that its threads are done. TRACE 1:
    the GPU's global nanosecond timer; 2 (the interpreter, which runs programs one after
    another): the next tick of a counter at clock_ptr, an order instead of a time. 0: nothing
    (every kernel's default, whose code is then unchanged)."""
    if TRACE > 0:
        if WHICH == 2:
            tl.debug_barrier()
        if TRACE == 1:
            now = tl.extra.cuda.globaltimer()
        else:
            now = tl.atomic_add(clock_ptr, 1, sem="relaxed")
        pid = tl.program_id(0) + tl.num_programs(0) * (
            tl.program_id(1) + tl.num_programs(1) * tl.program_id(2)
        )
        lane = trace_ptr + (pid % TRACE_LANES) * 4
        # NOTE: relaxed, so that no fence orders the program's other memory operations
        if WHICH == 2:
            tl.atomic_max(lane + 2, now, sem="relaxed")
            tl.atomic_add(lane + 3, 1, sem="relaxed")
        else:
            tl.atomic_min(lane + WHICH, now, sem="relaxed")


@triton.jit
def pdl_enter(
    PDL: tl.constexpr,
    trace_ptr,
    clock_ptr,
    TRACE: tl.constexpr,
    LATE: tl.constexpr = False,
    EARLY: tl.constexpr = False,
):
    """With programmatic dependent launch (kernels/launch.py): wait until the previous kernel has
    completed, then let the next one launch; call it before any load of what another kernel
    wrote and before any store. Waiting first keeps at most one kernel resident ahead: letting
    the next launch first chains every later kernel onto the SMs while the first still runs
    (run 49: AR 199 against 206 tok/s without PDL). LATE: only wait; the next kernel launches
    as this kernel's programs exit (launch.LATE_TRIGGER), so its programs take no room while
    these still run. EARLY: let the next kernel launch first, then wait (launch.O_EARLY). Then
    the timeline's mark of this program's pass (`trace_mark` 1; nothing with TRACE 0)."""
    if PDL:
        if EARLY:
            tl.extra.cuda.gdc_launch_dependents()
        tl.extra.cuda.gdc_wait()
        if not LATE and not EARLY:
            tl.extra.cuda.gdc_launch_dependents()
    trace_mark(trace_ptr, clock_ptr, 1, TRACE)


@triton.jit
def l2_prefetch(ptr, nbytes):
    """Ask for [ptr, ptr + nbytes) in L2 (Hopper's bulk prefetch, issued by one thread of the
    program; nbytes and ptr multiples of 16). A hint: no value, no ordering."""
    tl.inline_asm_elementwise(
        "{ .reg .pred p; .reg .b32 t; mov.u32 t, %tid.x; setp.eq.u32 p, t, 0; "
        "@p cp.async.bulk.prefetch.L2.global [$1], $2; mov.u32 $0, 0; }",
        "=r,l,r",
        [ptr, nbytes],
        dtype=tl.int32,
        is_pure=False,
        pack=1,
    )


def ahead_arguments(ahead: tuple[torch.Tensor, ...]) -> dict:
    """A kernel's AHEAD constant and region arguments for at most two contiguous uint8 tensors
    of a multiple of 16 bytes each (launch.l2_ahead gives such), which its programs ask L2
    for."""
    if len(ahead) > 2 or any(a.dtype != torch.uint8 or a.numel() % 16 for a in ahead):
        raise ValueError("ahead takes at most two uint8 tensors of a multiple of 16 bytes")
    out: dict = {"AHEAD": len(ahead)}
    for i, a in enumerate(ahead):
        out |= {f"ahead{i}_ptr": a, f"ahead{i}_bytes": a.numel()}
    return out


@triton.jit
def l2_prefetch_share(ptr, nbytes, pid, programs):
    """Program `pid` of `programs` asks for its share of [ptr, ptr + nbytes) in L2 (byte
    pointer; ptr and nbytes multiples of 16): equal runs of whole 16-byte pieces."""
    share = tl.cdiv(tl.cdiv(nbytes, 16), programs) * 16
    start = pid * share
    size = tl.minimum(share, nbytes - start)
    if size > 0:
        l2_prefetch(ptr + start, size)


@triton.jit
def l2_prefetch_regions(AHEAD: tl.constexpr, ahead0_ptr, ahead0_bytes, ahead1_ptr, ahead1_bytes,
                        pid, programs):  # fmt: skip
    """Program `pid` of `programs` asks L2 for its share of each of the AHEAD regions that
    ahead_arguments passed."""
    if AHEAD > 0:
        l2_prefetch_share(ahead0_ptr, ahead0_bytes, pid, programs)
    if AHEAD > 1:
        l2_prefetch_share(ahead1_ptr, ahead1_bytes, pid, programs)


@triton.jit
def row_rstd(x_rows, m_ok, K, eps, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    """1 / RMS of each row of x [BLOCK_M, K] (fp32), the RMSNorm scale."""
    rk0 = tl.arange(0, BLOCK_K)
    sum_sq = tl.zeros([BLOCK_M], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + rk0
        xk = tl.load(x_rows + rk[None, :], mask=m_ok[:, None] & (rk[None, :] < K), other=0.0)
        xk = xk.to(tl.float32)
        sum_sq += tl.sum(xk * xk, axis=1)
    return tl.math.rsqrt(sum_sq / K + eps)


@triton.jit
def input_tile(x_rows, cols, mask, nw_ptr, rstd, K, dtype, NORM: tl.constexpr, GLU: tl.constexpr):
    """The multiply's input at columns `cols` (broadcasting with x_rows [BLOCK_M, 1]): x,
    silu(gate) * up (x = [gate | up], K columns each), or RMSNorm(x) * norm weight."""
    a = tl.load(x_rows + cols, mask=mask, other=0.0)
    if GLU:
        g = a.to(tl.float32)
        u = tl.load(x_rows + K + cols, mask=mask, other=0.0).to(tl.float32)
        s = (g / (1.0 + tl.exp(-g))).to(dtype).to(tl.float32)
        a = (s * u).to(dtype)
    if NORM:
        nw = tl.load(nw_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        a = (a.to(tl.float32) * rstd[:, None]).to(dtype).to(tl.float32)
        a = (a * nw).to(dtype)
    return a


@triton.jit
def join_position(col):
    """Where column `col` of a multiply's input lies in the W12 JOIN tiles' K order
    (kernels/w12_linear._joined, join_order): at 16 c + 8 qh + 2 t + ql of its 128-column half
    block, for its column 32 q + i there (i = 4 c + t, q = 2 qh + ql)."""
    r = col % 128
    q = r // 32
    i = r % 32
    return col - r + 16 * (i // 4) + 8 * (q // 2) + 2 * (i % 4) + q % 2


@triton.jit
def pair_position(col):
    """Where column `col` of a multiply's input lies in kernels/w12_ws.pair_order: at 64 p + 2 i
    + q % 2 of its 256-column block, for its column 32 j + i there (j = 4 h + q, p = 2 h + q //
    2)."""
    r = col % 256
    j = r // 32
    return col - r + 64 * (2 * (j // 4) + (j % 4) // 2) + 2 * (r % 32) + j % 2


@triton.jit
def store_output(
    acc, y_ptr, res_ptr, rm, rn, m_ok, n_ok, stride_ym, stride_rm, RESIDUAL: tl.constexpr
):
    """y[rm, rn] = acc rounded to y's dtype, plus residual[rm, rn] (rounded again) if asked;
    returns what it stored."""
    dtype = y_ptr.dtype.element_ty
    out = acc.to(dtype)
    om = m_ok[:, None] & n_ok[None, :]
    if RESIDUAL:
        r = tl.load(res_ptr + rm[:, None] * stride_rm + rn[None, :], mask=om, other=0.0)
        out = (out.to(tl.float32) + r.to(tl.float32)).to(dtype)
    tl.store(y_ptr + rm[:, None] * stride_ym + rn[None, :], out, mask=om)
    return out


@triton.jit
def store_handoff(out, u_ptr, hw_ptr, sq_ptr, rm, rn, m_ok, n_ok, stride_um, stride_sq, slot,
                  PAIR: tl.constexpr = False):  # fmt: skip
    """The next RMSNorm handed on from a tile's output `out` [BLOCK_M, BLOCK_N] (y's dtype):
    u[rm, rn] = out * hw[rn] rounded (the norm weight's product, which the next multiply takes
    as its input; PAIR: at column pair_position(rn), for kernels/w12_tc) and the tile's sum of
    squares of out per row into squares[rm, slot] (fp32), which the next multiply adds up for
    the rows' 1 / RMS (`handed_rstd`)."""
    hw = handoff_weight(hw_ptr, rn, n_ok)
    store_handoff_with(out, hw, u_ptr, sq_ptr, rm, rn, m_ok, n_ok, stride_um, stride_sq, slot, PAIR)


@triton.jit
def handoff_weight(hw_ptr, rn, n_ok):
    """The next norm's weight at columns rn (fp32), for `store_handoff_with`: a constant, which a
    kernel may read before its PDL wait."""
    return tl.load(hw_ptr + rn, mask=n_ok, other=0.0).to(tl.float32)


@triton.jit
def store_handoff_with(out, hw, u_ptr, sq_ptr, rm, rn, m_ok, n_ok, stride_um, stride_sq, slot,
                       PAIR: tl.constexpr = False):  # fmt: skip
    """`store_handoff` with the norm weight's columns hw already loaded (`handoff_weight`)."""
    om = m_ok[:, None] & n_ok[None, :]
    o = out.to(tl.float32)
    u = (o * hw[None, :]).to(u_ptr.dtype.element_ty)
    at = pair_position(rn) if PAIR else rn
    tl.store(u_ptr + rm[:, None] * stride_um + at[None, :], u, mask=om)
    tl.store(sq_ptr + rm * stride_sq + slot, tl.sum(tl.where(om, o * o, 0.0), axis=1), mask=m_ok)


@triton.jit
def handed_squares(sq_ptr, rm, m_ok, stride_sq, slots, SLOTS: tl.constexpr):
    """The squares [BLOCK_M, SLOTS] a multiply was handed (store_handoff), zero past `slots`:
    loaded before its loop, summed after it (`handed_rstd`), so the load's latency hides."""
    rs = tl.arange(0, SLOTS)
    mask = m_ok[:, None] & (rs < slots)[None, :]
    return tl.load(sq_ptr + rm[:, None] * stride_sq + rs[None, :], mask=mask, other=0.0)


def handed_arguments(squares: torch.Tensor) -> dict:
    """A launch's keywords for the squares [M, slots] a norm hand-off left (`handed_squares`
    reads them in the kernel)."""
    slots = squares.shape[1]
    return dict(HAND_IN=True, sq_in_ptr=squares, stride_sq_in=squares.stride(0),
                slots_in=slots, SLOTS_IN=triton.next_power_of_2(slots))  # fmt: skip


@triton.jit
def handed_rstd(squares, K, eps):
    """1 / RMS of each row from its handed squares [BLOCK_M, SLOTS] (fp32)."""
    return tl.math.rsqrt(tl.sum(squares, axis=1) / K + eps)


@triton.jit
def weight_rows(pid_n, N, BLOCK_N: tl.constexpr, SWIGLU: tl.constexpr):
    """The weight rows of tile pid_n and whether each exists: BLOCK_N consecutive rows, or
    (SWIGLU: a [gate | up] weight of N rows) the same BLOCK_N / 2 rows of each half, so that
    the tile's epilogue holds every gate row beside its up row."""
    r = tl.arange(0, BLOCK_N)
    if SWIGLU:
        HALF: tl.constexpr = BLOCK_N // 2
        j = pid_n * HALF + r % HALF
        return j + (r // HALF) * (N // 2), j < N // 2
    else:
        rn = pid_n * BLOCK_N + r
        return rn, rn < N


@triton.jit
def store_swiglu(acc, y_ptr, rm, pid_n, N, m_ok, stride_ym, BLOCK_M: tl.constexpr,
                 BLOCK_N: tl.constexpr, JOIN: tl.constexpr = False):  # fmt: skip
    """y[rm, cols] = silu(gate) * up from a `weight_rows(SWIGLU=True)` tile's sums acc
    [BLOCK_M, BLOCK_N] (gates, then their ups), each rounded to y's dtype first: the bits of
    storing [gate | up] and running elementwise.silu_mul on it. JOIN: each column stored at its
    join_position (for a W12 multiply that takes x_order "join")."""
    dtype = y_ptr.dtype.element_ty
    HALF: tl.constexpr = BLOCK_N // 2
    a = acc.to(dtype).to(tl.float32)
    g, u = tl.split(tl.permute(tl.reshape(a, [BLOCK_M, 2, HALF]), [0, 2, 1]))
    s = (g / (1.0 + tl.exp(-g))).to(dtype).to(tl.float32)
    cols = pid_n * HALF + tl.arange(0, HALF)
    om = m_ok[:, None] & (cols < N // 2)[None, :]
    at = join_position(cols) if JOIN else cols
    tl.store(y_ptr + rm[:, None] * stride_ym + at[None, :], (s * u).to(dtype), mask=om)


# NOTE: the interpreter's cost is per program (each call of a jit function inside a program
# patches the language again), hardly per weight: an element-wise one-row tile (2-8 weight rows
# a program on the GPU) runs there with up to INTERPRETED_ROWS, each row's sum unchanged (rows
# are independent), the tests' fused forwards ~15x faster (tests/test_w12_kernels.py checks
# the bits against the GPU's tile)
INTERPRETED_ROWS = 64


def interpreted_tile(cfg: dict, n: int) -> dict:
    """cfg, with BLOCK_N doubled up to INTERPRETED_ROWS under the interpreter where it is an
    element-wise one-row tile without a K split and N a multiple of twice the new BLOCK_N (so
    that every tile stays whole, a SwiGLU tile's halves too); else cfg itself."""
    if not INTERPRETED or cfg["USE_DOT"] or cfg["BLOCK_M"] != 1 or cfg.get("SPLIT_K", 1) > 1:
        return cfg
    rows = cfg["BLOCK_N"]
    while 2 * rows <= INTERPRETED_ROWS and n % (4 * rows) == 0:
        rows *= 2
    return cfg | {"BLOCK_N": rows}


def swiglu_tile_ok(cfg: dict) -> bool:
    """Whether a tile can end in store_swiglu: no K split and an even BLOCK_N (an even N and no
    residual are the swiglu contract, linear.check_prologue_epilogue)."""
    return cfg.get("SPLIT_K", 1) == 1 and cfg["BLOCK_N"] % 2 == 0


# per device, every counter buffer made (the last is the largest), zero between launches
_COUNTERS: dict[torch.device, list[torch.Tensor]] = {}


def zeroed_counters(device: torch.device, n: int) -> torch.Tensor:
    """n int32 counters on the device, zero: every launch that counts on them (`count_done`)
    leaves them zero, and launches on one stream do not overlap where they count (with PDL
    they wait for the kernel before first). A larger buffer replaces a too small one for new
    launches, but every buffer is kept: CUDA graphs captured with it replay its address. It
    must exist before a capture (the graph runner's warm-up runs make it)."""
    held = _COUNTERS.setdefault(device, [])
    if not held or held[-1].numel() < n:
        if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
            # memory allocated in a capture belongs to the graph's pool, not to this cache
            raise RuntimeError("kernel counters must be allocated before a CUDA graph capture")
        held.append(torch.zeros(max(n, 4096), device=device, dtype=torch.int32))
    return held[-1]


@triton.jit
def count_done(count_ptr, any_tensor, GROUP_SIZE: tl.constexpr, FENCE: tl.constexpr):
    """After this program has stored its part: count it on its group's counter and return
    whether it is the group's last (GROUP_SIZE programs). Every thread's stores are ordered
    before the count (a fence in each thread, a barrier, an acq_rel atomic); the last program
    acquires, so it sees every part, which it must read through L2 (cache_modifier ".cg").
    FENCE: off under the interpreter, which runs programs one after another. The last program
    resets the counter with `count_reset` when it has read the parts."""
    if FENCE:
        tl.inline_asm_elementwise("fence.acq_rel.gpu; mov.u32 $0, $1;", "=r,r", [any_tensor],
                                  tl.int32, is_pure=False, pack=1)  # fmt: skip
    tl.debug_barrier()
    done = tl.atomic_add(count_ptr, 1, sem="acq_rel", scope="gpu")
    return done == GROUP_SIZE - 1


@triton.jit
def count_reset(count_ptr):
    tl.atomic_xchg(count_ptr, 0, sem="relaxed", scope="gpu")


@triton.jit
def store_split(acc, part_ptr, count_ptr, y_ptr, res_ptr, rm, rn, m_ok, n_ok, M, N, stride_ym,
                stride_rm, pid_k, tile, SPLIT_K: tl.constexpr, RESIDUAL: tl.constexpr,
                SUM: tl.constexpr, FENCE: tl.constexpr):  # fmt: skip
    """The end of a K-split multiply's program: store its fp32 slice of y into part [SPLIT_K, M,
    N]. With SUM, the tile's last program (`count_done` on the tile's counter) adds the slices
    in order, so the result does not depend on which came last, and runs the epilogue
    (`store_output`); without, a second launch adds them."""
    part = part_ptr + rm[:, None] * N + rn[None, :]
    om = m_ok[:, None] & n_ok[None, :]
    tl.store(part + pid_k * M * N, acc, mask=om)
    if SUM:
        if count_done(count_ptr + tile, rn, SPLIT_K, FENCE):
            total = tl.zeros_like(acc)
            for s in range(SPLIT_K):
                total += tl.load(part + s * M * N, mask=om, other=0.0, cache_modifier=".cg")
            store_output(total, y_ptr, res_ptr, rm, rn, m_ok, n_ok, stride_ym, stride_rm, RESIDUAL)
            count_reset(count_ptr + tile)
