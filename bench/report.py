"""The JSON report every bench script writes: to --out (also part-way, so that what was measured
before a timeout survives) and, at the end, as the last line printed."""

from __future__ import annotations

import json


def save(report: dict, out: str | None) -> None:
    """Write `report` to the file `out` (nothing when out is empty)."""
    if out:
        with open(out, "w") as f:
            json.dump(report, f, indent=1)


def finish(report: dict, out: str | None) -> None:
    """`save`, then print the report as one JSON line (what a program reads)."""
    save(report, out)
    print(json.dumps(report))
