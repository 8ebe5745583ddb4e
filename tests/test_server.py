"""`specpilot serve` as a real process, driven by the official `openai` client and raw HTTP.

Tiny random-weight target + DFlash drafter (tests/conftest.py), fp32 on CPU, so batched outputs
must equal one-at-a-time outputs exactly.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time

import openai
import pytest

from specpilot import LLM
from specpilot.engine.scheduler import Scheduler
from specpilot.engine.sequence import Sequence
from specpilot.server.engine import (
    Delta,
    EngineFailed,
    EngineLoop,
    EngineRequest,
    ServingEngine,
    admission_due,
)
from specpilot.server.metrics import Metrics
from specpilot.server.protocol import SamplingParams
from tests.serving import metric, request, start_server

MESSAGES = [{"role": "user", "content": "Hello there"}]


def client(server, **kwargs) -> openai.OpenAI:
    kwargs.setdefault("api_key", "none")
    return openai.OpenAI(base_url=server.url + "/v1", max_retries=0, timeout=60, **kwargs)


def concurrent_meta_info(server, prompts: list[list[int]], max_tokens: int) -> list[dict]:
    """Completions of all `prompts` sent at once (the official async client): their
    `meta_info`s, in the prompts' order."""

    async def gather() -> list[dict]:
        ac = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0)
        try:
            outs = await asyncio.gather(
                *(ac.completions.create(model=server.model, prompt=p, max_tokens=max_tokens)
                  for p in prompts)
            )  # fmt: skip
            return [o.model_extra["meta_info"] for o in outs]
        finally:
            await ac.close()

    return asyncio.run(gather())


def test_models_health_metrics(spec_server) -> None:
    models = client(spec_server).models.list()
    assert [m.id for m in models.data] == ["tiny-spec"]
    card = models.data[0].model_extra
    assert card["drafter"] == "dflash" and card["speculative"] is True
    assert request(spec_server.url + "/health") == (200, {"status": "ok"})
    status, text = request(spec_server.url + "/metrics")
    assert status == 200
    for name in (
        "specpilot_http_requests_total",
        "specpilot_generation_tokens_total",
        "specpilot_acceptance_length_bucket",
        "specpilot_step_seconds_bucket",
        "specpilot_step_active_rows_bucket",
        "specpilot_prefill_batch_requests_bucket",
        "specpilot_engine_idle_seconds_total",
        "specpilot_num_requests_waiting",
    ):
        assert f"# TYPE {name.removesuffix('_bucket')}" in text, name


def test_chat_matches_llm_and_reports_meta_info(spec_server, qwen_dir, qwen_drafter_dir) -> None:
    out = client(spec_server).chat.completions.create(
        model="tiny-spec", messages=MESSAGES, max_tokens=20, temperature=0, seed=3
    )
    meta = out.model_extra["meta_info"]
    llm = LLM(qwen_dir, draft=qwen_drafter_dir, device="cpu", dtype="float32")
    ref = llm.generate("Hello there", max_new_tokens=20, chat=True)[0]
    assert meta["output_ids"] == ref.output_ids
    assert out.choices[0].message.content == ref.text
    assert out.choices[0].finish_reason == ref.finish_reason
    assert out.usage.completion_tokens == len(ref.output_ids)
    assert out.usage.prompt_tokens == len(ref.prompt_ids)
    assert meta["spec_verify_ct"] == ref.num_steps
    assert meta["spec_accept_length"] == pytest.approx(ref.mean_acceptance_length)
    assert meta["drafter"] == "dflash"


def test_streaming_chat_and_completions(spec_server) -> None:
    c = client(spec_server)
    whole = c.chat.completions.create(model="tiny-spec", messages=MESSAGES, max_tokens=16)
    chunks = list(
        c.chat.completions.create(
            model="tiny-spec",
            messages=MESSAGES,
            max_completion_tokens=16,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert text == whole.choices[0].message.content
    assert chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    metas = [ch.model_extra["meta_info"] for ch in chunks if ch.model_extra.get("meta_info")]
    assert (
        len(metas) == 1 and metas[0]["output_ids"] == whole.model_extra["meta_info"]["output_ids"]
    )

    done = c.completions.create(model="tiny-spec", prompt="abc", max_tokens=12)
    streamed = list(
        c.completions.create(model="tiny-spec", prompt="abc", max_tokens=12, stream=True)
    )
    assert "".join(ch.choices[0].text for ch in streamed) == done.choices[0].text
    assert done.usage.completion_tokens == 12 and done.choices[0].finish_reason == "length"
    by_ids = c.completions.create(
        model="tiny-spec", prompt=done.model_extra["meta_info"]["output_ids"][:3], max_tokens=4
    )
    assert by_ids.usage.prompt_tokens == 3


def test_stop_strings_and_token_ids(spec_server) -> None:
    c = client(spec_server)
    base = c.completions.create(model="tiny-spec", prompt="xyz", max_tokens=30)
    ids = base.model_extra["meta_info"]["output_ids"]
    text = base.choices[0].text
    # a stop string taken from the middle of the known output cuts it there
    cut = next(i for i in range(5, len(text) - 2) if text[i].isprintable() and text[i] != "\ufffd")
    stop = text[cut : cut + 2]
    for stream in (False, True):
        out = c.completions.create(
            model="tiny-spec", prompt="xyz", max_tokens=30, stop=[stop], stream=stream
        )
        if stream:
            got = "".join(ch.choices[0].text for ch in out)
        else:
            got = out.choices[0].text
            assert out.choices[0].finish_reason == "stop"
            meta = out.model_extra["meta_info"]
            assert meta["finish_reason"] == {"type": "stop", "matched": stop}
            assert meta["output_ids"] == ids[: len(meta["output_ids"])]
        assert got == text[: text.index(stop)]
    # a stop token id ends the output right after that token
    status, body = request(
        spec_server.url + "/generate",
        {"text": "xyz", "sampling_params": {"max_new_tokens": 30, "stop_token_ids": [ids[6]]}},
    )
    assert status == 200
    first = ids.index(ids[6])
    assert body["output_ids"] == ids[: first + 1]
    assert body["meta_info"]["finish_reason"] == {"type": "stop", "matched": ids[6]}


def test_generate_native(spec_server) -> None:
    status, body = request(
        spec_server.url + "/generate",
        {"input_ids": [5, 17, 42], "sampling_params": {"max_new_tokens": 9, "temperature": 0}},
    )
    assert status == 200 and len(body["output_ids"]) == 9
    assert body["meta_info"]["completion_tokens"] == 9 and body["meta_info"]["spec_verify_ct"] > 0
    status, text = request(
        spec_server.url + "/generate",
        {"input_ids": [5, 17, 42], "sampling_params": {"max_new_tokens": 9}, "stream": True},
    )
    events = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]
    assert events[-1]["output_ids"] == body["output_ids"] and text.rstrip().endswith("[DONE]")


class RecordingLoop:
    """Stands in for an event loop: records what the engine thread hands it."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def call_soon_threadsafe(self, fn, *args) -> None:
        self.calls.append((fn, *args))


def test_engine_posts_one_wakeup_per_step(qwen_dir) -> None:
    """The prefill and every step hand all requests' deltas to the event loop in one call."""
    llm = LLM(qwen_dir, device="cpu", dtype="float32")
    engine = EngineLoop(Scheduler(llm.generator, 4, 128), Metrics(8, 4, 8), 8)
    loop = RecordingLoop()
    reqs = [
        EngineRequest(Sequence([5 + i, 17, 42], 4, frozenset()), 0, loop, f"r{i}") for i in range(3)
    ]
    engine._admit(reqs)
    engine._step()
    assert len(loop.calls) == 2
    for _, posts in loop.calls:
        assert [req for req, _ in posts] == reqs
    assert [len(delta.token_ids) for _, delta in loop.calls[0][1]] == [1, 1, 1]  # prefill
    assert engine.metrics.active_rows.count == 1 and engine.metrics.active_rows.sum == 3


def test_admission_due() -> None:
    assert admission_due(0.0, 0.5, 0.0, running=True)  # no delay asked
    assert admission_due(0.0, 0.5, 2.0, running=False)  # nobody to stall
    assert not admission_due(0.9, 0.5, 2.0, running=True)
    assert admission_due(1.0, 0.5, 2.0, running=True)


def test_admit_delay_holds_arrivals_while_others_run(qwen_dir) -> None:
    """With a long admission delay a request arriving while others run waits for them, and
    every request still completes as it would alone."""
    llm = LLM(qwen_dir, device="cpu", dtype="float32")
    prompts = [[5 + i, 17, 42, 9] for i in range(4)]
    alone = [llm.generate(p, max_new_tokens=24, ignore_eos=True)[0].output_ids for p in prompts]
    engine = EngineLoop(Scheduler(llm.generator, 4, 128), Metrics(8, 4, 8), 8, admit_delay=1e6)
    running_at_admission = []
    admit = engine._admit

    def recording_admit(reqs):
        running_at_admission.append((len(engine.active), len(reqs)))
        admit(reqs)

    engine._admit = recording_admit
    loop = RecordingLoop()
    reqs = [
        EngineRequest(Sequence(p, 24, frozenset()), 0, loop, f"r{i}") for i, p in enumerate(prompts)
    ]
    engine.start()
    try:
        for req in reqs:
            engine.submit(req)
            time.sleep(0.01)
        deadline = time.time() + 60
        while not all(r.seq.finished for r in reqs) and time.time() < deadline:
            time.sleep(0.01)
    finally:
        engine.stop()
    assert [r.seq.output_ids for r in reqs] == alone
    assert all(running == 0 for running, _ in running_at_admission), running_at_admission
    batches = engine.metrics.prefill_batch
    assert batches.count == len(running_at_admission) and batches.sum == len(reqs)
    with pytest.raises(ValueError, match="admit_delay"):
        EngineLoop(Scheduler(llm.generator, 4, 128), Metrics(8, 4, 8), 8, admit_delay=-1)


def test_stream_merges_queued_deltas(qwen_dir) -> None:
    """Deltas that queued up before the consumer read come out as one Output with every token;
    stop strings still cut across them, and an error after tokens still raises."""
    llm = LLM(qwen_dir, device="cpu", dtype="float32")
    engine = ServingEngine(
        Scheduler(llm.generator, 2, 128), llm.tokenizer, "tiny", "none", 128, 8, frozenset()
    )
    ids = llm.tokenizer("one two three four five six")["input_ids"]

    async def outputs(deltas: list[Delta], stops: tuple[str, ...] = ()) -> list:
        req = engine.submit([5, 17, 42], SamplingParams(max_new_tokens=20), "cmpl")
        for delta in deltas:
            req.events.put_nowait(delta)
        return [out async for out in engine.stream(req, stops)]

    deltas = [Delta(ids[:1], 0), Delta(ids[1:3], 1), Delta(ids[3:], 2, "length")]
    (out,) = asyncio.run(outputs(deltas))
    assert out.output_ids == ids and out.num_steps == 2 and out.finish_reason == "length"
    assert out.text == out.text_delta == llm.tokenizer.decode(ids)
    (out,) = asyncio.run(outputs(deltas, stops=(" four",)))
    assert out.text == "one two three" and out.finish_reason == "stop"
    upto_stop = llm.tokenizer("one two three four")["input_ids"]  # the output ends with the stop
    assert out.matched_stop == " four" and out.output_ids == upto_stop
    with pytest.raises(EngineFailed, match="boom"):
        asyncio.run(outputs([Delta(ids[:2], 1), Delta([], 0, error="boom")]))


BAD_REQUESTS = [
    # (route, body, status, param)
    ("/v1/chat/completions", b"{not json", 400, None),
    ("/v1/chat/completions", b"[1, 2]", 400, None),
    ("/v1/chat/completions", {"model": "tiny-spec"}, 400, "messages"),
    ("/v1/chat/completions", {"messages": MESSAGES}, 400, "model"),
    ("/v1/chat/completions", {"model": "tiny-spec", "messages": "hi"}, 400, "messages"),
    ("/v1/chat/completions", {"model": "tiny-spec", "messages": [{"role": "x"}]}, 400, None),
    ("/v1/chat/completions", {"model": 5, "messages": MESSAGES}, 400, "model"),
    ("/v1/chat/completions", {"model": "other", "messages": MESSAGES}, 404, "model"),
    ("/v1/chat/completions", {"model": "tiny-spec", "messages": MESSAGES, "max_tokens": -1}, 400,
     "max_tokens"),
    ("/v1/chat/completions", {"model": "tiny-spec", "messages": MESSAGES, "max_tokens": "9"}, 400,
     "max_tokens"),
    ("/v1/chat/completions", {"model": "tiny-spec", "messages": MESSAGES, "max_tokens": 10**12},
     400, "max_tokens"),
    ("/v1/chat/completions", {"model": "tiny-spec", "messages": MESSAGES, "temperature": 0.7},
     400, "temperature"),
    ("/v1/chat/completions", {"model": "tiny-spec", "messages": MESSAGES, "stream": "yes"}, 400,
     "stream"),
    ("/v1/chat/completions", {"model": "tiny-spec", "messages": MESSAGES, "stop": [1]}, 400,
     "stop"),
    ("/v1/completions", {"model": "tiny-spec", "prompt": "a" * 3000, "max_tokens": 4}, 400,
     "prompt"),
    ("/v1/completions", {"model": "tiny-spec", "prompt": [1, 99999], "max_tokens": 4}, 400,
     "prompt"),
    ("/v1/completions", {"model": "tiny-spec", "prompt": ["a", "b"]}, 400, "prompt"),
    ("/v1/completions", {"model": "tiny-spec", "prompt": ""}, 400, "prompt"),
    ("/generate", {"sampling_params": {}}, 400, "text"),
    ("/generate", {"text": "a", "sampling_params": {"max_new_tokens": 0}}, 400,
     "sampling_params.max_new_tokens"),
    ("/generate", {"text": "a", "sampling_params": []}, 400, "sampling_params"),
    ("/generate", {"text": "a", "sampling_params": {"temperature": 1}}, 400,
     "sampling_params.temperature"),
    ("/nowhere", {}, 404, None),
]  # fmt: skip


def test_bad_requests_are_4xx_openai_errors(spec_server) -> None:
    for route, body, status, param in BAD_REQUESTS:
        got, answer = request(spec_server.url + route, body)
        assert got == status, (route, body, answer)
        error = answer["error"]
        assert set(error) == {"message", "type", "param", "code"} and error["message"]
        assert param is None or error["param"] == param, (route, body, error)
    assert (
        "lossless sampling is not supported"
        in request(
            spec_server.url + "/v1/chat/completions",
            {"model": "tiny-spec", "messages": MESSAGES, "temperature": 0.5},
        )[1]["error"]["message"]
    )
    # the openai client sees the same refusals as typed errors
    with pytest.raises(openai.NotFoundError):
        client(spec_server).chat.completions.create(model="nope", messages=MESSAGES)
    with pytest.raises(openai.BadRequestError):
        client(spec_server).chat.completions.create(
            model="tiny-spec", messages=MESSAGES, max_tokens=5000
        )
    assert request(spec_server.url + "/health")[0] == 200  # still serving


def test_concurrent_streams_equal_sequential(spec_server) -> None:
    """32 streaming clients at once (8 slots: requests queue, join and leave mid-batch) give
    exactly the outputs of the same prompts sent one at a time."""
    prompts = [f"prompt {i}: " + "ab" * (i % 7) for i in range(32)]
    lengths = [8 + (i * 5) % 17 for i in range(32)]
    c = client(spec_server)

    def sequential(prompt: str, n: int) -> dict:
        messages = [{"role": "user", "content": prompt}]
        out = c.chat.completions.create(model="tiny-spec", messages=messages, max_tokens=n)
        return out.model_extra["meta_info"]

    alone = [sequential(p, n) for p, n in zip(prompts, lengths)]

    async def one(ac: openai.AsyncOpenAI, prompt: str, n: int) -> tuple[dict, str, str]:
        stream = await ac.chat.completions.create(
            model="tiny-spec", messages=[{"role": "user", "content": prompt}], max_tokens=n,
            stream=True,
        )  # fmt: skip
        meta, reason, text = None, None, ""
        async for chunk in stream:
            meta = chunk.model_extra.get("meta_info") or meta
            if chunk.choices:
                reason = chunk.choices[0].finish_reason or reason
                text += chunk.choices[0].delta.content or ""
        return meta, reason, text

    async def run_all() -> list:
        ac = openai.AsyncOpenAI(base_url=spec_server.url + "/v1", api_key="x", max_retries=0)
        try:
            return await asyncio.gather(*(one(ac, p, n) for p, n in zip(prompts, lengths)))
        finally:
            await ac.close()

    together = asyncio.run(run_all())
    assert [m["output_ids"] for m, _, _ in together] == [m["output_ids"] for m in alone]
    assert [r for _, r, _ in together] == [m["finish_reason"]["type"] for m in alone]
    assert all(len(m["output_ids"]) <= n for m, n in zip(alone, lengths))
    assert sum(len(m["output_ids"]) == n for m, n in zip(alone, lengths)) > 16  # mostly full
    # slots were shared: some steps ran more than one row
    status, text = request(spec_server.url + "/metrics")
    assert 'specpilot_step_batch_rows_bucket{le="1"}' in text
    count = metric(spec_server.url, "specpilot_step_batch_rows_count")
    ones = float(text.split('specpilot_step_batch_rows_bucket{le="1"} ')[1].split()[0])
    assert ones < count
    assert metric(spec_server.url, "specpilot_num_requests_running") == 0


def test_replay_batched_high_acceptance_equal_sequential(qwen_dir) -> None:
    """Replayed acceptance (mean 6 of 8): rows accept different lengths in one step and roll
    back independently; outputs still equal the one-at-a-time outputs."""
    server = start_server("--target", str(qwen_dir), "--draft", "replay:6", "--max-running", "4")
    try:
        c = client(server)
        prompts = [[5 + i, 17, 42 + i] for i in range(8)]

        def run(p: list[int]) -> dict:
            out = c.completions.create(model=server.model, prompt=p, max_tokens=40)
            return out.model_extra["meta_info"]

        first = [run(p) for p in prompts]  # no continuation known yet: acceptance about 1
        assert all(m["drafter"] == "replay" for m in first)

        batched = concurrent_meta_info(server, prompts, max_tokens=40)
        assert [m["output_ids"] for m in batched] == [m["output_ids"] for m in first]
        assert min(m["spec_accept_length"] for m in batched) > 4
    finally:
        assert server.stop() == 0


def test_api_key_queue_limit_and_disconnect(qwen_dir) -> None:
    server = start_server(
        "--target", str(qwen_dir), "--max-running", "1", "--max-queue", "1", "--api-key", "sekret",
    )  # fmt: skip
    try:
        with pytest.raises(openai.AuthenticationError):
            client(server, api_key="wrong").models.list()
        status, body = request(server.url + "/v1/models")
        assert status == 401 and body["error"]["type"] == "authentication_error"
        assert request(server.url + "/health")[0] == 200  # open without the key
        c = client(server, api_key="sekret")
        assert c.models.list().data[0].id == server.model
        assert server.model == qwen_dir.name and "autoregressive" not in "".join(server.log)

        # A runs (the only slot), B waits (the only queue place), C is refused with 429
        long = dict(model=server.model, prompt="long", max_tokens=1500, stream=True)
        a = c.completions.create(**long)
        next(iter(a))
        b = c.completions.create(**long)
        with pytest.raises(openai.RateLimitError) as refused:
            c.completions.create(model=server.model, prompt="x", max_tokens=2)
        assert refused.value.status_code == 429
        auth = {"Authorization": "Bearer sekret"}
        status, text = request(server.url + "/metrics", headers=auth)
        assert "specpilot_num_requests_waiting 1" in text
        assert "specpilot_num_requests_running 1" in text
        # disconnecting frees the slot and the queue place at once (A would run for seconds)
        a.close()
        b.close()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 5:
            text = request(server.url + "/metrics", headers=auth)[1]
            if "specpilot_num_requests_running 0" in text and "waiting 0" in text:
                break
            time.sleep(0.02)
        assert time.monotonic() - t0 < 1, text
        out = c.completions.create(model=server.model, prompt="x", max_tokens=3)
        assert out.usage.completion_tokens == 3
        status, text = request(server.url + "/metrics", headers=auth)
        assert 'specpilot_requests_finished_total{reason="abort"} 2' in text
        assert "specpilot_num_requests_running 0" in text
    finally:
        assert server.stop(signal.SIGINT) == 0  # Ctrl-C: a clean stop, no traceback
    log = "".join(server.log)
    assert "Finished server process" in log and "Traceback" not in log


def test_w12_server_passes_token_forcing(qwen_dir, qwen_drafter_dir, monkeypatch) -> None:
    """`serve --weights w12 --w12-matrices auto` in bf16 (the startup line names the target's
    W12 matrices: gate|up and down, its lm_head is tied to the embeddings): speculative answers
    to two concurrent requests pass token forcing against the float32 model. Not compared with
    a bf16 server token for token: on this CPU how the two requests share steps depends on
    timing, and bf16 rounding on how many rows a step has, so two bf16 engines may part at a
    near tie (tests/test_w12.py compares W12 with bf16 bit for bit in one process). A bad
    matrix name stops the server at start with the message."""
    from specpilot.config import EngineConfig

    # the PyTorch path on this CPU (the tests' Triton interpreter would take minutes)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    args = ["--target", str(qwen_dir), "--draft", str(qwen_drafter_dir), "--dtype", "bfloat16"]
    prompts = [[5, 17, 42, 8], [9, 3, 77]]
    server = start_server(*args, "--weights", "w12", "--w12-matrices", "auto", timeout=120)
    try:
        assert "W12 weights (gate_up, down)" in "".join(server.log)
        served = [m["output_ids"] for m in concurrent_meta_info(server, prompts, max_tokens=16)]
    finally:
        assert server.stop() == 0
    llm = LLM(qwen_dir, device="cpu", dtype="bfloat16", engine=EngineConfig(kernels="torch"))
    for prompt, output in zip(prompts, served):
        report = llm.validate(prompt, output)
        assert len(output) == 16 and report.passed, report.failures
    with pytest.raises(RuntimeError, match=r"w12 matrices: .* \(unknown: up\)"):
        start_server(*args, "--weights", "w12", "--w12-matrices", "qkv,up")
