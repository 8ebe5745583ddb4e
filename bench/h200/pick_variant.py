"""The variant of a bench/timeline.py --variants report whose decode plus verify forward is
fastest back to back (untraced), among the variants whose names start with PREFIX: prints its
name (for a device script's next step)."""

from __future__ import annotations

import json
import sys

path, prefix = sys.argv[1], sys.argv[2]
report = json.load(open(path))
scores = {}
for name, forwards in report["arms"].items():
    variant = name.split(" ", 1)[1]
    if variant.startswith(prefix):
        scores[variant] = sum(forwards[f]["untraced_back_to_back_ms"] for f in ("decode", "verify"))
print(min(scores, key=scores.get))
