"""W12: bf16 weights in 12 bits each, decoded back bit for bit (lossless).

A bf16 weight is sign s (1 bit), exponent e (8) and mantissa m (7): bits `s e7..e1 | e0 m6..m0`.
Trained weights use few exponents per neighbourhood, so W12 keeps each row's weights in groups of
`group_size` consecutive columns (along K) with one base b per group, and per weight:
- `low` [N, Kp] uint8: the bf16's low byte, e0 << 7 | m, exactly;
- `codes` [N, Kp / 2] uint8: a 4-bit code per weight, s << 3 | d with d = (e >> 1) - b in 0..7.
  Together these give the weight's bits with its exponent taken down by 2b: `s (e - 2b) m`;
- `base` [N, ceil(K / group_size)] uint8: the group's b in 0..MAX_BASE (63), chosen to cover the
  most weights of the group: the window is e in [2b + 1, 2b + 15] (15 exponents);
- escapes, one CSR table per tensor: `row_ptr` [N + 1] int32 (absolute offsets), `esc_col`
  [E] int32 (column in 0..K-1) and `esc_bits` [E] int16, the exact bf16 bits of every weight
  outside its group's window. An escaped weight has code 0 and low byte 0 (it reads as +0).

Zeros: a +-0 weight is in every window (code s << 3, low byte 0: it reads as +-0 whatever b is).
Escaped: subnormals (e = 0, m != 0), exponents outside the window, e > 141 (|w| >= 2^15, which
includes inf and NaN).

Exactness (why a kernel may apply the base as a scale): the weight's bits with exponent e - 2b,
read as a float R (the code and low byte put in the high half of an fp32, `s << 31 | (e - 2b) << 23
| m << 16`), is a normal fp32 for e - 2b in 1..15, and R * 2^(2b) is exactly the weight: scaling by
a power of two only moves the exponent while the result stays normal (2b + 15 <= 141 < 255) and
2^(2b) <= 2^126 is itself an fp32. A zero or escaped weight reads as R = +-0 and stays 0.

Column order (so that a kernel needs no nibble interleave and few integer ops): columns come in
blocks of BLOCK = 256, each 8 slices of SLICE = 32 consecutive columns; K is padded with zero
weights to Kp, a multiple of 256. Column c = 256 t + 32 j + i (slice j in 0..7, i in 0..31) is
- low byte 256 t + 128 (j // 4) + 4 i + j % 4: as little-endian 32-bit words, word 64 t + 32 h + i
  holds slices 4h .. 4h + 3 of position i, one per byte;
- code byte 128 t + 4 i + j % 4, low nibble for j < 4, high nibble for j >= 4: word 32 t + i holds
  the 8 codes of position i, slice q in byte q's low nibble and slice q + 4 in its high nibble.
So a kernel loads [rows, 32] words of each plane per block, and each byte lane q of a word is a
[rows, 32] tile of weights multiplying 32 consecutive columns of x (kernels/w12_linear.py).

Bytes per weight: 1.5 x Kp / K + 1 / group_size + 4 / K + 6 x (escape rate).
Everything is per row, so row slices (`rows`) are views and `cat` stacks tensors along N.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

SLICE = 32  # consecutive columns per byte lane of a word
BLOCK = 8 * SLICE  # columns per block of the column order; planes are padded to a multiple
MAX_BASE = 63  # exponents 2b + 1 .. 2b + 15 <= 141; 2^(2b) <= 2^126 is an fp32
DEFAULT_GROUP_SIZE = 128
# NOTE: the encoder works on row chunks of about this many weights, which bounds its temporaries
# (a few int64 copies) to a few hundred MB for any tensor size.
CHUNK_WEIGHTS = 1 << 23


def padded(k: int) -> int:
    """Columns of the `low` plane for K columns (a multiple of BLOCK)."""
    return -(-k // BLOCK) * BLOCK


@dataclass
class W12Weight:
    """One [N, K] bf16 weight in W12 form; see the module doc for the layout."""

    low: torch.Tensor  # [N, Kp] uint8, column order of the module doc
    codes: torch.Tensor  # [N, Kp / 2] uint8
    base: torch.Tensor  # [N, ceil(K / group_size)] uint8
    row_ptr: torch.Tensor  # [N + 1] int32, absolute offsets into esc_col / esc_bits
    esc_col: torch.Tensor  # [E] int32
    esc_bits: torch.Tensor  # [E] int16, bf16 bit patterns
    group_size: int
    columns: int  # K

    def __post_init__(self) -> None:
        n, k, g = self.low.shape[0], self.columns, self.group_size
        kp = padded(k)
        expect = {
            "low": ((n, kp), torch.uint8),
            "codes": ((n, kp // 2), torch.uint8),
            "base": ((n, -(-k // g)), torch.uint8),
            "row_ptr": ((n + 1,), torch.int32),
        }
        for name, (shape, dtype) in expect.items():
            t = getattr(self, name)
            if tuple(t.shape) != shape or t.dtype != dtype:
                raise ValueError(
                    f"W12 {name} is {tuple(t.shape)} {t.dtype}, expected {shape} {dtype} "
                    f"for a [{n}, {k}] weight with group size {g}"
                )
        if self.esc_col.dtype != torch.int32 or self.esc_bits.dtype != torch.int16:
            raise ValueError("W12 escapes must be int32 columns and int16 bits")
        if self.esc_col.shape != self.esc_bits.shape or self.esc_col.dim() != 1:
            raise ValueError("W12 esc_col and esc_bits must be 1-D of one length")

    @property
    def shape(self) -> tuple[int, int]:
        return self.low.shape[0], self.columns

    @property
    def device(self) -> torch.device:
        return self.low.device

    @property
    def num_escapes(self) -> int:
        """Escapes of these rows (a row slice shares its parent's escape arrays)."""
        return int(self.row_ptr[-1] - self.row_ptr[0])

    def nbytes(self) -> int:
        """Bytes this tensor occupies on its own (its rows' share of the escape table)."""
        return self._escape_free_bytes() + 6 * self.num_escapes

    def nbytes_bound(self) -> int:
        """`nbytes` without reading the device (so also inside a CUDA graph capture): the escape
        arrays counted whole, which for a row slice are its parent's (then an upper bound)."""
        return self._escape_free_bytes() + 6 * self.esc_col.numel()

    def _escape_free_bytes(self) -> int:
        """The planes, the group bases and the row pointers (int32): all but the escapes."""
        return self.low.numel() + self.codes.numel() + self.base.numel() + 4 * self.row_ptr.numel()

    def rows(self, start: int, stop: int) -> W12Weight:
        """Rows [start, stop) as views: the planes are row-major, row_ptr stays absolute."""
        return W12Weight(
            self.low[start:stop],
            self.codes[start:stop],
            self.base[start:stop],
            self.row_ptr[start : stop + 1],
            self.esc_col,
            self.esc_bits,
            self.group_size,
            self.columns,
        )

    def without_escapes(self) -> W12Weight:
        """The same weight with its escape table emptied: the escaped weights then decode to 0
        (a bound of what the escapes cost a kernel, and the products without them)."""
        return dataclasses.replace(
            self,
            row_ptr=torch.zeros_like(self.row_ptr),
            esc_col=self.esc_col[:0],
            esc_bits=self.esc_bits[:0],
        )

    def __getitem__(self, rows: slice) -> W12Weight:
        """`w[a:b]` = `w.rows(a, b)`, so code that slices bf16 weights by rows works as is."""
        if not isinstance(rows, slice) or rows.step not in (None, 1):
            raise TypeError("a W12 weight can only be sliced by a range of rows")
        start, stop, _ = rows.indices(self.shape[0])
        return self.rows(start, max(start, stop))

    def to(self, device: torch.device | str) -> W12Weight:
        return W12Weight(
            *(t.to(device) for t in self.tensors().values()),
            group_size=self.group_size,
            columns=self.columns,
        )

    def tensors(self) -> dict[str, torch.Tensor]:
        """The six arrays by name (checkpoint keys are `<weight name>.<array name>`)."""
        return {
            "low": self.low,
            "codes": self.codes,
            "base": self.base,
            "row_ptr": self.row_ptr,
            "esc_col": self.esc_col,
            "esc_bits": self.esc_bits,
        }

    @classmethod
    def from_tensors(
        cls, arrays: dict[str, torch.Tensor], group_size: int, columns: int
    ) -> W12Weight:
        return cls(
            **{name: arrays[name] for name in ARRAYS}, group_size=group_size, columns=columns
        )


ARRAYS = ("low", "codes", "base", "row_ptr", "esc_col", "esc_bits")


def _best_base(exponent: torch.Tensor, group_size: int) -> torch.Tensor:
    """exponent [R, K] int32 -> [R, groups] uint8 bases b covering the most exponents of each
    group in [2b + 1, 2b + 15]. Exponent 0 (zeros, subnormals, padding) is in no window."""
    r, k = exponent.shape
    groups = -(-k // group_size)
    e = torch.nn.functional.pad(exponent, (0, groups * group_size - k))
    e = e.view(r * groups, group_size)
    slot = torch.arange(r * groups, device=e.device, dtype=torch.int32)[:, None] * 256 + e
    counts = torch.bincount(slot.flatten(), minlength=r * groups * 256).view(r * groups, 256)
    cum = counts.cumsum(1)  # cum[:, x] = number of exponents <= x
    b = torch.arange(MAX_BASE + 1, device=e.device)
    covered = cum[:, 2 * b + 15] - cum[:, 2 * b]  # exponents in [2b + 1, 2b + 15]
    return covered.argmax(1).view(r, groups).to(torch.uint8)  # NOTE: ties take the lowest base


def _per_column(base: torch.Tensor, group_size: int, columns: int) -> torch.Tensor:
    """[R, groups] uint8 -> [R, columns] int32, each column's group base (padding: the last)."""
    per_col = base.to(torch.int32).repeat_interleave(group_size, dim=1)[:, :columns]
    return torch.nn.functional.pad(per_col, (0, columns - per_col.shape[1]), mode="replicate")


def _to_block_order(natural: torch.Tensor) -> torch.Tensor:
    """[R, Kp] per column in natural order -> [R, T, 2, 4, SLICE] indexed (block t, half h,
    byte q, position i): column 256 t + 32 (4 h + q) + i."""
    r, kp = natural.shape
    return natural.view(r, kp // BLOCK, 2, 4, SLICE)


def encode(weight: torch.Tensor, group_size: int = DEFAULT_GROUP_SIZE) -> W12Weight:
    """bf16 [N, K] -> W12Weight on the same device; `decode` inverts it bit for bit."""
    if weight.dtype != torch.bfloat16 or weight.dim() != 2:
        raise ValueError(f"W12 encodes 2-D bf16 weights, got {tuple(weight.shape)} {weight.dtype}")
    if group_size < 1:
        raise ValueError(f"W12 group size must be >= 1, got {group_size}")
    n, k = weight.shape
    if k == 0:
        raise ValueError("W12 needs at least one column")
    kp = padded(k)
    chunk = max(1, CHUNK_WEIGHTS // kp)
    lows, codes, bases, counts, cols, esc_bits = [], [], [], [], [], []
    for r0 in range(0, n, chunk):
        bits16 = weight[r0 : r0 + chunk].contiguous().view(torch.int16)
        rows = bits16.shape[0]
        bits = torch.nn.functional.pad(bits16.to(torch.int32) & 0xFFFF, (0, kp - k))  # +0 pads
        exponent = (bits >> 7) & 0xFF
        base = _best_base(exponent[:, :k].contiguous(), group_size)
        reduced = exponent - 2 * _per_column(base, group_size, kp)  # e - 2b
        zero = (bits & 0x7FFF) == 0
        escaped = ~zero & ((reduced < 1) | (reduced > 15))
        sign = bits >> 15
        code = torch.where(escaped, 0, (sign << 3) | torch.where(zero, 0, reduced >> 1))
        low = torch.where(escaped, 0, bits & 0xFF).to(torch.uint8)
        nib = _to_block_order(code.to(torch.uint8))  # [R, T, half, byte, position]
        codes.append((nib[:, :, 0] | (nib[:, :, 1] << 4)).transpose(2, 3).reshape(rows, kp // 2))
        lows.append(_to_block_order(low).transpose(3, 4).reshape(rows, kp))
        bases.append(base)
        row, col = escaped[:, :k].nonzero(as_tuple=True)  # row-major order
        counts.append(torch.bincount(row, minlength=rows))
        cols.append(col.to(torch.int32))
        esc_bits.append(bits16[row, col])
    per_row = torch.cat(counts)
    row_ptr = torch.nn.functional.pad(per_row.cumsum(0), (1, 0)).to(torch.int32)
    return W12Weight(
        torch.cat(lows),
        torch.cat(codes),
        torch.cat(bases),
        row_ptr,
        torch.cat(cols),
        torch.cat(esc_bits),
        group_size,
        k,
    )


def decode(w: W12Weight) -> torch.Tensor:
    """W12Weight -> the original bf16 [N, K], exactly."""
    n, k = w.shape
    kp = padded(k)
    t = kp // BLOCK
    low = w.low.view(n, t, 2, SLICE, 4).transpose(3, 4).reshape(n, kp)[:, :k].to(torch.int32)
    pairs = w.codes.view(n, t, SLICE, 4).transpose(2, 3).to(torch.int32)  # [N, T, byte, pos]
    code = torch.stack([pairs & 15, pairs >> 4], dim=2).reshape(n, kp)[:, :k]
    reduced = ((code & 7) << 1) | (low >> 7)  # e - 2b
    exponent = torch.where(reduced > 0, reduced + 2 * _per_column(w.base, w.group_size, k), 0)
    bits = ((code & 8) << 12) | (exponent << 7) | (low & 0x7F)
    lo, hi = int(w.row_ptr[0]), int(w.row_ptr[-1])
    if hi > lo:
        per_row = (w.row_ptr[1:] - w.row_ptr[:-1]).long()
        row = torch.repeat_interleave(torch.arange(n, device=w.device), per_row)
        col = w.esc_col[lo:hi].long()
        # NOTE: an escaped weight reads as +0 from the planes; anything else under a table entry
        # would be a corrupt tensor, caught here
        if bool((bits[row, col] != 0).any()):
            raise ValueError("W12 tensor is corrupt: an escape table entry over a coded weight")
        bits[row, col] = w.esc_bits[lo:hi].to(torch.int32) & 0xFFFF
    signed = bits - ((bits & 0x8000) << 1)  # 0..65535 -> the int16 with those bits
    return signed.to(torch.int16).view(torch.bfloat16)


def cat(weights: list[W12Weight]) -> W12Weight:
    """Stack W12 weights along N (rows), like torch.cat(dim=0) of the bf16 weights."""
    if not weights:
        raise ValueError("cat needs at least one W12 weight")
    k, g = weights[0].columns, weights[0].group_size
    if any(w.columns != k or w.group_size != g for w in weights):
        raise ValueError("cat needs W12 weights of one K and one group size")
    row_ptrs, cols, bits, offset = [], [], [], 0
    for w in weights:
        lo, hi = int(w.row_ptr[0]), int(w.row_ptr[-1])
        row_ptrs.append(w.row_ptr[(1 if row_ptrs else 0) :] - lo + offset)
        cols.append(w.esc_col[lo:hi])
        bits.append(w.esc_bits[lo:hi])
        offset += hi - lo
    return W12Weight(
        torch.cat([w.low for w in weights]),
        torch.cat([w.codes for w in weights]),
        torch.cat([w.base for w in weights]),
        torch.cat(row_ptrs),
        torch.cat(cols),
        torch.cat(bits),
        g,
        k,
    )


@dataclass
class W12Stats:
    """Size of one W12 tensor against its bf16 form."""

    numel: int
    nbytes: int
    num_escapes: int

    @property
    def bits_per_weight(self) -> float:
        return 8 * self.nbytes / self.numel

    @property
    def escape_rate(self) -> float:
        return self.num_escapes / self.numel


def stats(w: W12Weight) -> W12Stats:
    n, k = w.shape
    return W12Stats(numel=n * k, nbytes=w.nbytes(), num_escapes=w.num_escapes)
