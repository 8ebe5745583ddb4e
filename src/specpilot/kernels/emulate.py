"""Gluon kernels run on the CPU: tile-level semantics, mbarrier phases, TMA copies and
warp-specialized partitions under a seeded scheduler. For tests, before a GPU is at hand.

Why: Gluon has no interpreter (Triton's TRITON_INTERPRET runs `triton.jit` kernels only), and the
W12 kernels written in it (kernels/w12_row.py, w12_tc.py) had only been compiled here: their
index arithmetic, their rings' barrier phases and their epilogues met a GPU first. This module
runs a kernel's own Python source with the Gluon language swapped for PyTorch on CPU tensors:

- a register tensor is a whole tile (`Tensor`: a torch tensor and its layout, which no value
  depends on); integer arithmetic wraps at 32 bits as on the GPU, `//` and `%` truncate;
- shared memory is a byte buffer (`Shared`: index, slice, reinterpret, load, store), filled with
  0xFF bytes (NaN, -1) at allocation, as it holds garbage on a GPU; a store must match its
  buffer's shape exactly;
- global memory is a pointer into the argument tensor's storage (`Pointer`); an unmasked load or
  store outside the argument's own elements raises;
- mbarriers count arrivals and transaction bytes and complete phases as the hardware does
  (`expect` is an arrival with bytes; `wait(bar, parity)` returns once the phase of that parity
  has completed);
- a TMA copy reads its box (zeros outside the tensor) into shared memory at a later point the
  scheduler picks, then takes its box's bytes off the barrier;
- wgmma reading shared memory that a partition stored to with no `fence_async_shared` since
  raises (the async proxy may miss generic stores); mma.sync (`ampere.mma_v2`) takes both
  operands from registers;
- each program runs alone; `gl.warp_specialize`'s partitions run as threads of which exactly one
  runs at a time, switching at every barrier, copy and shared-memory access to a partition the
  seeded random choice picks among those that can go on. No partition able to go on and no copy
  in flight is a deadlock (a hang on the GPU): it raises, naming each partition's wait.

Not modelled: timing, races between the warps of one partition (it runs as a whole: a missing
`gl.thread_barrier` goes unseen), asynchronous wgmma (it completes at issue), the physical
swizzle (only shapes whose reinterpretation is layout-free are taken), transcendental
approximations (exp, rsqrt are PyTorch's), warp-level asm beyond the few forms in `_ASM`, and
the order of floating-point sums (wgmma and reductions sum in PyTorch's
order): compare results as the GPU tests do, to summation order.

    with emulate.gluon(sms=4, seed=0):
        y = w12_row.w12_row_linear(x, packed)  # CPU tensors, the kernel's own code
"""

from __future__ import annotations

import contextlib
import inspect
import random
import re
import sys
import threading
import types
from collections.abc import Callable, Iterator

import torch
from triton.experimental.gluon import language as _gl
from triton.experimental.gluon._runtime import GluonJITFunction
from triton.experimental.gluon.language.nvidia import ampere as _ampere
from triton.experimental.gluon.language.nvidia import hopper as _hopper
from triton.experimental.gluon.language.nvidia.hopper import mbarrier as _mbarrier
from triton.experimental.gluon.language.nvidia.hopper import tma as _tma
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
from triton.language.core import constexpr as _constexpr

from specpilot.kernels import launch

_LAUNCH_OPTIONS = {"num_warps", "num_stages", "num_ctas", "launch_pdl", "maxnreg", "debug"}
_ctx = threading.local()  # a partition thread's program id, grid, warps and scheduler


class EmulationError(RuntimeError):
    """A kernel did what would hang or fault on the GPU (a deadlock, an out-of-bounds access, a
    barrier arrived on more than its count), or used what this emulator does not model."""


class _Abort(BaseException):
    """Unwinds the other partitions once one has failed."""


# ---------------------------------------------------------------- values


class _Type:
    def __init__(self, shape: list[int], layout, dtype: torch.dtype | None = None) -> None:
        self.shape, self.layout, self.element_ty = shape, layout, dtype

    @property
    def nbytes(self) -> int:
        return _numel(self.shape) * self.element_ty.itemsize


def _numel(shape) -> int:
    out = 1
    for s in shape:
        out *= int(s)
    return out


class _RuntimeInt(int):
    """An integer kernel argument not declared constexpr, and what is computed from it: a value
    the compiler does not know, so a static_range bound or a shape made of it is an error (as
    when compiled; `_static`)."""

    def __repr__(self) -> str:
        return f"runtime {int(self)}"


def _runtime_op(name: str):
    op = getattr(int, name)

    def fn(self, *other):
        out = op(self, *other)
        return _RuntimeInt(out) if type(out) is int else out

    return fn


for _name in (
    "__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __floordiv__ __rfloordiv__ __mod__ "
    "__rmod__ __neg__ __lshift__ __rlshift__ __rshift__ __rrshift__ __and__ __rand__ __or__ "
    "__ror__ __xor__ __rxor__ __pow__"
).split():
    setattr(_RuntimeInt, _name, _runtime_op(_name))


def _static(values, what: str) -> list[int]:
    """Integers the compiler must know (a static_range's bounds, a shape, an arange's ends): an
    EmulationError if one comes from a runtime argument."""
    out = []
    for v in values:
        v = _raw(v)
        if isinstance(v, _RuntimeInt):
            raise EmulationError(
                f"{what} {v!r} depends on a runtime argument; the compiler needs a constexpr "
                f"({_site()})"
            )
        out.append(int(v))
    return out


def _raw(v):
    """A Tensor's torch tensor, a constexpr's value, anything else as it is."""
    if isinstance(v, Tensor):
        return v.t
    if isinstance(v, _constexpr):
        return v.value
    return v


def _wrapped(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """An int64 result back to a 32-bit (or narrower) integer dtype, two's complement."""
    if dtype == torch.int64 or not t.dtype.is_floating_point and t.dtype == dtype:
        return t
    bits = dtype.itemsize * 8
    t = t & ((1 << bits) - 1)
    if dtype.is_signed:
        t = t - ((t >> (bits - 1)) << bits)
    return t.to(dtype)


def _result_dtype(a, b) -> torch.dtype:
    ta, tb = _raw(a), _raw(b)
    return torch.result_type(ta, tb)


def _expanded(layout, index):
    """The layout of t[index] where index inserts one axis (None) into a SliceLayout's sliced
    dimension: its parent (as Gluon's expand_dims); else unchanged."""
    index = index if isinstance(index, tuple) else (index,)
    nones = [i for i, x in enumerate(index) if x is None]
    if len(nones) == 1 and isinstance(layout, _gl.SliceLayout) and layout.dim == nones[0]:
        return layout.parent
    return layout


def _layout_of(*values):
    """The layout of an elementwise result: that of the operand of the highest rank."""
    best, rank = None, -1
    for v in values:
        if isinstance(v, (Tensor, Pointer)) and v.layout is not None and v.rank > rank:
            best, rank = v.layout, v.rank
    return best


class Tensor:
    """A register tensor: the whole tile as a torch tensor, and the layout it was made in."""

    __slots__ = ("t", "layout")

    def __init__(self, t: torch.Tensor, layout=None) -> None:
        self.t, self.layout = t, layout

    @property
    def type(self) -> _Type:
        return _Type(list(self.t.shape), self.layout, self.t.dtype)

    @property
    def shape(self) -> list[int]:
        return list(self.t.shape)

    @property
    def rank(self) -> int:
        return self.t.dim()

    @property
    def dtype(self) -> torch.dtype:
        return self.t.dtype

    def to(self, dtype, bitcast: bool = False, **_) -> Tensor:
        dtype = _raw(dtype)
        if bitcast:
            if dtype.itemsize != self.t.dtype.itemsize:
                raise EmulationError(f"bitcast {self.t.dtype} -> {dtype}: sizes differ")
            return Tensor(self.t.contiguous().view(dtype), self.layout)
        return Tensor(self.t.to(dtype), self.layout)

    def __getitem__(self, index) -> Tensor:
        return Tensor(self.t[index], _expanded(self.layout, index))

    def __index__(self) -> int:
        return int(self.t.item())

    def __int__(self) -> int:
        return int(self.t.item())

    def __float__(self) -> float:
        return float(self.t.item())

    def __bool__(self) -> bool:
        return bool(self.t.item())

    def __repr__(self) -> str:
        return f"Tensor({self.t!r})"

    # arithmetic: integers of 32 bits wrap (computed in int64), division truncates
    def _arith(self, other, op, reverse: bool = False) -> Tensor:
        a, b = (other, self) if reverse else (self, other)
        dtype = _result_dtype(a, b)
        ta, tb = _raw(a), _raw(b)
        if not dtype.is_floating_point and dtype != torch.bool and dtype != torch.int64:
            ta = ta.long() if isinstance(ta, torch.Tensor) else ta
            tb = tb.long() if isinstance(tb, torch.Tensor) else tb
            return Tensor(_wrapped(op(ta, tb), dtype), _layout_of(a, b))
        out = op(ta, tb)
        out = out if isinstance(out, torch.Tensor) else torch.tensor(out)
        return Tensor(out, _layout_of(a, b))

    def __add__(self, o):
        return o.__radd__(self) if isinstance(o, Pointer) else self._arith(o, torch.add)

    def __truediv__(self, o):
        out = torch.true_divide(self.t, _raw(o))
        return Tensor(out if out.dtype.is_floating_point else out.float(), self.layout)

    def __rtruediv__(self, o):
        return Tensor(torch.true_divide(_raw(o), self.t), self.layout)

    def __rshift__(self, o):  # arithmetic on signed integers, logical on unsigned (as Triton)
        return self._arith(o, lambda a, b: a >> b)

    def __neg__(self):
        return self._arith(0, torch.sub, True)

    def __invert__(self):
        return Tensor(~self.t, self.layout)

    def _cmp(self, o, op) -> Tensor:
        return Tensor(op(self.t, _raw(o)), _layout_of(self, o))

    __hash__ = None


def _trunc_div(a, b):
    return torch.div(torch.as_tensor(a), b, rounding_mode="trunc")


def _trunc_mod(a, b):
    return torch.fmod(torch.as_tensor(a), b)


_ARITH = dict(radd=torch.add, sub=torch.sub, mul=torch.mul, floordiv=_trunc_div, mod=_trunc_mod,
              lshift=lambda a, b: a << b, and_=lambda a, b: a & b, or_=lambda a, b: a | b,
              xor=lambda a, b: a ^ b)  # fmt: skip
for _name, _op in _ARITH.items():  # x op y and (but radd, lshift) y op x, each elementwise
    _name = _name.rstrip("_")
    if _name != "radd":
        setattr(Tensor, f"__{_name}__", lambda self, o, op=_op: self._arith(o, op))
    if _name not in ("lshift",):
        _rname = "__radd__" if _name == "radd" else f"__r{_name}__"
        setattr(Tensor, _rname, lambda self, o, op=_op: self._arith(o, op, True))
for _name, _op in dict(lt=torch.lt, le=torch.le, gt=torch.gt, ge=torch.ge, eq=torch.eq,
                       ne=torch.ne).items():  # fmt: skip
    setattr(Tensor, f"__{_name}__", lambda self, o, op=_op: self._cmp(o, op))


class Pointer:
    """A global-memory pointer (or a tile of them): element offsets into an argument tensor's
    storage, with the argument's own extent [lo, hi) that unmasked accesses must stay in."""

    def __init__(self, flat: torch.Tensor, off, lo: int, hi: int, name: str, layout=None) -> None:
        self.flat, self.off, self.lo, self.hi, self.name = flat, off, lo, hi, name
        self.layout = layout

    @property
    def rank(self) -> int:
        return self.off.dim()

    @staticmethod
    def of(t: torch.Tensor, name: str) -> Pointer:
        flat = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage())
        lo = t.storage_offset()
        extent = 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride())) if t.numel() else 0
        return Pointer(flat, torch.tensor(lo), lo, lo + extent, name)

    def _moved(self, off, layout) -> Pointer:
        return Pointer(self.flat, off, self.lo, self.hi, self.name, layout)

    def __add__(self, o) -> Pointer:
        t = _raw(o)
        off = self.off + (t.long() if isinstance(t, torch.Tensor) else int(t))
        return self._moved(off, _layout_of(self, o))

    __radd__ = __add__

    def __sub__(self, o) -> Pointer:
        return self + (-_raw(o))

    def __getitem__(self, index) -> Pointer:
        return self._moved(self.off[index], _expanded(self.layout, index))

    @property
    def type(self) -> _Type:
        return _Type(list(self.off.shape), None, self.flat.dtype)

    def _where(self, mask) -> tuple[torch.Tensor, torch.Tensor]:
        off = self.off
        live = torch.ones_like(off, dtype=torch.bool) if mask is None else _raw(mask)
        if not isinstance(live, torch.Tensor):
            live = torch.tensor(bool(live))
        off, live = torch.broadcast_tensors(off, live)
        bad = live & ((off < self.lo) | (off >= self.hi))
        if bad.any():
            at = off[bad][:4].tolist()
            raise EmulationError(
                f"out-of-bounds access of {self.name}: elements {at} outside [{self.lo}, "
                f"{self.hi}) (at {_site()})"
            )
        return torch.where(live, off, self.lo), live


def _site(frames: int = 1) -> str:
    """The kernel source lines (`frames` of them, innermost first) that called into the
    emulator, for messages."""
    frame, out = sys._getframe(1), []
    while frame is not None and len(out) < frames:
        if frame.f_code.co_filename not in (__file__, threading.__file__):
            name = frame.f_code.co_filename.rsplit("/", 1)[-1]
            out.append(f"{frame.f_code.co_name} ({name}:{frame.f_lineno})")
        frame = frame.f_back
    return " < ".join(out) or "?"


def _swizzle(layout) -> int:
    """A shared layout's swizzle (bytes, or phases), 0 where logical order is physical."""
    width = getattr(layout, "swizzle_byte_width", 0)
    return width or (getattr(layout, "max_phase", 1) > 1 and getattr(layout, "max_phase", 1))


def _span(t: torch.Tensor) -> tuple[int, int, int]:
    """A shared-memory view's buffer and byte range: (its allocation, first byte, end)."""
    base = t.untyped_storage().data_ptr()
    start = t.data_ptr() - base
    count = 1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride())) if t.numel() else 0
    return base, start, start + count * t.element_size()


def _async_read(buf: Shared, what: str) -> None:
    """The async proxy (wgmma, TMA) reads buf: no partition may have written any of its bytes
    with generic stores since its last fence_async_shared (on a GPU the read may miss them)."""
    base, lo, hi = _span(buf.data)
    for part in _sched().parts:
        for b, s, e in part.unfenced:
            if b == base and s < hi and lo < e:
                raise EmulationError(
                    f"{what} at {_site()} reads shared memory that {part.name} stored to with no "
                    "fence_async_shared since"
                )


def _fence() -> None:
    """fence_async_shared: this partition's generic stores so far are visible to the async
    proxy (wgmma, TMA)."""
    _ctx.part.unfenced.clear()


class Shared:
    """Shared memory: a view of a program's byte buffer as a tile of some dtype."""

    def __init__(self, data: torch.Tensor, layout) -> None:
        self.data, self.layout = data, layout

    @property
    def type(self) -> _Type:
        return _Type(list(self.data.shape), self.layout, self.data.dtype)

    @property
    def shape(self) -> list[int]:
        return list(self.data.shape)

    @property
    def dtype(self) -> torch.dtype:
        return self.data.dtype

    def index(self, i) -> Shared:
        return Shared(self.data[int(i)], self.layout)

    def slice(self, start, length, dim: int = 0) -> Shared:
        return Shared(self.data.narrow(int(dim), int(start), int(length)), self.layout)

    def permute(self, order) -> Shared:
        return Shared(self.data.permute(*[int(o) for o in order]), self.layout)

    def _reinterpret(self, dtype, shape, layout) -> Shared:
        dtype, shape = _raw(dtype), _static(_raw(shape), "shared memory shape")
        if any(d <= 0 or d & (d - 1) for d in shape):  # (as Gluon's memdesc reinterpret)
            raise EmulationError(f"reinterpret as {shape}: every dimension a power of 2")
        old_row = self.data.shape[-1] * self.data.dtype.itemsize if self.data.dim() else 0
        same_rows = shape[:-1] == list(self.data.shape[:-1])
        same_rows = same_rows and shape[-1] * dtype.itemsize == old_row
        if _swizzle(self.layout) and (_swizzle(layout) != _swizzle(self.layout) or not same_rows):
            raise EmulationError(
                f"reinterpreting a swizzled buffer {list(self.data.shape)} as {shape} (another "
                "swizzle or row size): the physical swizzle is not modelled"
            )
        if not self.data.is_contiguous():
            raise EmulationError("reinterpreting a non-contiguous shared-memory view")
        raw = self.data.view(torch.uint8).reshape(-1)
        nbytes = _numel(shape) * dtype.itemsize
        if nbytes > raw.numel():
            raise EmulationError(f"reinterpret as {shape} {dtype}: {nbytes} bytes > {raw.numel()}")
        return Shared(raw[:nbytes].view(dtype).view(shape), layout)

    def load(self, layout=None) -> Tensor:
        _sched().step(f"shared load at {_site()}")
        return Tensor(self.data.clone(), layout)

    def store(self, value) -> None:
        value = _raw(value)
        if not isinstance(value, torch.Tensor) or list(value.shape) != list(self.data.shape):
            got = list(value.shape) if isinstance(value, torch.Tensor) else value
            raise EmulationError(f"shared store of {got} into {list(self.data.shape)} at {_site()}")
        _sched().step(f"shared store at {_site()}")
        self.data.copy_(value.to(self.data.dtype))
        _ctx.part.unfenced.append(_span(self.data))


class Barrier:
    """An mbarrier: arrivals expected a phase, arrivals and transaction bytes still pending, and
    the phases completed so far."""

    def __init__(self, name: str) -> None:
        self.name, self.count, self.pending, self.tx, self.completed = name, 0, 0, 0, 0

    def index(self, i) -> Barrier:
        if int(i) != 0:
            raise EmulationError(f"barrier {self.name}: index {int(i)} of a single barrier")
        return self

    def _arrive(self, count: int, tx: int = 0) -> None:
        if not self.count:
            raise EmulationError(f"barrier {self.name} used before mbarrier.init ({_site()})")
        self.tx += tx
        self.pending -= count
        if self.pending < 0:
            raise EmulationError(
                f"barrier {self.name}: more arrivals than its count {self.count} in one phase "
                f"({_site()})"
            )
        self._complete()

    def _bytes_landed(self, nbytes: int) -> None:
        self.tx -= nbytes
        self._complete()

    def _complete(self) -> None:
        if self.pending == 0 and self.tx == 0:
            self.completed += 1
            self.pending = self.count

    def describe(self) -> str:
        return (
            f"{self.name} (phases completed {self.completed}, {self.pending} of {self.count} "
            f"arrivals and {self.tx} bytes pending)"
        )


class Barriers:
    """An array of mbarriers (allocate_shared_memory with MBarrierLayout)."""

    def __init__(self, name: str, count: int) -> None:
        self.bars = [Barrier(f"{name}[{i}]") for i in range(count)]

    def index(self, i) -> Barrier:
        return self.bars[int(i)]


class Descriptor:
    """A TMA tensor descriptor (TensorDescriptor) as a kernel sees it."""

    def __init__(self, desc: TensorDescriptor, name: str) -> None:
        self.desc, self.name = desc, name
        self.layout = desc.layout
        self.block_shape = list(desc.block_shape)
        self.block_type = _Type(self.block_shape, desc.layout, desc.base.dtype)

    def box(self, coord) -> torch.Tensor:
        """The box at coord: the tensor's elements there, zeros outside it."""
        base = self.desc.base
        out = torch.zeros(self.block_shape, dtype=base.dtype)
        src, dst = [], []
        for c, b, s in zip(coord, self.block_shape, base.shape):
            c = int(c)
            lo, hi = max(c, 0), min(c + b, s)
            if hi <= lo:
                return out
            src.append(slice(lo, hi))
            dst.append(slice(lo - c, hi - c))
        out[tuple(dst)] = base[tuple(src)]
        return out


# ---------------------------------------------------------------- the scheduler


class _Part:
    def __init__(self, name: str, warps: int) -> None:
        self.name, self.warps = name, warps
        self.ready: Callable[[], bool] | None = None  # None: can go on
        self.what: str | Callable[[], str] = ""
        self.done = False
        self.result = None
        self.unfenced: list[tuple[int, int, int]] = []  # generic stores since the last fence


class _Scheduler:
    """One program's partitions as threads, one running at a time; at each step the seeded
    random choice picks which goes on, and may first land copies in flight."""

    def __init__(self, rng: random.Random, pid: tuple, grid: tuple) -> None:
        self.rng, self.pid, self.grid = rng, pid, grid
        self.cv = threading.Condition()
        self.parts: list[_Part] = []
        self.turn: _Part | None = None
        self.copies: list[Callable[[], None]] = []
        self.error: BaseException | None = None
        self.steps = 0
        self.barriers = 0
        self.threads: list[threading.Thread] = []

    def start(self, name: str, warps: int, fn: Callable, args: tuple) -> _Part:
        part = _Part(name, warps)
        self.parts.append(part)

        def body() -> None:
            _ctx.sched, _ctx.part = self, part
            with self.cv:
                while self.turn is not part and self.error is None:
                    self.cv.wait()
            try:
                if self.error is None:
                    part.result = fn(*args)
            except _Abort:
                pass
            except BaseException as e:  # noqa: BLE001 (handed to the launching thread)
                with self.cv:
                    if self.error is None:
                        self.error = e
            with self.cv:
                part.done = True
                self._pass()

        thread = threading.Thread(target=body, daemon=True, name=name)
        self.threads.append(thread)
        thread.start()
        return part

    def run(self, name: str, warps: int, fn: Callable, args: tuple):
        """A program: its body as the first partition; returns when every partition is done."""
        part = self.start(name, warps, fn, args)
        with self.cv:
            self._pass()
            while not all(p.done for p in self.parts) and self.error is None:
                self.cv.wait()
            while self.error is not None and not all(p.done for p in self.parts):
                self.cv.notify_all()
                self.cv.wait(0.05)
        for thread in self.threads:
            thread.join()
        if self.error is not None:
            raise self.error
        if self.copies:
            raise EmulationError(f"program {self.pid} ended with {len(self.copies)} TMA copies "
                                 "in flight")  # fmt: skip
        return part.result

    def step(self, what, ready: Callable[[], bool] | None = None) -> None:
        """A point where other partitions may run; with `ready`, wait until it holds. what:
        the wait, or a callable saying it (for a deadlock's message)."""
        part = _ctx.part
        self.steps += 1
        with self.cv:
            part.ready, part.what = ready, what
            self._pass()
            while self.turn is not part and self.error is None:
                self.cv.wait()
            part.ready = None
            if self.error is not None:
                raise _Abort

    def copy(self, land: Callable[[], None]) -> None:
        self.copies.append(land)

    def _land_one(self) -> None:
        self.copies.pop(self.rng.randrange(len(self.copies)))()

    def _pass(self) -> None:
        """Holding cv: land copies at random, pick the next partition, or find a deadlock."""
        if self.error is not None:  # a partition failed: the others unwind
            self.cv.notify_all()
            return
        try:
            while self.copies and self.rng.random() < 0.5:
                self._land_one()
            while True:
                live = [p for p in self.parts if not p.done]
                can = [p for p in live if p.ready is None or p.ready()]
                if can or not live:
                    self.turn = self.rng.choice(can) if can else None
                    break
                if self.copies:
                    self._land_one()
                    continue
                waits = "; ".join(
                    f"{p.name}: {p.what() if callable(p.what) else p.what}" for p in live
                )
                self.error = EmulationError(f"deadlock in program {self.pid}: {waits}")
                self.turn = None
                break
        except BaseException as e:  # noqa: BLE001 (a copy that failed)
            if self.error is None:
                self.error = e
        self.cv.notify_all()


def _sched() -> _Scheduler:
    return _ctx.sched


# ---------------------------------------------------------------- the language


def _allocate(dtype, shape, layout, value=None):
    dtype, shape = _raw(dtype), _static(_raw(shape), "shared memory shape")
    if isinstance(layout, _mbarrier.MBarrierLayout):
        count = shape[0] if shape else 1
        sched = _sched()
        sched.barriers += 1
        name = f"mbarrier #{sched.barriers} (made at {_site(2)})"
        return Barriers(name, count) if len(shape) > 1 or count > 1 else Barrier(name)
    raw = torch.full((_numel(shape) * dtype.itemsize,), 0xFF, dtype=torch.uint8)
    buf = Shared(raw.view(dtype).view(shape), layout)
    if value is not None:
        buf.data.copy_(_raw(value).to(dtype))
    return buf


def _xor_all(t: torch.Tensor, dim=None, keepdim: bool = False) -> torch.Tensor:
    """The xor of t's elements along dim (all of them with dim None), as torch's reductions."""
    if dim is None:
        t, dim = t.reshape(-1), 0
    out = t.select(dim, 0).clone()
    for i in range(1, t.shape[dim]):
        out ^= t.select(dim, i)
    return out.unsqueeze(dim) if keepdim else out


def _reduce(fn, x, axis, keep_dims: bool = False) -> Tensor:
    t = _raw(x)
    if axis is None:
        t, axis = t.reshape(-1), 0
    out = fn(t, int(axis), keep_dims)
    if not t.dtype.is_floating_point and t.dtype != torch.bool:
        out = out.to(t.dtype)
    layout = getattr(x, "layout", None)
    if layout is not None and not keep_dims and t.dim() > 1:
        layout = _gl.SliceLayout(int(axis), layout)
    return Tensor(out, layout if t.dim() > 1 or keep_dims else None)


def _where(cond, a, b) -> Tensor:
    ta, tb = _raw(a), _raw(b)
    if not isinstance(ta, torch.Tensor) and not isinstance(tb, torch.Tensor):
        ta = torch.tensor(ta)
    return Tensor(torch.where(_raw(cond), ta, tb), _layout_of(cond, a, b))


def _binary_fn(fn) -> Callable:
    def call(a, b, *_, **__) -> Tensor:
        ta, tb = _raw(a), _raw(b)
        if not isinstance(ta, torch.Tensor) and not isinstance(tb, torch.Tensor):
            return fn(torch.tensor(ta), torch.tensor(tb)).item()
        ta = ta if isinstance(ta, torch.Tensor) else torch.tensor(ta, dtype=tb.dtype)
        tb = tb if isinstance(tb, torch.Tensor) else torch.tensor(tb, dtype=ta.dtype)
        return Tensor(fn(ta, tb), _layout_of(a, b))

    return call


def _unary_fn(fn) -> Callable:
    return lambda x, **_: Tensor(fn(_raw(x)), getattr(x, "layout", None))


def _load(ptr: Pointer, mask=None, other=None, **_) -> Tensor:
    off, live = ptr._where(mask)
    vals = ptr.flat[off]
    if mask is not None:
        fill = _raw(other) if other is not None else 0
        vals = torch.where(live, vals, torch.as_tensor(fill, dtype=vals.dtype))
    return Tensor(vals, _layout_of(ptr, mask))


def _store(ptr: Pointer, value, mask=None, **_) -> None:
    off, live = ptr._where(mask)
    v = _raw(value)
    v = torch.as_tensor(v).to(ptr.flat.dtype).broadcast_to(off.shape)
    ptr.flat[off[live]] = v[live]


def _atomic(op):
    """gl.atomic_<op>(ptr, value, mask=None, ...): each live element's old value, then op(old,
    value) in its place (elements one after another; the scheduler steps between whole
    calls, as a GPU's atomics are each indivisible). Returns the old values."""

    def atomic(ptr: Pointer, value, mask=None, **_) -> Tensor:
        _sched().step(f"atomic at {_site()}")
        off, live = ptr._where(mask)
        v = torch.as_tensor(_raw(value)).to(ptr.flat.dtype).broadcast_to(off.shape)
        old = ptr.flat[off].clone()
        offs, vs = off.reshape(-1), v.reshape(-1)
        for i in live.reshape(-1).nonzero().flatten().tolist():
            ptr.flat[offs[i]] = op(ptr.flat[offs[i]], vs[i])
        return Tensor(old, _layout_of(ptr, mask))

    return atomic


def _asm(asm: str, constraints: str, args, dtype, is_pure: bool = True, pack: int = 1, **_):
    """The inline PTX forms the W12 kernels use, in PyTorch; anything else raises."""
    a = [_raw(x) for x in args]
    if asm.startswith("shfl.sync.idx.b32 $0, $1, $2, 31, -1;"):
        return _shuffle(*args)
    if re.fullmatch(MMA_SYNC, asm.strip()):
        return _mma_sync(*args)
    for pattern, fn in _ASM:
        m = re.fullmatch(pattern, asm.strip())
        if m:
            out = fn(m, *a)
            if isinstance(out, tuple):
                return tuple(Tensor(o, getattr(args[0], "layout", None)) for o in out)
            return Tensor(out, getattr(args[0], "layout", None) if args else None)
    raise EmulationError(f"inline asm not modelled: {asm!r}")


def _shuffle(v: Tensor, src: Tensor) -> Tensor:
    """shfl.sync.idx where a warp's 32 lanes hold a row's 32 columns, one each (a BlockedLayout
    [., 1] / [., 32]): each element takes its row's value at column src."""
    layout = v.layout
    if not _lanes_on_columns(v):
        raise EmulationError(f"shfl.sync.idx modelled only with lanes along 32 columns: {layout}")
    return Tensor(torch.gather(v.t, -1, src.t.long().broadcast_to(v.t.shape)), layout)


def _lanes_on_columns(v: Tensor) -> bool:
    """Whether a warp's 32 lanes hold v's last dimension of 32, one element each (a
    BlockedLayout [., 1] / [., 32]): the warp-level forms `_asm` models see their lanes so."""
    layout = v.layout
    return (
        isinstance(layout, _gl.BlockedLayout) and layout.threads_per_warp[-1] == 32
        and layout.size_per_thread[-1] == 1 and v.shape[-1] == 32
    )  # fmt: skip


# mma.sync m16n8k16, bf16 in, fp32 sums, as one inline PTX (kernels/w12_mma.py's form): A in
# $4-$7, B in $8-$9, C in $10-$13 (tied to the outputs $0-$3)
MMA_SYNC = (r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32 \{\$0, \$1, \$2, \$3\}, "
            r"\{\$4, \$5, \$6, \$7\}, \{\$8, \$9\}, \{\$10, \$11, \$12, \$13\};")  # fmt: skip


def _mma_sync(*args: Tensor) -> tuple[Tensor, ...]:
    """mma.sync m16n8k16 (bf16 x bf16 + fp32) where every operand is [..., 32] with a warp's 32
    lanes along the last dimension, one element each (a BlockedLayout [., 1] / [., 32]): each
    warp's A [16, 16], B [16, 8] and C [16, 8] gathered from its lanes as PTX lays the fragments
    out (lane 4 g + c: A's registers rows g, g + 8 at k 2c, 2c + 1, then the same at k 2c + 8,
    2c + 9, two bf16 a register, the lower k in the low half; B's column g at k 2c, 2c + 1 and
    2c + 8, 2c + 9; C's and D's rows g, g + 8 at columns 2c, 2c + 1), D = A B + C in fp32 (the
    products exact, the sums in PyTorch's order), scattered back the same way."""
    layout = args[0].layout
    for v in args:
        if not _lanes_on_columns(v) or v.shape != args[0].shape:
            raise EmulationError(f"mma.sync modelled only with lanes along 32 columns: {v.layout}")
    shape = args[0].t.shape
    regs = [v.t.reshape(-1, 32) for v in args]  # [warps, lanes] each
    warps = regs[0].shape[0]
    lane = torch.arange(32)
    g, c = lane // 4, lane % 4

    def halves(word: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = word.contiguous().view(torch.bfloat16).view(warps, 32, 2).float()
        return h[..., 0], h[..., 1]

    a = torch.zeros(warps, 16, 16)
    for r, (dr, dk) in enumerate([(0, 0), (8, 0), (0, 8), (8, 8)]):  # a0..a3
        lo, hi = halves(regs[r].to(torch.int32))
        a[:, g + dr, 2 * c + dk], a[:, g + dr, 2 * c + dk + 1] = lo, hi
    b = torch.zeros(warps, 16, 8)
    for r, dk in enumerate([0, 8]):  # b0, b1
        lo, hi = halves(regs[4 + r].to(torch.int32))
        b[:, 2 * c + dk, g], b[:, 2 * c + dk + 1, g] = lo, hi
    acc = torch.zeros(warps, 16, 8)
    for r, (dr, dn) in enumerate([(0, 0), (0, 1), (8, 0), (8, 1)]):  # c0..c3
        acc[:, g + dr, 2 * c + dn] = regs[6 + r].float()
    d = acc + a @ b
    outs = [d[:, g + dr, 2 * c + dn] for dr, dn in [(0, 0), (0, 1), (8, 0), (8, 1)]]
    return tuple(Tensor(o.reshape(shape).contiguous(), layout) for o in outs)


def _prmt(m, a, b) -> torch.Tensor:
    from specpilot.kernels.w12_ws import prmt

    return prmt(a, b, int(m.group(1)))


def _mul_bf16x2(_m, a, b) -> torch.Tensor:
    x = a.contiguous().view(torch.bfloat16) * b.contiguous().view(torch.bfloat16)
    return x.view(torch.int32)


def _halves16(_m, a) -> tuple[torch.Tensor, torch.Tensor]:
    h = a.contiguous().view(torch.int16).view(*a.shape, 2)
    return h[..., 0].clone(), h[..., 1].clone()


def _min_u16x2_one(_m, a) -> torch.Tensor:
    h = a.contiguous().view(torch.int16).view(*a.shape, 2).long() & 0xFFFF
    return (h.clamp(max=1).to(torch.int16)).view(torch.int32).view(a.shape)


_ASM = [
    (r"prmt\.b32 \$0, \$1, \$2, (\d+);", _prmt),
    (r"mul\.rn\.bf16x2 \$0, \$1, \$2;", _mul_bf16x2),
    (r"mov\.b32 \{\$0, \$1\}, \$2;", _halves16),
    (r"\{ \.reg \.b32 one; mov\.b32 one, 65537; min\.u16x2 \$0, \$1, one; \}", _min_u16x2_one),
    (r"griddepcontrol\.(wait|launch_dependents); // \$0", lambda _m: torch.tensor(0)),
    (
        r"fence\.(acq_rel\.cta|mbarrier_init\.release\.cluster); "
        r"// \$0",
        lambda _m: torch.tensor(0),
    ),  # (one partition runs at a time)
]


def _warp_specialize(functions_and_args, worker_num_warps, worker_num_regs=None, **_):
    """Every partition started; the program's own thread waits for all of them to end, then
    returns the default partition's result."""
    sched, me = _sched(), _ctx.part
    (fn0, args0), *workers = functions_and_args
    parts = [sched.start(f"{fn0.__name__}", me.warps, fn0, tuple(args0))]
    for (fn, args), warps in zip(workers, worker_num_warps):
        parts.append(sched.start(fn.__name__, int(_raw(warps)), fn, tuple(args)))
    sched.step("warp_specialize", lambda: all(p.done for p in parts))
    return parts[0].result


def _program_id(axis) -> int:
    return _sched().pid[int(_raw(axis))]


def _num_programs(axis) -> int:
    return _sched().grid[int(_raw(axis))]


def _language() -> types.SimpleNamespace:
    """The `gl` namespace a kernel's source sees under emulation."""
    dtypes = dict(
        float32=torch.float32, float16=torch.float16, bfloat16=torch.bfloat16,
        int64=torch.int64, int32=torch.int32, int16=torch.int16, int8=torch.int8,
        uint8=torch.uint8, uint16=torch.uint16, uint32=torch.uint32, int1=torch.bool,
        float8e4nv=torch.float8_e4m3fn, float8e5=torch.float8_e5m2,
    )  # fmt: skip
    ns = types.SimpleNamespace(**dtypes)
    for name in dir(_gl):  # layouts and other plain classes as they are
        obj = getattr(_gl, name)
        if isinstance(obj, type) and name.endswith("Layout"):
            setattr(ns, name, obj)
    ns.constexpr = lambda v: _raw(v)
    ns.static_range = lambda *a: range(*_static(a, "static_range bound"))
    ns.program_id, ns.num_programs = _program_id, _num_programs
    ns.num_warps = lambda: _ctx.part.warps
    ns.arange = lambda start, end, layout=None: Tensor(
        torch.arange(*_static((start, end), "arange end"), dtype=torch.int32), layout
    )
    ns.zeros = lambda shape, dtype, layout=None: Tensor(
        torch.zeros(_static(_raw(shape), "shape"), dtype=_raw(dtype)), layout
    )
    ns.full = lambda shape, value, dtype, layout=None: Tensor(
        torch.full(_static(_raw(shape), "shape"), _raw(value), dtype=_raw(dtype)), layout
    )
    ns.zeros_like = lambda x: Tensor(torch.zeros_like(_raw(x)), getattr(x, "layout", None))
    ns.load, ns.store, ns.where = _load, _store, _where
    ns.sum = lambda x, axis=None, keep_dims=False, **_: _reduce(torch.sum, x, axis, keep_dims)
    ns.max = lambda x, axis=None, keep_dims=False, **_: _reduce(torch.amax, x, axis, keep_dims)
    ns.min = lambda x, axis=None, keep_dims=False, **_: _reduce(torch.amin, x, axis, keep_dims)
    ns.xor_sum = lambda x, axis=None, keep_dims=False, **_: _reduce(_xor_all, x, axis, keep_dims)
    ns.minimum, ns.maximum = _binary_fn(torch.minimum), _binary_fn(torch.maximum)
    ns.exp, ns.exp2, ns.log = _unary_fn(torch.exp), _unary_fn(torch.exp2), _unary_fn(torch.log)
    ns.rsqrt, ns.sqrt, ns.abs = _unary_fn(torch.rsqrt), _unary_fn(torch.sqrt), _unary_fn(torch.abs)
    ns.cdiv = lambda a, b: (a + b - 1) // b
    ns.reshape = lambda x, shape, can_reorder=False: Tensor(
        _raw(x).reshape(_static(_raw(shape), "shape")), x.layout
    )
    ns.permute = lambda x, dims: Tensor(_raw(x).permute(*[int(d) for d in _raw(dims)]), x.layout)
    ns.join = lambda a, b: Tensor(torch.stack(torch.broadcast_tensors(a.t, b.t), -1), a.layout)
    ns.split = lambda x: (Tensor(x.t[..., 0], x.layout), Tensor(x.t[..., 1], x.layout))
    ns.expand_dims = lambda x, axis: Tensor(_raw(x).unsqueeze(int(_raw(axis))), x.layout)
    ns.convert_layout = lambda x, layout, *_, **__: Tensor(_raw(x), layout)
    ns.inline_asm_elementwise = _asm
    ns.allocate_shared_memory = _allocate
    ns.warp_specialize = _warp_specialize
    ns.thread_barrier = lambda: None
    ns.atomic_add = _atomic(torch.add)
    ns.atomic_xchg = _atomic(lambda _old, new: new)
    ns.atomic_min, ns.atomic_max = _atomic(torch.minimum), _atomic(torch.maximum)
    return ns


def _wait(bar: Barrier, phase, pred=True, deps=(), **_) -> None:
    if not bool(_raw(pred)):
        return
    parity, site = int(_raw(phase)) & 1, _site()
    _sched().step(
        lambda: f"waits at {site} for parity {parity} of {bar.describe()}",
        lambda: bar.completed % 2 != parity,
    )


def _arrive(bar: Barrier, *, count=1, pred=True, **_) -> None:
    _sched().step(f"arrive at {_site()}")
    if bool(_raw(pred)):
        bar._arrive(int(_raw(count)))


def _expect(bar: Barrier, nbytes, pred=True, **_) -> None:
    _sched().step(f"expect at {_site()}")
    if bool(_raw(pred)):
        bar._arrive(1, int(_raw(nbytes)))


def _init(bar: Barrier, count, **_) -> None:
    bar.count = bar.pending = int(_raw(count))


def _copy_in(desc: Descriptor, coord, bar: Barrier, result: Shared, pred=True, **_) -> None:
    if not bool(_raw(pred)):
        return
    if list(result.data.shape) != desc.block_shape:
        raise EmulationError(
            f"TMA box {desc.block_shape} of {desc.name} into a buffer {list(result.data.shape)} "
            f"({_site()})"
        )
    coord = [int(_raw(c)) for c in coord]
    site = _site()

    def land() -> None:
        result.data.copy_(desc.box(coord))
        bar._bytes_landed(desc.block_type.nbytes)

    sched = _sched()
    sched.step(f"TMA copy at {site}")
    sched.copy(land)


def _mma(a, b: Shared, acc, *, use_acc=True, is_async=False, **_) -> Tensor:
    for operand in (a, b):
        if isinstance(operand, Shared):
            _async_read(operand, "wgmma")
    ta = a.data if isinstance(a, Shared) else _raw(a)
    prod = ta.float() @ b.data.float()
    base = _raw(acc) if bool(_raw(use_acc)) else torch.zeros_like(_raw(acc))
    return Tensor(base + prod.to(base.dtype), getattr(acc, "layout", None))


def _mma_v2(a, b, acc, **_) -> Tensor:
    """mma.sync (ampere.mma_v2): both operands in registers, acc plus their product."""
    prod = _raw(a).float() @ _raw(b).float()
    return Tensor(_raw(acc) + prod.to(_raw(acc).dtype), getattr(acc, "layout", None))


def _mma_wait(num_outstanding=0, deps=None, **_):
    return deps[0] if len(deps) == 1 else tuple(deps)


_REPLACE = {
    id(_gl): _language,
    id(_mbarrier): lambda: types.SimpleNamespace(
        init=_init,
        wait=_wait,
        arrive=_arrive,
        expect=_expect,
        invalidate=lambda *a, **k: None,
        MBarrierLayout=_mbarrier.MBarrierLayout,
    ),
    id(_tma): lambda: types.SimpleNamespace(
        async_copy_global_to_shared=_copy_in,
        store_wait=lambda *a, **k: None,
    ),
    id(_hopper.fence_async_shared): lambda: lambda *a, **k: _fence(),
    id(_hopper.warpgroup_mma): lambda: _mma,
    id(_hopper.warpgroup_mma_wait): lambda: _mma_wait,
    id(_ampere.mma_v2): lambda: _mma_v2,
}
_MODULES: dict[str, dict] = {}


def _emulated_globals(module_name: str) -> dict:
    """A kernel module's globals with the Gluon language replaced and its @gluon.jit functions
    (its own and those it imports) as plain emulated functions."""
    if module_name in _MODULES:
        return _MODULES[module_name]
    g: dict = {}
    _MODULES[module_name] = g
    for name, value in vars(sys.modules[module_name]).items():
        if id(value) in _REPLACE:
            value = _REPLACE[id(value)]()
        elif isinstance(value, _constexpr):
            value = value.value
        g[name] = value
    for name, value in list(g.items()):
        if isinstance(value, GluonJITFunction):
            g[name] = _emulated(value)
    return g


def _emulated(jit_fn: GluonJITFunction) -> types.FunctionType:
    fn = jit_fn.fn
    g = _emulated_globals(fn.__module__)
    key = f"__emulated_{fn.__name__}"
    if key not in g:
        out = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)
        out.__kwdefaults__ = fn.__kwdefaults__
        g[key] = out
    return g[key]


def _argument(name: str, v, constexpr: bool):
    if isinstance(v, torch.Tensor):
        return Pointer.of(v, name)
    if isinstance(v, TensorDescriptor):
        return Descriptor(v, name)
    v = _raw(v)
    return _RuntimeInt(v) if type(v) is int and not constexpr else v


def _launch(jit_fn: GluonJITFunction, grid, args: tuple, kwargs: dict, state: dict) -> None:
    _MODULES.clear()  # the modules' globals as they are now (a test may have patched them)
    fn = _emulated(jit_fn)
    params = inspect.signature(jit_fn.fn).parameters
    options = {k: kwargs.pop(k) for k in list(kwargs) if k not in params and k in _LAUNCH_OPTIONS}
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    warps = int(bound.arguments.get("num_warps", options.get("num_warps", 4)))
    constexprs = {p.name for p in jit_fn.params if p.is_constexpr}
    call = {k: _argument(k, v, k in constexprs) for k, v in bound.arguments.items()}
    if callable(grid):
        grid = grid(dict(bound.arguments))
    grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
    state["launches"] += 1
    for z in range(grid[2]):
        for y in range(grid[1]):
            for x in range(grid[0]):
                sched = _Scheduler(state["rng"], (x, y, z), grid)
                sched.run(jit_fn.fn.__name__, warps, fn, tuple(call.values()))
                state["steps"] += sched.steps


def active() -> bool:
    """Whether Gluon launches run on this emulator now (inside `gluon()`)."""
    return launch.GLUON_EMULATED


@contextlib.contextmanager
def gluon(sms: int = 4, seed: int = 0) -> Iterator[dict]:
    """Inside: every Gluon kernel launch (`kernel[grid](...)`) runs on this emulator, with CPU
    tensors; launchers see `sms` SMs (launch._sm_count) and take CPU tensors
    (launch.gluon_device). seed: the scheduler's choices (which partition goes on, when copies
    land). Yields a dict counting the launches and the scheduler's steps."""
    state = {"rng": random.Random(seed), "launches": 0, "steps": 0}
    original = GluonJITFunction.__getitem__
    sm_count = launch._sm_count

    def getitem(self, grid):
        return lambda *a, **kw: _launch(self, grid, a, kw, state)

    GluonJITFunction.__getitem__ = getitem
    launch._sm_count = lambda index: sms
    launch.GLUON_EMULATED = True
    try:
        yield state
    finally:
        GluonJITFunction.__getitem__ = original
        launch._sm_count = sm_count
        launch.GLUON_EMULATED = False
