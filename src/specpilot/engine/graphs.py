"""CUDA graphs: capture a forward once per shape bucket, then replay it.

A `CapturedForward` owns static input buffers; each call copies the new inputs into them and
replays the graph, whose outputs live in static buffers too (valid until the next call). The first
call runs the function eagerly twice on a side stream (warm-up: cuBLAS handles, allocator), captures
it, and replays it. The warm-up runs are real forwards over the real inputs: they write the same
keys and values into the caches that the replay writes, so capturing in the middle of a generation
is safe. Everything a captured forward touches (caches, rotary tables, weights) must keep its
address for the graph's lifetime; the generator drops its graphs whenever it replaces a cache.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


class CapturedForward:
    """fn captured (see the module doc). `feed(inputs, outputs)`, when given, is captured after
    fn (never run in the warm-up): it writes the next call's inputs into the static input
    buffers from this call's outputs, so a chain of steps replays with no input copies (call
    with no inputs after the first: the graph reads what the previous replay fed it)."""

    def __init__(
        self,
        fn: Callable[..., Any],
        pool: Any,
        feed: Callable[[dict[str, torch.Tensor], Any], None] | None = None,
    ) -> None:
        self.fn, self.pool, self.feed = fn, pool, feed
        self.graph: torch.cuda.CUDAGraph | None = None
        self.inputs: dict[str, torch.Tensor] = {}
        self.outputs: Any = None

    def __call__(self, gate: Callable[[], bool] | None = None, **inputs: torch.Tensor) -> Any:
        """Replay with `inputs` copied in (the first call captures). `gate`: asked once the
        inputs are queued, right before the launch; when it says no, nothing is launched and
        the call returns None."""
        if self.graph is None:
            if gate is not None and not gate():
                return None
            self.inputs = {name: t.clone() for name, t in inputs.items()}
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(2):
                    self.fn(**self.inputs)
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph, pool=self.pool):
                self.outputs = self.fn(**self.inputs)
                if self.feed is not None:
                    self.feed(self.inputs, self.outputs)
        else:
            for name, tensor in inputs.items():
                self.inputs[name].copy_(tensor, non_blocking=True)
            if gate is not None and not gate():
                return None
        self.graph.replay()
        return self.outputs


class GraphCache:
    """Captured forwards by key (kind and shape); cleared when their buffers are replaced."""

    def __init__(self) -> None:
        self.graphs: dict[tuple, CapturedForward] = {}
        self.pool = None

    def get(
        self,
        key: tuple,
        fn: Callable[..., Any],
        feed: Callable[[dict[str, torch.Tensor], Any], None] | None = None,
    ) -> CapturedForward:
        """The forward captured under `key` (made on first use; `feed`: CapturedForward's,
        part of what the key names)."""
        if self.pool is None:
            self.pool = torch.cuda.graph_pool_handle()
        if key not in self.graphs:
            self.graphs[key] = CapturedForward(fn, self.pool, feed)
        return self.graphs[key]

    def clear(self) -> None:
        # NOTE: a new pool too: capturing into a pool whose graphs were all freed trips an
        # allocator assertion in torch 2.11.
        self.graphs.clear()
        self.pool = None
