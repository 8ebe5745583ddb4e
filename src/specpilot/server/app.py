"""The HTTP layer: OpenAI-compatible and SGLang routes on FastAPI over one `ServingEngine`.

Routes: POST /v1/chat/completions, /v1/completions (both also as SSE streams), /generate
(SGLang: `text` or `input_ids`, `sampling_params`; `text`, `output_ids`, `meta_info`); GET
/v1/models, /health, /metrics (Prometheus text). Responses carry SGLang-style `meta_info`
(`output_ids`, `spec_accept_length`, `spec_verify_ct`, ...; see `Output.meta_info`); in a stream it
rides on the chunk that carries the finish reason, with cumulative `output_ids`.

Every refusal is a 4xx with an OpenAI-style body {"error": {"message", "type", "param", "code"}}:
bad JSON, wrong types, missing fields (400), a bad API key (401), an unknown model or route (404),
a full queue (429). With an API key set, every route but /health needs `Authorization: Bearer KEY`.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from specpilot.server import protocol
from specpilot.server.engine import EngineFailed, EngineRequest, Output, ServingEngine
from specpilot.server.protocol import ParsedRequest, RequestError

ROUTES = (
    "/v1/chat/completions",
    "/v1/completions",
    "/v1/models",
    "/generate",
    "/health",
    "/metrics",
)
OPEN_ROUTES = ("/health",)


def error_response(err: RequestError) -> JSONResponse:
    return JSONResponse(err.body(), status_code=err.status)


class Gate:
    """Pure ASGI middleware (it leaves streaming alone): API key check and request counting."""

    def __init__(self, app: ASGIApp, engine: ServingEngine, api_key: str | None) -> None:
        self.app, self.engine, self.api_key = app, engine, api_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        route = scope["path"] if scope["path"] in ROUTES else "other"
        status = 500

        async def counted(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            if self.api_key and route not in OPEN_ROUTES and not self._authorized(scope):
                err = RequestError(
                    "missing or wrong API key: send Authorization: Bearer <key>",
                    401,
                    code="invalid_api_key",
                    kind="authentication_error",
                )
                await error_response(err)(scope, receive, counted)
                return
            await self.app(scope, receive, counted)
        finally:
            self.engine.metrics.count_request(route, status)

    def _authorized(self, scope: Scope) -> bool:
        headers = dict(scope.get("headers") or [])
        value = headers.get(b"authorization", b"").decode("latin-1")
        return value == f"Bearer {self.api_key}"


class EngineStream(StreamingResponse):
    """An SSE stream that aborts its request however the response ends (even before the first
    chunk: a client can leave before the body iterator ever starts)."""

    def __init__(self, content: AsyncIterator[str], on_close: Callable[[], None]) -> None:
        super().__init__(content, media_type="text/event-stream")
        self.headers["Cache-Control"] = "no-cache"
        self.on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.on_close()


def _sse(obj: dict[str, Any] | str) -> str:
    return f"data: {obj if isinstance(obj, str) else json.dumps(obj)}\n\n"


def _usage(out: Output) -> dict[str, int]:
    completion = len(out.output_ids)
    return {
        "prompt_tokens": out.prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": out.prompt_tokens + completion,
    }


def create_app(engine: ServingEngine, api_key: str | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine.start()
        try:
            yield
        finally:
            engine.stop()

    app = FastAPI(title="SpecPilot", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.add_middleware(Gate, engine=engine, api_key=api_key)

    @app.exception_handler(RequestError)
    async def refused(request: Request, exc: RequestError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        return error_response(RequestError(str(exc.detail), exc.status_code, kind=kind))

    @app.exception_handler(EngineFailed)
    async def engine_failed(request: Request, exc: EngineFailed) -> JSONResponse:
        return error_response(RequestError(str(exc), 503, kind="server_error"))

    async def body_of(request: Request) -> dict[str, Any]:
        return protocol.parse_json(await request.body())

    def start(parsed: ParsedRequest, prompt_ids: list[int], prefix: str) -> EngineRequest:
        engine.check_model(parsed.model)
        return engine.submit(prompt_ids, parsed.params, prefix)

    def prompt_ids(parsed: ParsedRequest) -> list[int]:
        if parsed.input_ids is not None:
            return parsed.input_ids
        return engine.encode_text(parsed.text or "")

    async def finished(request: Request, req: EngineRequest, stops: tuple[str, ...]) -> Output:
        out = await engine.collect(req, stops, request.is_disconnected)
        if out is None:  # the client left; nobody reads this answer
            raise RequestError("client disconnected", 499, code="client_disconnected")
        return out

    # ------------------------------------------------------------------------------------------
    # OpenAI

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        card = {
            "id": engine.model_name,
            "object": "model",
            "created": engine.created,
            "owned_by": "specpilot",
            "max_model_len": engine.context_length,
            "drafter": engine.drafter_kind,
            "speculative": engine.scheduler.speculative,
        }
        if engine.note:
            card["note"] = engine.note
        return {"object": "list", "data": [card]}

    async def openai_events(
        req: EngineRequest,
        stops: tuple[str, ...],
        chunk: dict[str, Any],
        choice: Callable[[str, str | None], dict[str, Any]],
        include_usage: bool,
        opening: dict[str, Any] | None = None,
    ) -> AsyncIterator[str]:
        """The SSE body of a streaming chat or text completion: an optional opening choice, a
        chunk per new text, the finishing chunk with `meta_info`, usage when asked, [DONE];
        `choice(text, finish_reason)` shapes a choice of either API."""
        if opening is not None:
            yield _sse(chunk | {"choices": [opening]})
        try:
            async for out in engine.stream(req, stops):
                if out.finish_reason is None:
                    if out.text_delta:
                        yield _sse(chunk | {"choices": [choice(out.text_delta, None)]})
                    continue
                last = chunk | {"choices": [choice(out.text_delta, out.finish_reason)]}
                yield _sse(last | {"meta_info": out.meta_info()})
                if include_usage:
                    yield _sse(chunk | {"choices": [], "usage": _usage(out)})
        except EngineFailed as exc:
            yield _sse(RequestError(str(exc), 503, kind="server_error").body())
        yield _sse("[DONE]")

    @app.post("/v1/chat/completions", response_model=None)
    async def chat(request: Request) -> Response:
        parsed = protocol.parse_chat(await body_of(request))
        engine.check_model(parsed.model)
        req = start(parsed, engine.encode_chat(parsed.messages or []), "chatcmpl")
        stops = parsed.params.stop
        base = {"id": req.rid, "created": int(time.time()), "model": engine.model_name}
        if not parsed.stream:
            out = await finished(request, req, stops)
            return JSONResponse(
                base
                | {
                    "object": "chat.completion",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": out.text},
                            "logprobs": None,
                            "finish_reason": out.finish_reason,
                        }
                    ],
                    "usage": _usage(out),
                    "meta_info": out.meta_info(),
                }
            )

        def choice(text: str, reason: str | None) -> dict[str, Any]:
            delta = {"content": text} if text else {}
            return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}

        chunk = base | {"object": "chat.completion.chunk"}
        opening = choice("", None) | {"delta": {"role": "assistant", "content": ""}}
        events = openai_events(req, stops, chunk, choice, parsed.include_usage, opening)
        return EngineStream(events, lambda: engine.abort(req))

    @app.post("/v1/completions", response_model=None)
    async def completions(request: Request) -> Response:
        parsed = protocol.parse_completion(await body_of(request))
        engine.check_model(parsed.model)
        req = start(parsed, prompt_ids(parsed), "cmpl")
        stops = parsed.params.stop
        base = {"id": req.rid, "created": int(time.time()), "model": engine.model_name}

        def choice(text: str, reason: str | None) -> dict[str, Any]:
            return {"index": 0, "text": text, "logprobs": None, "finish_reason": reason}

        if not parsed.stream:
            out = await finished(request, req, stops)
            return JSONResponse(
                base
                | {
                    "object": "text_completion",
                    "choices": [choice(out.text, out.finish_reason)],
                    "usage": _usage(out),
                    "meta_info": out.meta_info(),
                }
            )

        chunk = base | {"object": "text_completion"}
        events = openai_events(req, stops, chunk, choice, parsed.include_usage)
        return EngineStream(events, lambda: engine.abort(req))

    # ------------------------------------------------------------------------------------------
    # SGLang

    @app.post("/generate", response_model=None)
    async def generate(request: Request) -> Response:
        parsed = protocol.parse_generate(await body_of(request))
        req = start(parsed, prompt_ids(parsed), "gen")
        stops = parsed.params.stop

        def answer(out: Output) -> dict[str, Any]:
            return {"text": out.text, "output_ids": out.output_ids, "meta_info": out.meta_info()}

        if not parsed.stream:
            return JSONResponse(answer(await finished(request, req, stops)))

        async def events() -> AsyncIterator[str]:
            try:
                async for out in engine.stream(req, stops):
                    yield _sse(answer(out))  # cumulative, as SGLang streams /generate
            except EngineFailed as exc:
                yield _sse(RequestError(str(exc), 503, kind="server_error").body())
            yield _sse("[DONE]")

        return EngineStream(events(), lambda: engine.abort(req))

    # ------------------------------------------------------------------------------------------
    # operations

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/metrics")
    async def metrics() -> PlainTextResponse:
        return PlainTextResponse(
            engine.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8"
        )

    return app
