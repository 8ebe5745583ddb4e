"""A stand-in for engine/graphs.GraphCache on the CPU: each forward runs eagerly, its key is
recorded, and a `gate` is honoured as CapturedForward honours it (asked before the launch;
no: nothing runs, None)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class RecordingGraphs:
    def __init__(self) -> None:
        self.keys: set[tuple] = set()

    def get(self, key: tuple, fn: Callable[..., Any]) -> Callable[..., Any]:
        self.keys.add(key)

        def call(gate: Callable[[], bool] | None = None, **inputs: Any) -> Any:
            return None if gate is not None and not gate() else fn(**inputs)

        return call

    def clear(self) -> None:
        pass
