"""The serving engine: one thread owns the `Scheduler`; asyncio handlers talk to it by queues.

Handlers call `ServingEngine.submit` (tokenized prompt + sampling parameters); the request waits in
a bounded queue (full: HTTP 429) until the engine thread has a free slot, is prefilled into it
(together with every request admitted at the same moment) and then decodes with everyone else,
one step at a time. After every step (and every prefill) the thread hands all new tokens to the
event loop in one `call_soon_threadsafe`, which puts each request's `Delta` on that request's
asyncio queue; `ServingEngine.stream` merges whatever has queued up for its request and turns it
into text (incremental detokenization, stop strings held back until they cannot match) and one
`Output`, so a consumer that falls behind gets fewer, larger chunks. A request whose consumer goes
away (client disconnect, stop string) is aborted: its slot is freed before the next step.

Replay (`--draft replay:TAU`, benchmarks only): proposals are drawn from the last output this server
produced for the same prompt and token limit, so the first time a prompt is seen acceptance is about
1 and from the second time on it follows the profile; every response says `drafter: replay`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import sys
import threading
import time
import traceback
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from specpilot.engine.scheduler import Scheduler
from specpilot.engine.sequence import Sequence
from specpilot.server.metrics import Metrics
from specpilot.server.protocol import RequestError, SamplingParams

log = logging.getLogger("specpilot.server")
REPLAY_MEMORY = 4096  # prompts whose last output replay remembers
# NOTE: the engine thread releases the GIL in every device wait and in long torch ops; with
# Python's default switch interval (5 ms) it may then wait up to 5 ms per release for the busy
# event-loop thread to hand the GIL back, a step's worth at 32 streams. 0.5 ms bounds that wait at
# the cost of more frequent switches for the event loop.
SWITCH_INTERVAL_S = 0.0005


@dataclass
class Delta:
    """New tokens of one request after one engine step (or its prefill)."""

    token_ids: list[int]
    num_steps: int
    finish_reason: str | None = None  # "stop", "length"
    error: str | None = None


@dataclass(eq=False)  # identity: requests are found in queues by `is`
class EngineRequest:
    seq: Sequence
    seed: int
    loop: asyncio.AbstractEventLoop
    rid: str
    arrival: float = field(default_factory=time.perf_counter)
    events: asyncio.Queue[Delta] = field(default_factory=asyncio.Queue)
    num_posted: int = 0  # output tokens already posted (engine thread only)


def merge(deltas: list[Delta]) -> Delta:
    """The deltas of several steps as one: all tokens; the last step count, finish reason, error."""
    last = deltas[-1]
    if len(deltas) == 1:
        return last
    error = next((d.error for d in reversed(deltas) if d.error is not None), None)
    ids = [t for d in deltas for t in d.token_ids]
    return Delta(ids, last.num_steps, last.finish_reason, error)


def _deliver(posts: list[tuple[EngineRequest, Delta]]) -> None:
    """On the event loop: one engine step's deltas onto their requests' queues."""
    for req, delta in posts:
        req.events.put_nowait(delta)


@dataclass
class Output:
    """What a response is built from: cumulative, after each step."""

    rid: str
    prompt_tokens: int
    text: str  # released text so far (stop strings cut off)
    text_delta: str  # released since the previous Output
    output_ids: list[int]
    num_steps: int
    finish_reason: str | None = None
    matched_stop: str | int | None = None
    latency_s: float = 0.0
    drafter: str = "none"

    @property
    def mean_acceptance_length(self) -> float | None:
        """Tokens per decode step (the prefill's first token is not a step)."""
        if self.num_steps == 0:
            return None
        return (len(self.output_ids) - 1) / self.num_steps

    def meta_info(self) -> dict[str, Any]:
        """SGLang-style statistics; the names are those specpilot bench reads."""
        reason = None
        if self.finish_reason is not None:
            reason = {"type": self.finish_reason}
            if self.matched_stop is not None:
                reason["matched"] = self.matched_stop
        return {
            "id": self.rid,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": len(self.output_ids),
            "finish_reason": reason,
            "output_ids": self.output_ids,
            "spec_accept_length": self.mean_acceptance_length,
            "spec_verify_ct": self.num_steps,
            "spec_steps": self.num_steps,
            "drafter": self.drafter,
            "e2e_latency": self.latency_s,
        }


class QueueFull(Exception):
    """The bounded queue of waiting requests is full (HTTP 429)."""


class EngineFailed(Exception):
    """The engine could not finish a request (an engine error, or shutdown)."""


def admission_due(
    waited_s: float, last_prefill_s: float, delay_factor: float, running: bool
) -> bool:
    """Prefill the waiting requests now? With a delay factor f > 0 (EngineLoop.admit_delay), a
    request may wait until the oldest has waited f x the last prefill's time, so that one
    prefill takes the requests that arrive (or whose slots free up) meanwhile instead of each
    arrival stalling every running row once; vLLM's scheduler delay factor works the same way.
    Never when nothing runs (nobody to stall). A busy server's waiting requests often fill the
    free slots already: waiting still pays, since running requests finish and free more. The
    batch it converges to grows with f (f x the prefill time per prompt x the finish rate is
    the growth per admission: above 1 the batches grow until the slots run out)."""
    if delay_factor <= 0 or not running:
        return True
    return waited_s >= delay_factor * last_prefill_s


class EngineLoop:
    """The engine thread: admits waiting requests into free slots and steps the scheduler.

    admit_delay: `admission_due`'s factor (0: every request is prefilled at the first step
    boundary after it arrives)."""

    def __init__(
        self, scheduler: Scheduler, metrics: Metrics, max_queue: int, admit_delay: float = 0.0
    ) -> None:
        if admit_delay < 0:
            raise ValueError(f"admit_delay must be >= 0, got {admit_delay}")
        self.scheduler, self.metrics, self.max_queue = scheduler, metrics, max_queue
        self.admit_delay = admit_delay
        self.last_prefill_s = 0.0
        self.cond = threading.Condition()
        self.waiting: deque[EngineRequest] = deque()
        self.aborts: list[EngineRequest] = []
        self.active: list[EngineRequest] = []
        self.stopping = False
        self.thread: threading.Thread | None = None
        self.continuations: OrderedDict[tuple, list[int]] = OrderedDict()  # replay only
        # deltas not yet handed to their event loops (engine thread only; see _flush)
        self.outbox: dict[asyncio.AbstractEventLoop, list[tuple[EngineRequest, Delta]]] = {}
        metrics.gauges = lambda: (len(self.active), len(self.waiting))

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name="specpilot-engine", daemon=True)
        self.thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify()
        if self.thread is not None:
            self.thread.join(timeout)

    def submit(self, req: EngineRequest) -> None:
        with self.cond:
            if self.stopping:
                raise RequestError("the server is shutting down", 503, kind="server_error")
            if len(self.waiting) >= self.max_queue:
                raise QueueFull()
            self.waiting.append(req)
            self.cond.notify()

    def abort(self, req: EngineRequest) -> None:
        with self.cond:
            if req in self.waiting:
                self.waiting.remove(req)
                self.metrics.observe_finish("abort")
                return
            if req.seq.finished:
                return
            self.aborts.append(req)
            self.cond.notify()

    # ----------------------------------------------------------------------------------------
    # the thread

    def _run(self) -> None:
        while True:
            with self.cond:
                if not (self.stopping or self.waiting or self.aborts or self.active):
                    t0 = time.perf_counter()
                    while not (self.stopping or self.waiting or self.aborts or self.active):
                        self.cond.wait()
                    self.metrics.observe_idle(time.perf_counter() - t0)
                if self.stopping:
                    break
                aborts, self.aborts = self.aborts, []
                free = self.scheduler.num_free + sum(req in self.active for req in aborts)
                admitted = []
                if self.waiting and admission_due(
                    time.perf_counter() - self.waiting[0].arrival,
                    self.last_prefill_s,
                    self.admit_delay,
                    bool(self.active),
                ):
                    while self.waiting and len(admitted) < free:
                        admitted.append(self.waiting.popleft())
            try:
                for req in aborts:
                    if req in self.active and self.scheduler.abort(req.seq):
                        self.active.remove(req)
                        self.metrics.observe_finish("abort")
                if admitted:
                    self._admit(admitted)
                if self.active:
                    self._step()
            except Exception:  # a bug or an out-of-memory: fail these requests, keep serving
                log.error("engine step failed:\n%s", traceback.format_exc())
                self.scheduler.reset()  # every slot free, whatever state the failure left
                for req in self.active + [r for r in admitted if r not in self.active]:
                    self._send(
                        req, Delta([], 0, error="internal engine error (see the server log)")
                    )
                    self.metrics.observe_finish("error")
                self.active = []
                self._flush()
        with self.cond:
            left = list(self.waiting) + self.active
            self.waiting.clear()
            self.active = []
        for req in left:
            self._send(req, Delta([], 0, error="the server shut down before this request finished"))
            self.metrics.observe_finish("error")
        self._flush()

    def _admit(self, reqs: list[EngineRequest]) -> None:
        """Prefill the admitted requests together (one batched prefill) and post their first
        tokens."""
        batch = []
        for req in reqs:
            continuation = None
            if self.scheduler.replay is not None:
                continuation = self.continuations.get(self._replay_key(req.seq))
            batch.append((req.seq, continuation, req.seed))
        t0 = time.perf_counter()
        self.scheduler.add_many(batch)
        now = time.perf_counter()
        self.last_prefill_s = now - t0
        self.metrics.observe_prefill_batch(len(reqs))
        for req in reqs:
            seq = req.seq
            self.metrics.observe_prefill(
                len(seq.prompt_ids), now - req.arrival, (now - t0) / len(reqs)
            )
            self.active.append(req)
            self._post(req)
            if seq.finished:
                self._finish(req)
        self._flush()  # first tokens go out now, not after the next step

    def _step(self) -> None:
        t0 = time.perf_counter()
        result = self.scheduler.step()
        self.metrics.observe_step(
            time.perf_counter() - t0, result.num_rows, result.acceptance_lengths
        )
        for req in list(self.active):
            self._post(req)
            if req.seq.finished:
                self._finish(req)
        self._flush()

    def _post(self, req: EngineRequest) -> None:
        seq = req.seq
        new = seq.output_ids[req.num_posted :]
        if new or seq.finished:
            req.num_posted = len(seq.output_ids)
            self._send(req, Delta(new, len(seq.acceptance_lengths), seq.finish_reason))

    def _send(self, req: EngineRequest, delta: Delta) -> None:
        self.outbox.setdefault(req.loop, []).append((req, delta))

    def _flush(self) -> None:
        """Hand the outbox to the event loops: one wake-up per loop, however many requests."""
        outbox, self.outbox = self.outbox, {}
        for loop, posts in outbox.items():
            try:
                loop.call_soon_threadsafe(_deliver, posts)
            except RuntimeError:  # the event loop is closed: nobody is listening any more
                pass

    def _finish(self, req: EngineRequest) -> None:
        self.active.remove(req)
        self.metrics.observe_finish(req.seq.finish_reason or "length")
        if self.scheduler.replay is not None:
            key = self._replay_key(req.seq)
            self.continuations[key] = list(req.seq.output_ids)
            self.continuations.move_to_end(key)
            while len(self.continuations) > REPLAY_MEMORY:
                self.continuations.popitem(last=False)

    @staticmethod
    def _replay_key(seq: Sequence) -> tuple:
        return (tuple(seq.prompt_ids), seq.max_new_tokens, seq.stop_token_ids)


def _drain(events: asyncio.Queue[Delta]) -> list[Delta]:
    """Every delta already queued, without waiting."""
    out = []
    while not events.empty():
        out.append(events.get_nowait())
    return out


class TextStream:
    """Incremental detokenization with stop strings.

    Text is decoded over a short window of recent tokens (so that tokenizers whose spacing depends
    on the previous token stay right, and the cost per step does not grow with the output);
    a trailing incomplete UTF-8 sequence waits for its next byte. The last len(longest stop) - 1
    characters are held back until they can no longer start a stop string.
    """

    def __init__(self, tokenizer: Any, stops: tuple[str, ...]) -> None:
        self.tokenizer = tokenizer
        self.stops = stops
        self.hold = max((len(s) for s in stops), default=1) - 1
        self.ids: list[int] = []
        self.text = ""  # decoded so far
        self.released = 0  # characters of `text` handed out
        self.prefix_offset = self.read_offset = 0
        self.matched: str | None = None
        self.num_ids_at_match = 0

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def add(self, ids: list[int], final: bool) -> str:
        """Feed new tokens; return the newly released text."""
        if self.tokenizer is None:
            self.ids += ids
            return ""
        before = len(self.text)
        self.ids += ids
        prefix = self._decode(self.ids[self.prefix_offset : self.read_offset])
        full = self._decode(self.ids[self.prefix_offset :])
        if len(full) > len(prefix) and (final or not full.endswith("\ufffd")):
            self.text += full[len(prefix) :]
            self.prefix_offset, self.read_offset = self.read_offset, len(self.ids)
        if self.stops:
            self._find_stop(max(0, before - self.hold), len(self.ids) - len(ids))
        if self.matched is not None or final:
            end = len(self.text)
        else:
            end = max(self.released, len(self.text) - self.hold)
        new, self.released = self.text[self.released : end], end
        return new

    def _find_stop(self, search_from: int, ids_before: int) -> None:
        hits = [(i, s) for s in self.stops if (i := self.text.find(s, search_from)) >= 0]
        if not hits:
            return
        index, stop = min(hits)
        self.text = self.text[:index]
        self.matched = stop
        # the fewest tokens whose text contains the stop string (the output ends there)
        for n in range(ids_before + 1, len(self.ids) + 1):
            if any(s in self._decode(self.ids[:n]) for s in self.stops):
                self.num_ids_at_match = n
                return
        self.num_ids_at_match = len(self.ids)


class ServingEngine:
    """Tokenization, request admission and the engine thread, for one model."""

    def __init__(
        self,
        scheduler: Scheduler,
        tokenizer: Any,
        model_name: str,
        drafter_kind: str,
        context_length: int,
        max_queue: int,
        default_stop_ids: frozenset[int],
        seed: int = 0,
        note: str | None = None,
        admit_delay: float = 0.0,
    ) -> None:
        self.scheduler = scheduler
        self.tokenizer = tokenizer
        self.model_name = model_name
        self.drafter_kind = drafter_kind
        self.context_length = context_length
        self.default_stop_ids = default_stop_ids
        self.seed = seed
        self.note = note
        self.vocab_size = scheduler.gen.target.config.vocab_size
        self.metrics = Metrics(scheduler.block_size, scheduler.max_running, max_queue)
        self.loop = EngineLoop(scheduler, self.metrics, max_queue, admit_delay)
        self.ids = itertools.count()
        self.created = int(time.time())
        self.switch_interval = sys.getswitchinterval()

    def start(self) -> None:
        t0 = time.perf_counter()
        runs = self.scheduler.warmup()  # every step width's CUDA graphs, before any request
        if runs:
            log.info(
                "captured the graphs of %d step widths in %.1f s", runs, time.perf_counter() - t0
            )
        self.switch_interval = sys.getswitchinterval()  # process-wide: put back by stop
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        self.loop.start()

    def stop(self) -> None:
        self.loop.stop()
        sys.setswitchinterval(self.switch_interval)

    # ----------------------------------------------------------------------------------------
    # prompts

    def check_model(self, model: str | None) -> None:
        if model is not None and model != self.model_name:
            raise RequestError(
                f"the model {model!r} does not exist; this server serves {self.model_name!r}",
                404,
                param="model",
                code="model_not_found",
            )

    def _need_tokenizer(self) -> Any:
        if self.tokenizer is None:
            raise RequestError(
                "this model ships no tokenizer: send token ids instead of text",
                param="prompt",
                code="no_tokenizer",
            )
        return self.tokenizer

    def encode_text(self, text: str) -> list[int]:
        return self._need_tokenizer()(text)["input_ids"]

    def encode_chat(self, messages: list[dict[str, Any]]) -> list[int]:
        tokenizer = self._need_tokenizer()
        if not getattr(tokenizer, "chat_template", None):
            raise RequestError("this model's tokenizer has no chat template", param="messages")
        try:
            text = tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
        except Exception as exc:  # jinja templates reject some conversations by raising
            raise RequestError(
                f"the chat template rejected the messages: {exc}", param="messages"
            ) from None
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    # ----------------------------------------------------------------------------------------
    # requests

    def submit(self, prompt_ids: list[int], params: SamplingParams, prefix: str) -> EngineRequest:
        """Check the prompt against the vocabulary and the context, then queue it."""
        n = len(prompt_ids)
        if n == 0:
            raise RequestError("the prompt is empty", param="prompt")
        bad = [t for t in prompt_ids if not 0 <= t < self.vocab_size]
        bad += [t for t in params.stop_token_ids if not 0 <= t < self.vocab_size]
        if bad:
            raise RequestError(
                f"token ids {bad[:3]} are outside the vocabulary ({self.vocab_size})",
                param="prompt",
            )
        room = self.context_length - n
        if room <= 0:
            raise RequestError(
                f"the prompt has {n} tokens; this server's context is {self.context_length}",
                param="messages" if prefix == "chatcmpl" else "prompt",
                code="context_length_exceeded",
            )
        max_new = params.max_new_tokens if params.max_new_tokens is not None else room
        if max_new > room:
            raise RequestError(
                f"prompt ({n} tokens) + max tokens ({max_new}) exceeds this server's context "
                f"({self.context_length} tokens)",
                param="max_tokens",
                code="context_length_exceeded",
            )
        stops = frozenset(params.stop_token_ids)
        if not params.ignore_eos:
            stops |= self.default_stop_ids
        number = next(self.ids)
        # replay's acceptance draws: the request's seed, else the server's plus the request's
        # number (one shared seed gave every request the same draws, biasing a long-tailed
        # profile's measured mean: 8.2 for geometric:6.55, docs/LOG.md run 24)
        seed = params.seed if params.seed is not None else self.seed + number
        req = EngineRequest(
            seq=Sequence(list(prompt_ids), max_new, stops),
            seed=seed,
            loop=asyncio.get_running_loop(),
            rid=f"{prefix}-{number}",
        )
        try:
            self.loop.submit(req)
        except QueueFull:
            raise RequestError(
                f"the queue is full ({self.loop.max_queue} requests waiting); retry later",
                429,
                code="queue_full",
                kind="rate_limit_error",
            ) from None
        return req

    def abort(self, req: EngineRequest) -> None:
        self.loop.abort(req)

    async def stream(
        self,
        req: EngineRequest,
        stops: tuple[str, ...],
        disconnected: Callable[[], Awaitable[bool]] | None = None,
    ) -> AsyncIterator[Output]:
        """One Output per wake-up with new tokens: every delta queued by then, merged (one per step
        while the consumer keeps up); the last Output is finished. Leaving early (a disconnect, an
        error) aborts the request and frees its slot.
        disconnected: polled every second while no tokens arrive (non-streaming requests; a
        streaming response is cancelled by the server when its client goes away)."""
        text = TextStream(self.tokenizer, stops)
        prompt_tokens = len(req.seq.prompt_ids)
        done = False
        getter: asyncio.Future[Delta] | None = None
        try:
            while not done:
                if disconnected is None:
                    delta = await req.events.get()
                else:
                    getter = getter or asyncio.ensure_future(req.events.get())
                    ready, _ = await asyncio.wait({getter}, timeout=1.0)
                    if not ready:
                        if await disconnected():
                            return
                        continue
                    delta, getter = getter.result(), None
                delta = merge([delta, *_drain(req.events)])
                if delta.error is not None:
                    raise EngineFailed(delta.error)
                released = text.add(delta.token_ids, final=delta.finish_reason is not None)
                reason, matched, ids = delta.finish_reason, None, text.ids
                if text.matched is not None:
                    reason, matched = "stop", text.matched
                    ids = text.ids[: text.num_ids_at_match]
                elif reason == "stop" and ids and ids[-1] in req.seq.stop_token_ids:
                    matched = ids[-1]
                done = reason is not None
                yield Output(
                    rid=req.rid,
                    prompt_tokens=prompt_tokens,
                    text=text.text[: text.released],
                    text_delta=released,
                    output_ids=list(ids),
                    num_steps=delta.num_steps,
                    finish_reason=reason,
                    matched_stop=matched,
                    latency_s=time.perf_counter() - req.arrival,
                    drafter=self.drafter_kind,
                )
        finally:
            if getter is not None:
                getter.cancel()
            if not done or text.matched is not None:
                # gone early, or finished by a stop string while the engine may still run it
                self.abort(req)

    async def collect(
        self,
        req: EngineRequest,
        stops: tuple[str, ...],
        disconnected: Callable[[], Awaitable[bool]],
    ) -> Output | None:
        """The final Output of a non-streaming request; None when the client went away."""
        last = None
        async for out in self.stream(req, stops, disconnected):
            last = out
        return last if last is not None and last.finish_reason is not None else None
