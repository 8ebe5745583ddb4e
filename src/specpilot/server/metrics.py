"""Server metrics in the Prometheus text exposition format (version 0.0.4), written by hand.

The HTTP side counts requests by route and status; the engine thread records steps (latency,
batch rows with and without padding, acceptance length per row), its idle time, tokens and
finished requests. One lock guards it all: updates are a few additions, rendering happens only
when /metrics is scraped.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence

ROW_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)
STEP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
TTFT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Histogram:
    def __init__(self, buckets: Sequence[float]) -> None:
        self.buckets = tuple(buckets)
        self.counts = [0] * len(self.buckets)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.sum += value
        self.count += 1
        for i, bound in enumerate(self.buckets):
            if value <= bound:
                self.counts[i] += 1

    def lines(self, name: str) -> list[str]:
        out = [f'{name}_bucket{{le="{_num(b)}"}} {c}' for b, c in zip(self.buckets, self.counts)]
        out.append(f'{name}_bucket{{le="+Inf"}} {self.count}')
        out.append(f"{name}_sum {_num(self.sum)}")
        out.append(f"{name}_count {self.count}")
        return out


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class Metrics:
    def __init__(self, block_size: int, max_running: int, max_queue: int) -> None:
        self.lock = threading.Lock()
        self.requests: Counter[tuple[str, int]] = Counter()  # (route, status)
        self.finished: Counter[str] = Counter()  # finish reason
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.steps = 0
        self.idle_seconds = 0.0  # engine thread waiting for work (no request running or queued)
        self.acceptance = Histogram(range(1, block_size + 1))
        self.step_seconds = Histogram(STEP_BUCKETS)
        self.batch_rows = Histogram(ROW_BUCKETS)
        self.active_rows = Histogram(ROW_BUCKETS)
        self.ttft = Histogram(TTFT_BUCKETS)
        self.prefill_seconds = Histogram(STEP_BUCKETS)
        self.prefill_batch = Histogram(ROW_BUCKETS)
        self.max_running, self.max_queue = max_running, max_queue
        self.gauges: Callable[[], tuple[int, int]] = lambda: (0, 0)  # (running, queued)

    def count_request(self, route: str, status: int) -> None:
        with self.lock:
            self.requests[route, status] += 1

    def observe_step(self, seconds: float, rows: int, acceptance_lengths: list[int]) -> None:
        with self.lock:
            self.steps += 1
            self.step_seconds.observe(seconds)
            self.batch_rows.observe(rows)
            self.active_rows.observe(len(acceptance_lengths))  # one entry per real row
            for length in acceptance_lengths:
                self.acceptance.observe(length)
            self.generation_tokens += sum(acceptance_lengths)

    def observe_prefill(self, prompt_tokens: int, ttft: float, seconds: float = 0.0) -> None:
        """A request admitted: its prompt tokens, time to first token, and the engine time its
        prefill took (the other requests' steps wait for it)."""
        with self.lock:
            self.prefill_seconds.observe(seconds)
            self.prompt_tokens += prompt_tokens
            self.generation_tokens += 1  # the prefill's first token
            self.ttft.observe(ttft)

    def observe_prefill_batch(self, requests: int) -> None:
        """One prefill forward and how many requests it admitted together."""
        with self.lock:
            self.prefill_batch.observe(requests)

    def observe_idle(self, seconds: float) -> None:
        with self.lock:
            self.idle_seconds += seconds

    def observe_finish(self, reason: str) -> None:
        with self.lock:
            self.finished[reason] += 1

    def render(self) -> str:
        running, queued = self.gauges()
        with self.lock:
            out: list[str] = []

            def family(name: str, kind: str, help_text: str, lines: list[str]) -> None:
                out.extend([f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *lines])

            family(
                "specpilot_http_requests_total",
                "counter",
                "HTTP requests by route and status code.",
                [
                    f'specpilot_http_requests_total{{route="{r}",code="{c}"}} {n}'
                    for (r, c), n in sorted(self.requests.items())
                ],
            )
            family(
                "specpilot_requests_finished_total",
                "counter",
                "Generation requests finished, by reason (stop, length, abort, error).",
                [
                    f'specpilot_requests_finished_total{{reason="{r}"}} {n}'
                    for r, n in sorted(self.finished.items())
                ],
            )
            family(
                "specpilot_prompt_tokens_total",
                "counter",
                "Prompt tokens prefilled.",
                [f"specpilot_prompt_tokens_total {self.prompt_tokens}"],
            )
            family(
                "specpilot_generation_tokens_total",
                "counter",
                "Output tokens emitted.",
                [f"specpilot_generation_tokens_total {self.generation_tokens}"],
            )
            family(
                "specpilot_engine_steps_total",
                "counter",
                "Engine steps (one decode, or one draft + verify, for the whole batch).",
                [f"specpilot_engine_steps_total {self.steps}"],
            )
            family(
                "specpilot_engine_idle_seconds_total",
                "counter",
                "Time the engine thread waited for work (nothing running or queued).",
                [f"specpilot_engine_idle_seconds_total {_num(self.idle_seconds)}"],
            )
            family(
                "specpilot_acceptance_length",
                "histogram",
                "Tokens emitted per sequence per step (1 for AR decoding).",
                self.acceptance.lines("specpilot_acceptance_length"),
            )
            family(
                "specpilot_step_seconds",
                "histogram",
                "Wall time of one engine step.",
                self.step_seconds.lines("specpilot_step_seconds"),
            )
            family(
                "specpilot_step_batch_rows",
                "histogram",
                "Batch rows a step ran over (running sequences plus padding).",
                self.batch_rows.lines("specpilot_step_batch_rows"),
            )
            family(
                "specpilot_step_active_rows",
                "histogram",
                "Running sequences a step advanced (its batch rows without padding).",
                self.active_rows.lines("specpilot_step_active_rows"),
            )
            family(
                "specpilot_time_to_first_token_seconds",
                "histogram",
                "From the request's arrival to its first token (queue wait + prefill).",
                self.ttft.lines("specpilot_time_to_first_token_seconds"),
            )
            family(
                "specpilot_prefill_seconds",
                "histogram",
                "Engine time of each request's prefill (the running requests wait for it).",
                self.prefill_seconds.lines("specpilot_prefill_seconds"),
            )
            family(
                "specpilot_prefill_batch_requests",
                "histogram",
                "Requests admitted by one prefill forward (serve --admit-delay-factor batches).",
                self.prefill_batch.lines("specpilot_prefill_batch_requests"),
            )
            family(
                "specpilot_num_requests_running",
                "gauge",
                "Sequences holding a batch slot.",
                [f"specpilot_num_requests_running {running}"],
            )
            family(
                "specpilot_num_requests_waiting",
                "gauge",
                "Requests waiting in the queue for a slot.",
                [f"specpilot_num_requests_waiting {queued}"],
            )
            family(
                "specpilot_max_running",
                "gauge",
                "Batch slots (--max-running).",
                [f"specpilot_max_running {self.max_running}"],
            )
            family(
                "specpilot_max_queue",
                "gauge",
                "Queue bound (--max-queue); requests beyond it get HTTP 429.",
                [f"specpilot_max_queue {self.max_queue}"],
            )
        return "\n".join(out) + "\n"
