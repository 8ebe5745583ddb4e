"""How the engine's Triton kernels are launched on the GPU: two process-wide switches that the
Generator sets from its EngineConfig (`configure`), read by every launcher.

- Programmatic dependent launch (PDL, Hopper and later): a kernel launched with it may start while
  the kernel before it in the stream is still finishing. Its programs first let the next kernel
  launch (`gdc_launch_dependents`), then wait for the previous one to complete (`gdc_wait`)
  before they read anything it wrote or write anything at all, so the order of effects is that of
  a plain launch. A Qwen3-8B decode forward is ~250 dependent launches, most a few microseconds;
  with plain launches each boundary drains one grid before the next one is scheduled.
- Weight prefetch (the skinny multiply): the first weight tile is loaded before that wait (the
  weights never change during a forward), then each step loads the next tile while it computes
  with the last one.

Both are off until measured on the H200 (docs/LOG.md). The settings are read when a kernel is
launched, so a CUDA graph keeps the ones it was captured with; the last Generator built sets them.
"""

from __future__ import annotations

import functools

import torch

from specpilot.kernels import interpreted

_SETTINGS = {"pdl": False, "prefetch": False}


def configure(pdl: bool, prefetch: bool) -> None:
    """Switch programmatic dependent launch and the skinny multiply's weight prefetch."""
    _SETTINGS.update(pdl=pdl, prefetch=prefetch)


def settings() -> dict[str, bool]:
    return dict(_SETTINGS)


@functools.cache
def _hopper_or_later(index: int) -> bool:
    return torch.cuda.get_device_capability(index)[0] >= 9


def pdl(t: torch.Tensor) -> dict[str, bool]:
    """The launch keyword (`launch_pdl`) and kernel constant (`PDL`) for a kernel on t's device:
    on where asked for, on a CUDA device that has it (never under the interpreter)."""
    on = (
        _SETTINGS["pdl"]
        and t.is_cuda
        and not interpreted()
        and _hopper_or_later(t.device.index or 0)
    )
    return {"PDL": on, "launch_pdl": on}


def prefetch() -> bool:
    """Whether the skinny multiply prefetches its weight tiles (any device: it is plain Triton)."""
    return _SETTINGS["prefetch"]
