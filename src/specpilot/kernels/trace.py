"""The kernel timeline: when each kernel of a captured CUDA graph starts, passes its PDL wait and
ends, read from inside the kernels themselves.

Profilers time kernels one by one outside the graphs (torch.profiler, ncu), where no kernel
overlaps its neighbours, and Nsight Systems does not run on the machine we measure on; the
engine's forwards are CUDA graphs of ~250 launches chained by programmatic dependent launch,
where what a kernel costs is how long the chain waits for it. Under `tracing(device)`, every
kernel that a launcher starts while a CUDA graph is being captured on that device (every launch,
under the CPU interpreter) gets a row of a device buffer, and its programs write into it
(kernels/common.py `trace_mark`): their first entry, their first pass of the PDL wait, their last
exit (the GPU's global nanosecond timer) and how many exited. The launcher says what it ran
(kernel, programs, bytes read); `Timeline.read` joins the two after each replay and `summary`
turns one forward's rows into the chain's account: each launch's run (first pass of the wait to
last exit) and the gap before it (from the previous launch's last exit), by kind.

Tracing adds 4 atomics a program (spread over LANES addresses a launch) and a barrier;
kernels launched without it compile as before (TRACE 0 is every kernel's default). Operations
that are not our Triton kernels (copies, PyTorch ops inside the graph) show as gaps.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from specpilot.kernels import interpreted

INT64_MAX = (1 << 63) - 1
# a launch's row: LANES lanes (programs by linear id modulo LANES, so that a grid of thousands
# of programs does not queue its atomics on one address: with one lane the timeline added
# ~0.12 ms to a 4.3 ms forward whose LM head has 19k programs, docs/LOG.md run 131), each
# holding first entry (min), first pass of the PDL wait (min), last exit (max), exits (count)
LANES = 32
ENTRY, GO, EXIT, EXITED = range(4)


class Timeline:
    """The launches traced so far, in launch order, and the buffer their kernels write (row 0:
    the interpreter's clock; launch i's row, LANES lanes of 4, is i + 1)."""

    def __init__(self, device: torch.device, capacity: int = 4096, eager: bool = False) -> None:
        self.capacity = capacity
        self.eager = eager  # on CUDA, trace launches outside a capture too
        self.buffer = torch.zeros(capacity + 1, LANES, 4, dtype=torch.int64, device=device)
        self.device = self.buffer.device  # with its index ("cuda" becomes "cuda:0")
        self.launches: list[dict] = []
        self.section = ""  # set by the caller: which forward the next launches belong to
        self.reset()

    def arguments(self, kernel: str, programs: int, meta: dict) -> dict:
        slot = len(self.launches) + 1
        if slot > self.capacity:
            raise RuntimeError(f"the timeline holds {self.capacity} launches; give it more")
        captured = self.device.type == "cuda" and torch.cuda.is_current_stream_capturing()
        self.launches.append(
            {
                "section": self.section,
                "kernel": kernel,
                "programs": programs,
                "captured": captured,  # into a CUDA graph (else run once, eagerly)
                **meta,
            }
        )
        return {
            "TRACE": 2 if interpreted() else 1,
            "trace_ptr": self.buffer[slot],
            "clock_ptr": self.buffer[0, 0],
        }

    def reset(self) -> None:
        """Ready for a replay: minima at their largest, maxima and counts at 0."""
        self.buffer[..., ENTRY] = INT64_MAX
        self.buffer[..., GO] = INT64_MAX
        self.buffer[..., EXIT:] = 0
        self.buffer[0] = 0

    def read(self, section: str | None = None) -> list[dict]:
        """Each traced launch (of `section`, else all) with its entry, go and exit times and
        exits (what its kernel wrote since the last reset; a launch that did not run reads
        exited 0)."""
        lanes = self.buffer[1 : len(self.launches) + 1]
        entry = lanes[..., ENTRY].min(dim=1).values.tolist()
        go = lanes[..., GO].min(dim=1).values.tolist()
        exit_ = lanes[..., EXIT].max(dim=1).values.tolist()
        exited = lanes[..., EXITED].sum(dim=1).tolist()
        out = []
        for i, launch in enumerate(self.launches):
            if section is None or launch["section"] == section:
                out.append(
                    launch | {"entry": entry[i], "go": go[i], "exit": exit_[i], "exited": exited[i]}
                )
        return out


_ACTIVE: list[Timeline] = []


@contextlib.contextmanager
def tracing(device: torch.device, capacity: int = 4096, eager: bool = False) -> Iterator[Timeline]:
    """Trace the kernels launched inside on `device`: on CUDA those captured into a graph, and
    with `eager` the others too (e.g. to compile the traced kernels before a capture)."""
    timeline = Timeline(device, capacity, eager)
    _ACTIVE.append(timeline)
    try:
        yield timeline
    finally:
        _ACTIVE.remove(timeline)


def arguments(t: torch.Tensor, kernel: str, programs: int, **meta: int) -> dict:
    """A launch's trace keywords (its kernel's TRACE, trace_ptr and clock_ptr): none unless a
    timeline is active on t's device and, on CUDA, a graph is being captured (or the timeline
    is eager). `meta` (e.g.
    bytes read, rows, N, K) goes into the launch's record."""
    if not _ACTIVE or _ACTIVE[-1].device != t.device:
        return {}
    timeline = _ACTIVE[-1]
    if t.is_cuda and not (timeline.eager or torch.cuda.is_current_stream_capturing()):
        return {}
    return timeline.arguments(kernel, programs, meta)


def summary(launches: list[dict]) -> dict:
    """One forward's traced launches (Timeline.read, in launch order) as the chain's account, in
    the timer's units: `span`, first entry to last exit; per launch `run` (its first pass of
    the wait to its last exit) and `gap` (the previous launch's last exit to that pass; the
    first launch's from its own entry); and per kernel the sums of both, with the launches'
    count and `bytes` where the launcher gave them."""
    if not launches:
        raise ValueError("no launches traced")
    if any(r["exited"] == 0 for r in launches):
        missing = [r["kernel"] for r in launches if r["exited"] == 0]
        raise ValueError(f"{len(missing)} traced launches did not run: {missing[:4]}")
    rows, kinds = [], {}
    before = launches[0]["entry"]
    for r in launches:
        go = max(r["go"], r["entry"])
        row = r | {"run": r["exit"] - go, "gap": go - before, "wait": go - r["entry"]}
        rows.append(row)
        before = r["exit"]
        kind = kinds.setdefault(r["kernel"], {"launches": 0, "run": 0, "gap": 0, "bytes": 0})
        kind["launches"] += 1
        kind["run"] += row["run"]
        kind["gap"] += row["gap"]
        kind["bytes"] += r.get("bytes", 0)
    span = max(r["exit"] for r in launches) - launches[0]["entry"]
    return {"span": span, "launches": rows, "kinds": kinds}
