"""A deployment's own measured tiles, from a file (EngineConfig.tiles).

The multiplies' tile tables (`MEASURED_TILES` of kernels/linear.py and kernels/w12_linear.py)
hold the tiles that beat the rules on our H200. Another GPU, or the same one after a new sweep,
has its own winners: bench/w12_speed.py --tiles-out writes them (from the sweeps of
bench/kernel_sweep.py and bench/w12_speed.py), and a file given as EngineConfig.tiles puts them
over the compiled-in table for the whole process (like kernels/launch.py's switches). The tiles
change only the order of the sums inside a multiply, as between any two tiles.

The file: {"tiles": [{"kernel": KIND, "rows": R, "n": N, "k": K, "tile": {...}}]}, KIND one
of "bf16", "w12", "fp8" and "certified" (a certified head's int8 multiply)
(rows: 1, 16 for any 2-16 rows, or the exact count above 16; see linear.tile_rows).
"""

from __future__ import annotations

import json
from pathlib import Path

from specpilot.errors import ConfigError
from specpilot.kernels import linear, w12_linear

# the keys a tile of each kernel may set (its launcher's tile parameters)
_SKINNY_KEYS = {"BLOCK_M", "BLOCK_N", "BLOCK_K", "USE_DOT", "SPLIT_K", "LOOP_STAGES", "TMA",
                "W_LEFT", "num_warps", "num_stages", "maxnreg"}  # fmt: skip
TILE_KEYS = {
    "bf16": _SKINNY_KEYS,
    "w12": {"BLOCK_M", "BLOCK_N", "UNROLL", "USE_DOT", "SPLIT_K", "SPLIT_IN", "LOOP_STAGES",
            "ACC_SCALE", "ESC_IN_LOOP", "HALVES", "ASM", "ESC_ROWS", "num_warps", "num_stages",
            "maxnreg"},
    "fp8": _SKINNY_KEYS,  # the skinny multiply by FP8 weights (the drafter's)
    # a certified head's int8 multiply (no K split, TMA or W_LEFT: linear.certified_argmax;
    # F16: its sums on fp16 tensor cores, formats/certified.py)
    "certified": (_SKINNY_KEYS - {"SPLIT_K", "TMA", "W_LEFT"}) | {"F16"},
}  # fmt: skip
# the module and table each kind goes into
TABLES = {
    "bf16": (linear, "MEASURED_TILES"),
    "w12": (w12_linear, "MEASURED_TILES"),
    "fp8": (linear, "FP8_TILES"),
    "certified": (linear, "CERTIFIED_TILES"),
}


def tables() -> dict[str, dict]:
    """Copies of the tile tables as they are now, by kind (for `restore`)."""
    return {kind: dict(getattr(module, name)) for kind, (module, name) in TABLES.items()}


def read(path: str | Path) -> dict[str, dict[tuple[int, int, int], dict]]:
    """The file's tiles by kernel kind and (rows, N, K); a clear ConfigError for anything else."""
    try:
        entries = json.loads(Path(path).read_text())["tiles"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"tiles file {path}: not a {{'tiles': [...]}} JSON file ({exc})") from exc
    out: dict[str, dict] = {kind: {} for kind in TILE_KEYS}
    for i, e in enumerate(entries if isinstance(entries, list) else [None]):
        where = f"tiles file {path}, entry {i}"
        if not isinstance(e, dict) or e.get("kernel") not in TILE_KEYS:
            raise ConfigError(f"{where}: wants kernel {'/'.join(TILE_KEYS)}, rows, n, k, tile")
        shape = tuple(e.get(key) for key in ("rows", "n", "k"))
        if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in shape):
            raise ConfigError(f"{where}: rows, n and k must be positive integers, got {shape}")
        if shape[0] != linear.tile_rows(shape[0]):
            raise ConfigError(f"{where}: rows {shape[0]} is not a table row count (1, 16, > 16)")
        tile = e.get("tile")
        if not isinstance(tile, dict) or not tile:
            raise ConfigError(f"{where}: tile must be a non-empty object")
        unknown = set(tile) - TILE_KEYS[e["kernel"]]
        if unknown:
            raise ConfigError(f"{where}: unknown {e['kernel']} tile keys {sorted(unknown)}")
        out[e["kernel"]][shape] = dict(tile)
    return out


def install(tiles: dict[str, dict[tuple[int, int, int], dict]]) -> dict[str, dict]:
    """Put a file's tiles (`read`) over the compiled-in MEASURED_TILES (process-wide); returns
    the tables as they were, for `restore`."""
    before = tables()
    for kind, (module, name) in TABLES.items():
        setattr(module, name, before[kind] | tiles.get(kind, {}))
    return before


def restore(before: dict[str, dict]) -> None:
    for kind, (module, name) in TABLES.items():
        setattr(module, name, dict(before[kind]))


def to_json(tiles: dict[str, dict[tuple[int, int, int], dict]]) -> dict:
    """{kind: {(rows, N, K): tile}} -> a tiles file's content."""
    return {
        "tiles": [
            dict(kernel=kind, rows=rows, n=n, k=k, tile=tile)
            for kind, table in tiles.items()
            for (rows, n, k), tile in sorted(table.items())
        ]
    }


def write(path: str | Path, tiles: dict[str, dict[tuple[int, int, int], dict]]) -> None:
    """{kind: {(rows, N, K): tile}} -> a tiles file that `read` takes back."""
    Path(path).write_text(json.dumps(to_json(tiles), indent=1) + "\n")
