"""W12: bf16 weights in 12 bits each, decoded back bit for bit (lossless).

A bf16 weight is sign (1 bit), exponent (8), mantissa (7). Trained weights use few exponents
per neighbourhood, so W12 keeps each row's weights in groups of `group_size` consecutive
columns (along K) with one base exponent per group, and per weight:
- `sign_mant` [N, K] uint8: sign << 7 | mantissa (the bf16 bits without the exponent);
- `codes` [N, ceil(K / 2)] uint8: a 4-bit exponent code per weight, two per byte (column 2j in
  the low nibble, 2j + 1 in the high one; an odd K pads the last high nibble with ESCAPE).
  Code c in 0..14 means exponent = base + c; code ESCAPE (15) means "not in the window".
- `base` [N, ceil(K / group_size)] uint8: the group's base exponent, chosen to cover the most
  weights of the group (0 <= base <= 241, so base + 14 is a valid exponent);
- escapes, one CSR table per tensor: `row_ptr` [N + 1] int32 (absolute offsets), `esc_col`
  [E] int32 and `esc_bits` [E] int16, the exact bf16 bits of every weight with code ESCAPE,
  row-major. Zeros, subnormals, infinities and NaNs need no special case: their exponent
  (0 or 255) is either in the window or escaped like any other.

Bytes per weight: 1.5 + 1 / group_size + 4 / K + 6 x (escape rate). A kernel reads the two
planes with row-contiguous loads, rebuilds `sign << 15 | (base + code) << 7 | mantissa` in
registers, and adds the escaped weights' products from the CSR table (kernels/w12_linear.py).
Everything is per row, so row slices (`rows`) are views and `cat` stacks tensors along N.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

ESCAPE = 15
WINDOW = 15  # exponents base .. base + 14 are coded; code 15 escapes
MAX_BASE = 255 - (WINDOW - 1)
DEFAULT_GROUP_SIZE = 128
# NOTE: the encoder works on row chunks of about this many weights, which bounds its temporaries
# (a few int64 copies) to a few hundred MB for any tensor size.
CHUNK_WEIGHTS = 1 << 23


@dataclass
class W12Weight:
    """One [N, K] bf16 weight in W12 form; see the module doc for the layout."""

    sign_mant: torch.Tensor  # [N, K] uint8
    codes: torch.Tensor  # [N, ceil(K / 2)] uint8
    base: torch.Tensor  # [N, ceil(K / group_size)] uint8
    row_ptr: torch.Tensor  # [N + 1] int32, absolute offsets into esc_col / esc_bits
    esc_col: torch.Tensor  # [E] int32
    esc_bits: torch.Tensor  # [E] int16, bf16 bit patterns
    group_size: int

    def __post_init__(self) -> None:
        n, k = self.sign_mant.shape
        g = self.group_size
        expect = {
            "codes": ((n, (k + 1) // 2), torch.uint8),
            "base": ((n, -(-k // g)), torch.uint8),
            "row_ptr": ((n + 1,), torch.int32),
        }
        if self.sign_mant.dtype != torch.uint8:
            raise ValueError(f"W12 sign_mant must be uint8, got {self.sign_mant.dtype}")
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
        n, k = self.sign_mant.shape
        return n, k

    @property
    def device(self) -> torch.device:
        return self.sign_mant.device

    @property
    def num_escapes(self) -> int:
        """Escapes of these rows (a row slice shares its parent's escape arrays)."""
        return int(self.row_ptr[-1] - self.row_ptr[0])

    def nbytes(self) -> int:
        """Bytes this tensor occupies on its own (its rows' share of the escape table)."""
        dense = self.sign_mant.numel() + self.codes.numel() + self.base.numel()
        return dense + 4 * self.row_ptr.numel() + 6 * self.num_escapes

    def rows(self, start: int, stop: int) -> W12Weight:
        """Rows [start, stop) as views: the planes are row-major, row_ptr stays absolute."""
        return W12Weight(
            self.sign_mant[start:stop],
            self.codes[start:stop],
            self.base[start:stop],
            self.row_ptr[start : stop + 1],
            self.esc_col,
            self.esc_bits,
            self.group_size,
        )

    def __getitem__(self, rows: slice) -> W12Weight:
        """`w[a:b]` = `w.rows(a, b)`, so code that slices bf16 weights by rows works as is."""
        if not isinstance(rows, slice) or rows.step not in (None, 1):
            raise TypeError("a W12 weight can only be sliced by a range of rows")
        start, stop, _ = rows.indices(self.shape[0])
        return self.rows(start, max(start, stop))

    def to(self, device: torch.device | str) -> W12Weight:
        return W12Weight(
            *(t.to(device) for t in self.tensors().values()), group_size=self.group_size
        )

    def tensors(self) -> dict[str, torch.Tensor]:
        """The six arrays by name (checkpoint keys are `<weight name>.<array name>`)."""
        return {
            "sign_mant": self.sign_mant,
            "codes": self.codes,
            "base": self.base,
            "row_ptr": self.row_ptr,
            "esc_col": self.esc_col,
            "esc_bits": self.esc_bits,
        }

    @classmethod
    def from_tensors(cls, arrays: dict[str, torch.Tensor], group_size: int) -> W12Weight:
        return cls(**{name: arrays[name] for name in ARRAYS}, group_size=group_size)


ARRAYS = ("sign_mant", "codes", "base", "row_ptr", "esc_col", "esc_bits")


def _best_base(exponent: torch.Tensor, group_size: int) -> torch.Tensor:
    """exponent [R, K] uint8 -> [R, groups] uint8 base exponents covering most of each group."""
    r, k = exponent.shape
    groups = -(-k // group_size)
    pad = groups * group_size - k
    e = torch.nn.functional.pad(exponent, (0, pad)).view(r * groups, group_size)
    slot = torch.arange(r * groups, device=e.device, dtype=torch.int32)[:, None] * 256 + e
    counts = torch.bincount(slot.flatten(), minlength=r * groups * 256).view(r, groups, 256)
    counts[:, -1, 0] -= pad  # the padding columns were counted as exponent 0
    cum = counts.view(r * groups, 256).cumsum(1)  # cum[:, b] = number of exponents <= b
    covered = cum[:, WINDOW - 1 :] - torch.nn.functional.pad(cum[:, :MAX_BASE], (1, 0))
    # covered[:, b] = number of exponents in [b, b + 14], b = 0 .. MAX_BASE
    return covered.argmax(1).view(r, groups).to(torch.uint8)  # NOTE: ties take the lowest base


def encode(weight: torch.Tensor, group_size: int = DEFAULT_GROUP_SIZE) -> W12Weight:
    """bf16 [N, K] -> W12Weight on the same device; `decode` inverts it bit for bit."""
    if weight.dtype != torch.bfloat16 or weight.dim() != 2:
        raise ValueError(f"W12 encodes 2-D bf16 weights, got {tuple(weight.shape)} {weight.dtype}")
    if group_size < 1:
        raise ValueError(f"W12 group size must be >= 1, got {group_size}")
    n, k = weight.shape
    if k == 0:
        raise ValueError("W12 needs at least one column")
    chunk = max(1, CHUNK_WEIGHTS // k)
    sign_mant, codes, bases, counts, cols, esc_bits = [], [], [], [], [], []
    for r0 in range(0, n, chunk):
        bits = weight[r0 : r0 + chunk].contiguous().view(torch.int16)
        rows = bits.shape[0]
        exponent = ((bits >> 7) & 0xFF).to(torch.uint8)
        base = _best_base(exponent, group_size)
        # uint8 arithmetic wraps, so exponents below the window land at >= 256 - 241 = 15 too
        code = exponent - base.repeat_interleave(group_size, dim=1)[:, :k]
        escaped = code >= ESCAPE
        code = code.clamp_(max=ESCAPE)
        if k % 2:
            code = torch.nn.functional.pad(code, (0, 1), value=ESCAPE)
        pairs = code.view(rows, -1, 2)
        codes.append(pairs[..., 0] | (pairs[..., 1] << 4))
        sign_mant.append((((bits >> 8) & 0x80) | (bits & 0x7F)).to(torch.uint8))
        bases.append(base)
        row, col = escaped.nonzero(as_tuple=True)  # row-major order
        counts.append(torch.bincount(row, minlength=rows))
        cols.append(col.to(torch.int32))
        esc_bits.append(bits[row, col])
    per_row = torch.cat(counts)
    row_ptr = torch.nn.functional.pad(per_row.cumsum(0), (1, 0)).to(torch.int32)
    return W12Weight(
        torch.cat(sign_mant),
        torch.cat(codes),
        torch.cat(bases),
        row_ptr,
        torch.cat(cols),
        torch.cat(esc_bits),
        group_size,
    )


def decode(w: W12Weight) -> torch.Tensor:
    """W12Weight -> the original bf16 [N, K], exactly."""
    n, k = w.shape
    code_pairs = w.codes.to(torch.int32)
    code = torch.stack([code_pairs & 15, code_pairs >> 4], dim=-1).view(n, -1)[:, :k]
    col_group = torch.arange(k, device=w.device) // w.group_size
    exponent = w.base.to(torch.int32)[:, col_group] + code
    sm = w.sign_mant.to(torch.int32)
    bits = ((sm & 0x80) << 8) | ((exponent << 7) & 0x7F80) | (sm & 0x7F)
    lo, hi = int(w.row_ptr[0]), int(w.row_ptr[-1])
    if hi > lo:
        per_row = (w.row_ptr[1:] - w.row_ptr[:-1]).long()
        row = torch.repeat_interleave(torch.arange(n, device=w.device), per_row)
        col = w.esc_col[lo:hi].long()
        bits[row, col] = w.esc_bits[lo:hi].to(torch.int32) & 0xFFFF
    # NOTE: the escape table is the only source of an escaped weight: a code of ESCAPE
    # without a table entry would be a corrupt tensor, caught here
    missing = (code == ESCAPE).sum().item() - (hi - lo)
    if missing:
        raise ValueError(f"W12 tensor is corrupt: {missing} escape codes without table entries")
    signed = bits - ((bits & 0x8000) << 1)  # 0..65535 -> the int16 with those bits
    return signed.to(torch.int16).view(torch.bfloat16)


def cat(weights: list[W12Weight]) -> W12Weight:
    """Stack W12 weights along N (rows), like torch.cat(dim=0) of the bf16 weights."""
    if not weights:
        raise ValueError("cat needs at least one W12 weight")
    k, g = weights[0].shape[1], weights[0].group_size
    if any(w.shape[1] != k or w.group_size != g for w in weights):
        raise ValueError("cat needs W12 weights of one K and one group size")
    row_ptrs, cols, bits, offset = [], [], [], 0
    for w in weights:
        lo, hi = int(w.row_ptr[0]), int(w.row_ptr[-1])
        row_ptrs.append(w.row_ptr[(1 if row_ptrs else 0) :] - lo + offset)
        cols.append(w.esc_col[lo:hi])
        bits.append(w.esc_bits[lo:hi])
        offset += hi - lo
    return W12Weight(
        torch.cat([w.sign_mant for w in weights]),
        torch.cat([w.codes for w in weights]),
        torch.cat([w.base for w in weights]),
        torch.cat(row_ptrs),
        torch.cat(cols),
        torch.cat(bits),
        g,
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
