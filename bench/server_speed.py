"""Server throughput on one GPU: the `specpilot serve` stack at concurrency 1, 8, 32, spec vs AR.

For each arm a child process (this script with --child) builds a synthetic Qwen3-8B-shaped target
(random bf16 weights drawn directly on the GPU, as bench/engine_speed.py does; byte-level tokenizer
with a ChatML template from models/synth.py) and serves it through the same code as `specpilot
serve` (Scheduler + ServingEngine + the FastAPI app under uvicorn):
- spec: the DFlash-b16-shaped drafter runs its real forward, proposals are replayed with the
  acceptance profile --replay (default mean 6.55 on two lengths, 6 and 7; `geometric:6.55` has a
  long tail like a real drafter's; labelled "replay"): the server draws them from the last
  output it gave for the same prompt, so every concurrency level first sends its prompts twice
  unmeasured (the second pass also captures the CUDA graphs of every batch size it meets);
- spec-narrow: spec with EngineConfig.batch_blocks = --batch-blocks (default 16:8: blocks of 8
  from 16 running requests on). NOTE: with the two-length default profile a block of 8 loses no
  acceptance at all; measure it with --replay geometric:6.55 to see the cost of the cut;
- ar: the same target with speculation off.
The parent drives each server with the official openai client (streaming chat completions, greedy,
ignore_eos so every request emits exactly --max-tokens) and measures output throughput = completion
tokens / wall time of the measured pass (first request sent to last response ended). The clients
run in --client-procs processes (default one per 8 streams: one Python process parsing thousands
of SSE chunks a second would otherwise be the bottleneck), each with its own event loop and client
and a share of the prompts and of the concurrency. Prints a table; the last line is one JSON
object.

    python bench/server_speed.py --out bench/results/DATE-server-speed.json
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from report import finish, save  # bench/ is on sys.path when run as a script

# spec: the drafter's block at every batch size; spec-narrow: EngineConfig.batch_blocks
ARMS = ("spec", "spec-narrow", "ar")
READY = re.compile(r"serving .* at (http://127\.0\.0\.1:\d+)")
MODEL = "synthetic-qwen3-8b"
BARRIER_TIMEOUT_S = 120.0  # client processes waiting for each other at the start of a pass
PASS_TIMEOUT_S = 1800.0


# ------------------------------------------------------------------------------------------------
# child: one server


def child(args: argparse.Namespace) -> None:
    import torch
    from transformers import AutoTokenizer

    from specpilot.config import DraftConfig, EngineConfig, ModelConfig
    from specpilot.engine.generator import Generator
    from specpilot.engine.scheduler import Scheduler
    from specpilot.models.dflash import DFlashDrafter
    from specpilot.models.synth import (
        TARGET_PRESETS,
        draft_hf_config,
        make_decisive,
        randomize,
        write_tokenizer,
    )
    from specpilot.models.target import TargetModel
    from specpilot.server.app import create_app
    from specpilot.server.command import bind, run_server
    from specpilot.server.engine import ServingEngine
    from specpilot.spec.replay import AcceptanceProfile

    torch.backends.cuda.matmul.allow_tf32 = False
    device = torch.device(args.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    hf = dict(TARGET_PRESETS[args.preset], eos_token_id=None)
    hf["architectures"] = ["Qwen3ForCausalLM"]
    draft_preset = "dflash-b16" if args.preset != "tiny" else "tiny"

    def build(cfg, cls, seed: int) -> torch.nn.Module:
        with device:
            model = cls(cfg).to(dtype)
        randomize(model, seed)
        return model.eval().requires_grad_(False)

    target = build(ModelConfig.from_hf(hf), TargetModel, 0)
    if args.decisive:
        make_decisive(target)
    drafter = replay = None
    if args.arm != "ar":
        drafter = build(DraftConfig.from_hf(draft_hf_config(draft_preset, hf)), DFlashDrafter, 1)
    narrow = args.batch_blocks if args.arm == "spec-narrow" else ""
    engine_cfg = EngineConfig(
        cuda_graphs=bool(args.graphs),
        kernels=args.kernels,
        batch_blocks=narrow,
        prefill=args.prefill,
    )
    gen = Generator(target, drafter, engine_cfg, device, dtype)
    if args.arm != "ar":
        replay = AcceptanceProfile.parse(args.replay, gen.block_size)
    tok_dir = Path(tempfile.mkdtemp(prefix="sp-tok-"))
    write_tokenizer(tok_dir)
    tokenizer = AutoTokenizer.from_pretrained(str(tok_dir))
    engine = ServingEngine(
        Scheduler(gen, args.max_running, args.context_length, replay=replay),
        tokenizer,
        model_name=MODEL,
        drafter_kind="replay" if replay is not None else "none",
        context_length=args.context_length,
        max_queue=4096,
        default_stop_ids=frozenset(),
        admit_delay=args.admit_delay_factor,
    )
    sock = bind("127.0.0.1", 0)
    print(f"serving {MODEL} at http://127.0.0.1:{sock.getsockname()[1]}", file=sys.stderr)
    sys.stderr.flush()
    run_server(create_app(engine), sock, "warning", 10.0)


# ------------------------------------------------------------------------------------------------
# parent: start servers, drive them


def start_child(arm: str, args: argparse.Namespace) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, __file__, "--child", "--arm", arm, "--replay", args.replay]
    cmd += ["--batch-blocks", args.batch_blocks, "--decisive", str(args.decisive)]
    cmd += ["--max-running", str(args.max_running), "--context-length", str(args.context_length)]
    cmd += ["--graphs", str(args.graphs), "--kernels", args.kernels]
    cmd += ["--device", args.device, "--preset", args.preset]
    cmd += ["--admit-delay-factor", str(args.admit_delay_factor), "--prefill", args.prefill]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    found: list[str] = []
    ready = threading.Event()

    def read() -> None:
        for line in proc.stderr:
            sys.stderr.write(f"[{arm} server] {line}")
            match = READY.search(line)
            if match and not ready.is_set():
                found.append(match.group(1))
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    while not ready.wait(0.5):
        if proc.poll() is not None:
            raise SystemExit(f"{arm} server exited with {proc.returncode}")
    url = found[0]
    import urllib.request

    for _ in range(600):  # model build + warm start
        try:
            with urllib.request.urlopen(url + "/health", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"{arm} server did not answer /health")


def prompts(n: int, words: int, tokens: int = 0) -> list[str]:
    """n distinct prompts: `words` filler words, or (tokens > 0) exactly `tokens` bytes of user
    text, i.e. that many tokens of the synthetic byte-level tokenizer (the chat template adds
    ~30). 100 words are ~420 bytes; a BPE tokenizer would make ~130-250 tokens of them."""
    filler = " ".join(f"w{j}" for j in range(max(words, tokens)))
    texts = [f"Request {i}. Continue this text: {filler}" for i in range(n)]
    return [t[:tokens] for t in texts] if tokens > 0 else texts


async def stream_all(
    url: str, texts: list[str], concurrency: int, max_tokens: int, barrier: Any
) -> list[dict]:
    """One client process's share of a pass: `texts` at most `concurrency` at a time, started
    when every client process is ready (`barrier`); records carry time.time() stamps, which the
    processes share."""
    import openai

    client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=600)
    limit = asyncio.Semaphore(concurrency)
    records: list[dict] = []

    async def one(text: str) -> None:
        async with limit:
            start = time.time()
            ttft = None
            meta: dict = {}
            tokens = chunks = 0
            stream = await client.chat.completions.create(
                model=MODEL,
                messages=[{"role": "user", "content": text}],
                max_tokens=max_tokens,
                temperature=0,
                stream=True,
                stream_options={"include_usage": True},
                extra_body={"ignore_eos": True},
            )
            async for chunk in stream:
                chunks += 1
                if ttft is None and chunk.choices and chunk.choices[0].delta.content:
                    ttft = time.time() - start
                meta = chunk.model_extra.get("meta_info") or meta
                if chunk.usage is not None:
                    tokens = chunk.usage.completion_tokens
            end = time.time()
            records.append(
                {
                    "tokens": tokens,
                    "chunks": chunks,
                    "start": start,
                    "end": end,
                    "ttft_s": ttft,
                    "accept": meta.get("spec_accept_length"),
                }
            )

    barrier.wait(timeout=BARRIER_TIMEOUT_S)  # blocks the loop, which has nothing to run yet
    try:
        await asyncio.gather(*(one(t) for t in texts))
    finally:
        await client.close()
    return records


def client_worker(tasks: Any, results: Any, barrier: Any) -> None:
    """A client process: runs passes (stream_all's arguments) until it gets None."""
    for task in iter(tasks.get, None):
        try:
            results.put(asyncio.run(stream_all(*task, barrier)))
        except Exception as exc:  # reported by the parent, which stops the bench
            barrier.abort()
            results.put(f"{type(exc).__name__}: {exc}")


class Clients:
    """`size` client processes (spawned once, reused by every pass); a pass with fewer
    processes gives the others nothing to send."""

    def __init__(self, size: int) -> None:
        ctx = multiprocessing.get_context("spawn")  # no forked copies of threads or sockets
        self.size, self.tasks, self.results = size, ctx.Queue(), ctx.Queue()
        self.barrier = ctx.Barrier(size)
        args = (self.tasks, self.results, self.barrier)
        self.procs = [
            ctx.Process(target=client_worker, args=args, daemon=True) for _ in range(size)
        ]
        for proc in self.procs:
            proc.start()

    def close(self) -> None:
        for _ in self.procs:
            self.tasks.put(None)
        for proc in self.procs:
            proc.join(timeout=30)

    def drive(
        self, url: str, texts: list[str], concurrency: int, max_tokens: int, procs: int
    ) -> dict:
        """One pass of `texts` at `concurrency` streams over `procs` of the processes."""
        procs = max(1, min(procs, self.size, concurrency, len(texts)))
        for i in range(self.size):  # process i: every procs-th prompt, its share of the streams
            share = concurrency // procs + (i < concurrency % procs) if i < procs else 0
            self.tasks.put((url, texts[i::procs] if i < procs else [], max(share, 1), max_tokens))
        parts = [self.results.get(timeout=PASS_TIMEOUT_S) for _ in range(self.size)]
        failed = [p for p in parts if isinstance(p, str)]
        if failed:
            raise SystemExit(f"a client process failed: {failed[0]}")
        records = [r for part in parts for r in part]
        return summarize(records, concurrency, procs)


def summarize(records: list[dict], concurrency: int, procs: int) -> dict:
    wall = max(r["end"] for r in records) - min(r["start"] for r in records)
    tokens = sum(r["tokens"] for r in records)
    accepts = [r["accept"] for r in records if r["accept"] is not None]
    ttfts = [r["ttft_s"] for r in records if r["ttft_s"] is not None]
    return {
        "concurrency": concurrency,
        "client_procs": procs,
        "requests": len(records),
        "output_tokens": tokens,
        "wall_s": wall,
        "throughput_tok_s": tokens / wall,
        "per_request_tok_s": (
            sum(r["tokens"] / (r["end"] - r["start"]) for r in records) / len(records)
        ),
        "mean_acceptance_length": sum(accepts) / len(accepts) if accepts else None,
        # SSE chunks per request: fewer than steps when the server merged steps for a late reader
        "mean_chunks": sum(r["chunks"] for r in records) / len(records),
        "mean_ttft_s": sum(ttfts) / len(ttfts) if ttfts else None,
    }


ENGINE_SERIES = (
    "specpilot_engine_steps_total",
    "specpilot_step_seconds_sum",
    "specpilot_step_batch_rows_sum",
    "specpilot_step_active_rows_sum",
    "specpilot_engine_idle_seconds_total",
    "specpilot_prefill_seconds_sum",
    "specpilot_prefill_seconds_count",
    "specpilot_prefill_batch_requests_count",
    "specpilot_time_to_first_token_seconds_sum",
    "specpilot_time_to_first_token_seconds_count",
    "specpilot_generation_tokens_total",
)


def combine(passes: list[dict]) -> dict:
    """Measured passes of one level as one result: tokens and wall summed (so throughput is
    total tokens / total time), the other means weighted by requests, each pass's throughput
    kept (their spread is the run-to-run noise)."""
    if len(passes) == 1:
        return passes[0] | {"pass_tok_s": [passes[0]["throughput_tok_s"]]}
    out = dict(passes[0])
    requests = sum(p["requests"] for p in passes)
    out["requests"] = requests
    out["output_tokens"] = sum(p["output_tokens"] for p in passes)
    out["wall_s"] = sum(p["wall_s"] for p in passes)
    out["throughput_tok_s"] = out["output_tokens"] / out["wall_s"]
    for key in ("per_request_tok_s", "mean_acceptance_length", "mean_ttft_s", "mean_chunks"):
        values = [(p.get(key), p["requests"]) for p in passes]
        if all(v is not None for v, _ in values):
            out[key] = sum(v * n for v, n in values) / requests
    out["pass_tok_s"] = [p["throughput_tok_s"] for p in passes]
    return out


def engine_counters(url: str) -> dict[str, float]:
    """The engine-side totals of the server's /metrics (steps, step time, rows, prefills)."""
    import urllib.request

    with urllib.request.urlopen(url + "/metrics", timeout=10) as resp:
        text = resp.read().decode()
    values = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in ENGINE_SERIES:
            values[name] = float(value)
    return values


def engine_breakdown(before: dict[str, float], after: dict[str, float], wall: float) -> dict:
    """Where the engine thread's time went during a measured pass: decode / speculative steps
    (host + device, synchronised by the step's one read-back), prefills, and waiting for work;
    rows with padding (mean_rows) and without (mean_active_rows)."""
    d = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in ENGINE_SERIES}
    steps, prefills = d["specpilot_engine_steps_total"], d["specpilot_prefill_seconds_count"]
    return {
        "steps": int(steps),
        "mean_step_ms": 1e3 * d["specpilot_step_seconds_sum"] / steps if steps else None,
        "mean_rows": d["specpilot_step_batch_rows_sum"] / steps if steps else None,
        "mean_active_rows": d["specpilot_step_active_rows_sum"] / steps if steps else None,
        # tokens a live row gained a step, over all steps (the clients' per-request mean of
        # ratios hid a replay that stopped matching: 4.98 vs 2.9 in run 21)
        "aggregate_acceptance": (
            (d["specpilot_generation_tokens_total"] - prefills)
            / d["specpilot_step_active_rows_sum"]
            if d["specpilot_step_active_rows_sum"]
            else None
        ),
        "idle_fraction": d["specpilot_engine_idle_seconds_total"] / wall,
        "step_time_fraction": d["specpilot_step_seconds_sum"] / wall,
        "prefills": int(prefills),
        "mean_prefill_ms": (
            1e3 * d["specpilot_prefill_seconds_sum"] / prefills if prefills else None
        ),
        "prefill_time_fraction": d["specpilot_prefill_seconds_sum"] / wall,
        "mean_prefill_batch": (
            prefills / d["specpilot_prefill_batch_requests_count"]
            if d["specpilot_prefill_batch_requests_count"]
            else None
        ),
        # arrival -> first token in the engine (the client's TTFT waits for decodable text)
        "mean_ttft_s": (
            d["specpilot_time_to_first_token_seconds_sum"] / prefills if prefills else None
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--arm", default="spec", choices=ARMS, help=argparse.SUPPRESS)
    parser.add_argument("--arms", default="spec,ar", help=f"of {', '.join(ARMS)}")
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--requests-per-slot", type=int, default=2, help="requests = this x conc")
    parser.add_argument("--min-requests", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=1, help="measured passes per level")
    parser.add_argument("--prompt-words", type=int, default=100)
    parser.add_argument(
        "--prompt-tokens", type=int, default=0, help="> 0: user text of exactly this many tokens"
    )
    parser.add_argument(
        "--replay", default="6.55", help="replayed acceptance: 6.55, geometric:6.55, 1:0.5,8:0.5"
    )
    parser.add_argument(
        "--decisive",
        type=int,
        default=1,
        help="1: a target whose greedy tokens no batch composition changes (models/synth.py "
        "make_decisive), so that replayed acceptance follows the profile; 0: plain random",
    )
    parser.add_argument(
        "--prefill", default="auto", choices=["auto", "torch", "fused"], help="EngineConfig.prefill"
    )
    parser.add_argument(
        "--admit-delay-factor",
        type=float,
        default=0.0,
        help="every arm's ServingEngine admit_delay (serve --admit-delay-factor)",
    )
    parser.add_argument(
        "--batch-blocks", default="16:8", help="the spec-narrow arm's EngineConfig.batch_blocks"
    )
    parser.add_argument("--max-running", type=int, default=32)
    parser.add_argument("--context-length", type=int, default=1024)
    parser.add_argument("--graphs", type=int, default=1)
    parser.add_argument("--kernels", default="auto")
    parser.add_argument("--device", default="cuda", help="cpu only for a smoke run (tiny preset)")
    parser.add_argument("--preset", default="qwen3-8b", choices=["qwen3-8b", "tiny"])
    parser.add_argument(
        "--client-procs", type=int, default=0, help="client processes (0: concurrency // 8, >= 1)"
    )
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    levels = [int(c) for c in args.concurrency.split(",")]
    if args.client_procs < 0:
        raise SystemExit(f"--client-procs must be >= 0, got {args.client_procs}")
    procs = {c: args.client_procs or max(1, c // 8) for c in levels}
    report: dict = {
        "bench": "server_speed",
        "model": f"synthetic {args.preset} shape, random weights ({args.device})",
        "acceptance": f"replayed, profile {args.replay} (DFlash-b16 drafter forward real)",
        "spec_narrow_batch_blocks": args.batch_blocks,
        "decisive_target": bool(args.decisive),
        "max_tokens": args.max_tokens,
        "prompt": (
            f"{args.prompt_tokens} tokens of user text"
            if args.prompt_tokens > 0
            else f"{args.prompt_words} words = {len(prompts(1, args.prompt_words)[0])} tokens"
        ),
        "max_running": args.max_running,
        "context_length": args.context_length,
        "admit_delay_factor": args.admit_delay_factor,
        "prefill": args.prefill,
        "cuda_graphs": bool(args.graphs),
        "kernels": args.kernels,
        "client_procs": args.client_procs or "concurrency // 8",
        "arms": {},
    }
    clients = Clients(max(procs.values()))  # started before any server: spawn is slow
    try:
        for arm in args.arms.split(","):
            proc, url = start_child(arm, args)
            results = []
            try:
                for conc in levels:
                    texts = prompts(
                        max(args.min_requests, args.requests_per_slot * conc),
                        args.prompt_words,
                        args.prompt_tokens,
                    )
                    warmups = 1 if arm == "ar" else 2  # replay learns continuations; graphs
                    for _ in range(warmups):
                        clients.drive(url, texts, conc, args.max_tokens, procs[conc])
                    before = engine_counters(url)
                    passes = [
                        clients.drive(url, texts, conc, args.max_tokens, procs[conc])
                        for _ in range(args.repeats)
                    ]
                    r = combine(passes)
                    results.append(r)
                    r["engine"] = engine_breakdown(before, engine_counters(url), r["wall_s"])
                    ttft = r["mean_ttft_s"]  # None when no chunk carried text (random weights)
                    print(
                        f"{arm} c={conc}: {r['throughput_tok_s']:.0f} tok/s, accept "
                        f"{r['mean_acceptance_length']}, TTFT "
                        f"{'n/a' if ttft is None else f'{ttft:.3f} s'}; engine: {r['engine']}",
                        flush=True,
                    )
                    report["arms"][arm] = results
                    save(report, args.out)  # partial results survive a timeout
            finally:
                proc.terminate()
                proc.wait(timeout=60)
    finally:
        clients.close()
    header = f"{'arm':<11} {'conc':>5} {'reqs':>5} {'tokens':>7} {'wall s':>8} {'tok/s':>8} "
    print(header + f"{'req tok/s':>9} {'accept':>7} {'TTFT s':>7}")
    for arm, results in report["arms"].items():
        for r in results:
            accept = r["mean_acceptance_length"]
            print(
                f"{arm:<11} {r['concurrency']:>5} {r['requests']:>5} {r['output_tokens']:>7} "
                f"{r['wall_s']:>8.2f} {r['throughput_tok_s']:>8.0f} {r['per_request_tok_s']:>9.1f} "
                f"{accept if accept is None else round(accept, 2)!s:>7} "
                f"{'n/a' if r['mean_ttft_s'] is None else round(r['mean_ttft_s'], 3)!s:>7}"
            )
    ar = report["arms"].get("ar")
    for arm in [a for a in report["arms"] if a != "ar" and ar]:
        key = (
            "speedup_spec_over_ar" if arm == "spec" else f"speedup_{arm.replace('-', '_')}_over_ar"
        )
        report[key] = {}
        for s, a in zip(report["arms"][arm], ar):  # the same levels, in order
            ratio = s["throughput_tok_s"] / a["throughput_tok_s"]
            report[key][str(s["concurrency"])] = ratio
            s_passes, a_passes = s["pass_tok_s"], a["pass_tok_s"]
            spread = ""
            if len(s_passes) > 1:
                spread = f" (passes: {min(s_passes) / max(a_passes):.2f}x worst, "
                spread += f"{max(s_passes) / min(a_passes):.2f}x best)"
            print(f"{arm} / AR at concurrency {s['concurrency']}: {ratio:.2f}x{spread}")
    finish(report, args.out)


if __name__ == "__main__":
    main()
