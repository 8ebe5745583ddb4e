"""Device probe (session 34): can this torch capture a CUDA graph conditional (IF) node whose body
holds Triton kernels launched with programmatic dependent launch, and what does a skipped body
cost? Prints one JSON line. The question behind it: a pipelined step launched ahead of its
predecessor's booking, skipped on the device when every row is at its token limit (the
generator's `may_finish` window books those steps synchronously today)."""

from __future__ import annotations

import json
import sys
import time

import torch
import triton
import triton.language as tl


@triton.jit
def _add_one(x_ptr, n, BLOCK: tl.constexpr, PDL: tl.constexpr):
    if PDL:
        tl.extra.cuda.gdc_wait()
        tl.extra.cuda.gdc_launch_dependents()
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + i, tl.load(x_ptr + i, mask=i < n) + 1, mask=i < n)


def body(x: torch.Tensor, launches: int) -> None:
    for _ in range(launches):
        _add_one[(triton.cdiv(x.numel(), 1024),)](x, x.numel(), BLOCK=1024, PDL=True,
                                                  launch_pdl=True)  # fmt: skip


def replay_times(graph: torch.cuda.CUDAGraph, out: dict, name: str, replays: int = 50) -> None:
    """out[name_ms]: a replay's time back to back; out[name_launch_host_us]: the host's time to
    launch one (while the device is busy with the earlier ones)."""
    graph.replay()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(replays):
        graph.replay()
    host = (time.perf_counter() - t0) / replays
    torch.cuda.synchronize()
    out[f"{name}_ms"] = round((time.perf_counter() - t0) / replays * 1e3, 4)
    out[f"{name}_launch_host_us"] = round(host * 1e6, 1)


def main() -> None:
    g = torch.cuda.CUDAGraph
    names = ("get_currently_capturing_graph", "begin_capture_to_if_node",
             "end_capture_to_conditional_node")  # fmt: skip
    out: dict = {"torch": torch.__version__, "cuda": torch.version.cuda, "launches": 200,
                 "has": {n: hasattr(g, n) for n in names}}  # fmt: skip
    x = torch.zeros(1 << 20, device="cuda")
    body(x, 2)  # compile, warm
    plain = torch.cuda.CUDAGraph()
    with torch.cuda.graph(plain):
        body(x, out["launches"])
    replay_times(plain, out, "plain")
    if all(out["has"].values()):
        conditional(x, out)
    print(json.dumps(out))
    sys.stdout.flush()


def conditional(x: torch.Tensor, out: dict) -> None:
    """The body inside an IF node on `meta < limit`: captured? run, skipped, and their times."""
    g = torch.cuda.CUDAGraph
    meta = torch.zeros(4, dtype=torch.long, device="cuda")
    limit = torch.full((4,), 10, dtype=torch.long, device="cuda")
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            pred = (meta < limit).any()
            g.get_currently_capturing_graph().begin_capture_to_if_node(pred)
            try:
                body(x, out["launches"])
            finally:
                g.get_currently_capturing_graph().end_capture_to_conditional_node()
        out["captured"] = True
    except Exception as e:  # noqa: BLE001 - the probe reports what failed
        out["captured"], out["error"] = False, repr(e)[:400]
        return
    for state, value in (("run", 0), ("skip", 10)):
        x.zero_()
        meta.fill_(value)
        graph.replay()
        torch.cuda.synchronize()
        out[f"{state}_value"] = float(x[0])  # launches when the body ran, else 0
        replay_times(graph, out, state)


if __name__ == "__main__":
    main()
