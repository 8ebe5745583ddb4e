"""`specpilot bench`: send a dataset's first turns to an OpenAI-compatible server and record them.

Requests are greedy (temperature 0) streaming chat completions through the official `openai`
client, at most `concurrency` in flight. Per request we record the output text, latency (request
sent -> last chunk), time to first token (request sent -> first chunk with content), output tokens
(usage, else the number of token ids) and, when the server adds them, SGLang-style `meta_info`
fields: `output_ids`, acceptance length (`spec_accept_length`, `mean_acceptance_length` or
`acceptance_length`) and speculative steps (`spec_steps`, `spec_verify_ct`); absent ones are None.

`meta_info` may sit on the chunk or on its choice. Its scalars are taken from the last chunk that
has them; `output_ids` from the last chunk if that list is as long as the usage count (cumulative
style), else the lists of all chunks concatenated (delta style).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from specpilot.errors import ConfigError, SpecPilotError
from specpilot.measure.datasets import SOURCES, Problem, load_problems

ACCEPTANCE_KEYS = ("spec_accept_length", "mean_acceptance_length", "acceptance_length")
STEP_KEYS = ("spec_steps", "spec_verify_ct", "num_steps")


class BenchError(SpecPilotError):
    """The server cannot be reached or answers in a way we cannot use."""


@dataclass
class RequestRecord:
    """One prompt's request and response. Times are in seconds from sending the request."""

    index: int
    problem: dict[str, Any]  # Problem.to_dict(): id, prompt and the reference for scoring
    output_text: str = ""
    output_ids: list[int] | None = None
    num_output_tokens: int | None = None
    latency_s: float | None = None
    ttft_s: float | None = None
    acceptance_length: float | None = None
    num_spec_steps: int | None = None
    finish_reason: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class BenchConfig:
    url: str
    model: str | None
    api_key: str
    max_tokens: int
    concurrency: int
    warmup: int

    def __post_init__(self) -> None:
        if self.max_tokens <= 0:
            raise ConfigError(f"--max-tokens must be > 0, got {self.max_tokens}")
        if self.concurrency <= 0:
            raise ConfigError(f"--concurrency must be > 0, got {self.concurrency}")
        if self.warmup < 0:
            raise ConfigError(f"--warmup must be >= 0, got {self.warmup}")
        if not self.url.startswith(("http://", "https://")):
            raise ConfigError(f"--url must start with http:// or https://, got {self.url!r}")

    @property
    def base_url(self) -> str:
        url = self.url.rstrip("/")
        return url if url.endswith("/v1") else url + "/v1"


def _meta_info(obj: Any) -> dict[str, Any] | None:
    extra = getattr(obj, "model_extra", None) or {}
    meta = extra.get("meta_info")
    return meta if isinstance(meta, dict) else None


def _first(meta: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((meta[k] for k in keys if meta.get(k) is not None), None)


async def _request(client: Any, cfg: BenchConfig, model: str, problem: Problem, index: int):
    record = RequestRecord(index=index, problem=problem.to_dict())
    pieces: list[str] = []
    id_chunks: list[list[int]] = []
    usage_tokens = None
    start = time.perf_counter()
    stream = await client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": problem.prompt}],
        temperature=0,
        max_tokens=cfg.max_tokens,
        stream=True,
        stream_options={"include_usage": True},
    )
    async for chunk in stream:
        metas = [_meta_info(chunk)] + [_meta_info(c) for c in chunk.choices]
        for choice in chunk.choices:
            if choice.delta and choice.delta.content:
                if record.ttft_s is None:
                    record.ttft_s = time.perf_counter() - start
                pieces.append(choice.delta.content)
            record.finish_reason = choice.finish_reason or record.finish_reason
        if chunk.usage is not None:
            usage_tokens = chunk.usage.completion_tokens
        for meta in filter(None, metas):
            if isinstance(meta.get("output_ids"), list):
                id_chunks.append([int(t) for t in meta["output_ids"]])
            accept, steps = _first(meta, ACCEPTANCE_KEYS), _first(meta, STEP_KEYS)
            record.acceptance_length = record.acceptance_length if accept is None else accept
            record.num_spec_steps = record.num_spec_steps if steps is None else steps
    record.latency_s = time.perf_counter() - start
    record.output_text = "".join(pieces)
    if id_chunks:
        cumulative = usage_tokens is not None and len(id_chunks[-1]) == usage_tokens
        record.output_ids = id_chunks[-1] if cumulative else [t for c in id_chunks for t in c]
    record.num_output_tokens = (
        usage_tokens
        if usage_tokens is not None
        else (len(record.output_ids) if record.output_ids is not None else None)
    )
    return record


async def _run_all(cfg: BenchConfig, problems: list[Problem]) -> tuple[str, list[RequestRecord]]:
    import openai
    from tqdm import tqdm

    client = openai.AsyncOpenAI(base_url=cfg.base_url, api_key=cfg.api_key, max_retries=0)
    try:
        listed = await _default_model(client)  # also checks that the server answers at all
        model = cfg.model or listed
        for problem in problems[: cfg.warmup]:
            try:
                await _guarded(_request(client, cfg, model, problem, -1), cfg)
            except openai.APIStatusError:
                pass  # warmup answers are thrown away, refusals too
        limit = asyncio.Semaphore(cfg.concurrency)
        with tqdm(total=len(problems), desc="bench", unit="req", file=sys.stderr) as bar:

            async def one(i: int, problem: Problem) -> RequestRecord:
                async with limit:
                    try:
                        record = await _guarded(_request(client, cfg, model, problem, i), cfg)
                    except openai.APIStatusError as exc:  # the server refused this request
                        record = RequestRecord(i, problem.to_dict())
                        record.error = f"HTTP {exc.status_code}"
                    bar.update(1)
                    return record

            records = await asyncio.gather(*(one(i, p) for i, p in enumerate(problems)))
        return model, list(records)
    finally:
        await client.close()


async def _guarded(coro: Any, cfg: BenchConfig) -> RequestRecord:
    import openai

    try:
        return await coro
    except openai.APIConnectionError:
        raise BenchError(f"cannot reach {cfg.base_url}/chat/completions") from None


async def _default_model(client: Any) -> str:
    """The first model the server lists; "default" if it lists none or has no /models."""
    import openai

    try:
        page = await client.models.list()
    except openai.APIConnectionError:
        raise BenchError(f"cannot reach {client.base_url}") from None
    except openai.APIStatusError:
        return "default"
    return page.data[0].id if page.data else "default"


def summarize(records: list[RequestRecord], wall_s: float) -> dict[str, Any]:
    ok = [r for r in records if r.error is None]
    tokens = sum(r.num_output_tokens or 0 for r in ok)
    busy = sum(r.latency_s or 0.0 for r in ok)
    ttfts = [r.ttft_s for r in ok if r.ttft_s is not None]
    accepts = [r.acceptance_length for r in ok if r.acceptance_length is not None]
    return {
        "num_requests": len(records),
        "num_errors": len(records) - len(ok),
        "output_tokens": tokens,
        "tokens_per_s": tokens / busy if busy > 0 else None,  # per request, summed
        "throughput_tokens_per_s": tokens / wall_s if wall_s > 0 else None,
        "mean_latency_s": busy / len(ok) if ok else None,
        "mean_ttft_s": sum(ttfts) / len(ttfts) if ttfts else None,
        "mean_acceptance_length": sum(accepts) / len(accepts) if accepts else None,
        "wall_s": wall_s,
    }


def _print_table(summary: dict[str, Any]) -> None:
    for key, value in summary.items():
        shown = "-" if value is None else (f"{value:.4g}" if isinstance(value, float) else value)
        print(f"{key:24} {shown}")


def cmd_bench(args: argparse.Namespace) -> int:
    import openai

    import specpilot

    cfg = BenchConfig(
        url=args.url,
        model=args.model,
        api_key=args.api_key,
        max_tokens=args.max_tokens,
        concurrency=args.concurrency,
        warmup=args.warmup,
    )
    if args.num_prompts <= 0:
        raise ConfigError(f"--num-prompts must be > 0, got {args.num_prompts}")
    problems = load_problems(args.dataset, args.num_prompts)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    model, records = asyncio.run(_run_all(cfg, problems))
    summary = summarize(records, time.perf_counter() - t0)
    source = SOURCES[args.dataset]
    result = {
        "metadata": {
            "url": cfg.base_url,
            "model": model,
            "dataset": args.dataset,
            "source": asdict(source),
            "revision": source.revision,
            "args": {k: v for k, v in vars(args).items() if k not in ("api_key", "func")}
            | {"out": str(args.out)},
            "started_utc": started,
            "specpilot_version": specpilot.__version__,
            "openai_version": openai.__version__,
        },
        "summary": summary,
        "records": [asdict(r) for r in records],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    _print_table(summary)
    print(json.dumps({"out": str(args.out), "dataset": args.dataset, "model": model, **summary}))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run a dataset through an OpenAI-compatible server")
    p.add_argument("--url", required=True, help="server base URL, e.g. http://127.0.0.1:8000")
    p.add_argument("--dataset", required=True, choices=list(SOURCES))
    p.add_argument("--num-prompts", type=int, required=True)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--max-tokens", type=int, default=2048)
    p.add_argument("--warmup", type=int, default=0, help="requests sent first and not recorded")
    p.add_argument("--model", help="model name (default: the first one the server lists)")
    p.add_argument("--api-key", default="EMPTY")
    p.add_argument("--out", required=True, type=Path)
