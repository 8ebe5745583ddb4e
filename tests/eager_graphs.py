"""A stand-in for engine/graphs.GraphCache on the CPU: each forward runs eagerly, its key is
recorded, and the rest is as CapturedForward does it: the inputs copied into static buffers per
key (cloned by the first call), a `gate` asked once they are copied (no: nothing runs, None),
and a `feed` run after the forward to write the next call's inputs into those buffers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


class RecordingGraphs:
    def __init__(self) -> None:
        self.keys: set[tuple] = set()
        self.inputs: dict[tuple, dict[str, torch.Tensor]] = {}

    def get(
        self,
        key: tuple,
        fn: Callable[..., Any],
        feed: Callable[[dict[str, torch.Tensor], Any], None] | None = None,
    ) -> Callable[..., Any]:
        self.keys.add(key)

        def call(gate: Callable[[], bool] | None = None, **inputs: torch.Tensor) -> Any:
            static = self.inputs.get(key)
            if static is None:
                if gate is not None and not gate():
                    return None
                static = self.inputs[key] = {name: t.clone() for name, t in inputs.items()}
            else:
                for name, tensor in inputs.items():
                    static[name].copy_(tensor)
                if gate is not None and not gate():
                    return None
            out = fn(**static)
            if feed is not None:
                feed(static, out)
            return out

        return call

    def clear(self) -> None:
        self.inputs.clear()
