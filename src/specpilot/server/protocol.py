"""Request parsing for the OpenAI-compatible and SGLang endpoints, checked field by field.

Every bad input becomes a `RequestError` (status 4xx, OpenAI-style body) with the offending
parameter named; nothing here raises anything else on bad JSON shapes. Decoding is greedy only:
a temperature above 0 is refused (lossless sampling is not supported yet); a missing temperature
means greedy. Unknown fields are ignored, as OpenAI-compatible servers do.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

ROLES = ("system", "developer", "user", "assistant", "tool")


class RequestError(Exception):
    """A request the server refuses: HTTP status plus an OpenAI-style error body."""

    def __init__(
        self,
        message: str,
        status: int = 400,
        param: str | None = None,
        code: str | None = None,
        kind: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.message, self.status, self.param, self.code, self.kind = (
            message,
            status,
            param,
            code,
            kind,
        )

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.kind,
                "param": self.param,
                "code": self.code,
            }
        }


@dataclass(frozen=True)
class SamplingParams:
    max_new_tokens: int | None  # None: up to the context length
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    ignore_eos: bool = False
    seed: int | None = None


@dataclass
class ParsedRequest:
    model: str | None
    params: SamplingParams
    stream: bool = False
    include_usage: bool = False
    messages: list[dict[str, Any]] | None = None  # chat
    text: str | None = None  # completions, /generate
    input_ids: list[int] | None = None  # completions with token ids, /generate
    extra: dict[str, Any] = field(default_factory=dict)


def parse_json(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RequestError(
            f"the request body is not valid JSON: {exc}", code="invalid_json"
        ) from None
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object", code="invalid_json")
    return body


def _typed(body: dict[str, Any], key: str, kinds: tuple[type, ...], what: str, prefix: str) -> Any:
    """body[key] (None when absent or null) after checking its type; bools are not numbers."""
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) and bool not in kinds:
        value = object()  # fall through to the type error
    if not isinstance(value, kinds):
        raise RequestError(f"{prefix}{key} must be {what}", param=prefix + key, code="invalid_type")
    return value


def _int(body: dict[str, Any], key: str, prefix: str = "") -> int | None:
    return _typed(body, key, (int,), "an integer", prefix)


def _number(body: dict[str, Any], key: str, prefix: str = "") -> float | None:
    return _typed(body, key, (int, float), "a number", prefix)


def _bool(body: dict[str, Any], key: str, prefix: str = "") -> bool:
    return bool(_typed(body, key, (bool,), "a boolean", prefix))


def _token_ids(value: Any, param: str) -> list[int]:
    if not isinstance(value, list) or not all(
        isinstance(t, int) and not isinstance(t, bool) for t in value
    ):
        raise RequestError(f"{param} must be a list of integers", param=param, code="invalid_type")
    return value


def _sampling(body: dict[str, Any], max_keys: tuple[str, ...], prefix: str = "") -> SamplingParams:
    temperature = _number(body, "temperature", prefix)
    if temperature is not None and temperature < 0:
        raise RequestError("temperature must be >= 0", param=prefix + "temperature")
    if temperature is not None and temperature > 0:
        raise RequestError(
            "lossless sampling is not supported yet: this server decodes greedily, "
            "send temperature 0 (or leave it out)",
            param=prefix + "temperature",
            code="unsupported_sampling",
        )
    _number(body, "top_p", prefix)
    _int(body, "top_k", prefix)
    n = _int(body, "n", prefix)
    if n is not None and n != 1:
        raise RequestError("only n=1 is supported", param=prefix + "n", code="unsupported")
    max_new = None
    for key in max_keys:
        value = _int(body, key, prefix)
        if value is not None:
            if value <= 0:
                raise RequestError(f"{key} must be > 0, got {value}", param=prefix + key)
            max_new = value if max_new is None else min(max_new, value)
    stop_value = body.get("stop")
    if stop_value is None:
        stop: tuple[str, ...] = ()
    elif isinstance(stop_value, str):
        stop = (stop_value,)
    elif isinstance(stop_value, list) and all(isinstance(s, str) for s in stop_value):
        stop = tuple(stop_value)
    else:
        raise RequestError(
            "stop must be a string or a list of strings", param=prefix + "stop", code="invalid_type"
        )
    if any(not s for s in stop):
        raise RequestError("stop strings must not be empty", param=prefix + "stop")
    ids = body.get("stop_token_ids")
    stop_ids = () if ids is None else tuple(_token_ids(ids, prefix + "stop_token_ids"))
    return SamplingParams(
        max_new_tokens=max_new,
        stop=stop,
        stop_token_ids=stop_ids,
        ignore_eos=_bool(body, "ignore_eos", prefix),
        seed=_int(body, "seed", prefix),
    )


def _model(body: dict[str, Any]) -> str:
    model = body.get("model")
    if model is None:
        raise RequestError("model is required", param="model", code="missing_field")
    if not isinstance(model, str):
        raise RequestError("model must be a string", param="model", code="invalid_type")
    return model


def _stream(body: dict[str, Any], parsed: ParsedRequest) -> None:
    parsed.stream = _bool(body, "stream")
    options = body.get("stream_options")
    if options is not None:
        if not isinstance(options, dict):
            raise RequestError("stream_options must be an object", param="stream_options")
        parsed.include_usage = _bool(options, "include_usage", "stream_options.")


def _refuse_logprobs(body: dict[str, Any]) -> None:
    if body.get("logprobs") not in (None, False, 0) or body.get("top_logprobs"):
        raise RequestError("logprobs are not supported", param="logprobs", code="unsupported")


def _content(content: Any, index: int) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if not (isinstance(part, dict) and part.get("type") == "text"):
                raise RequestError(
                    "only text content parts are supported",
                    param=f"messages[{index}].content",
                    code="unsupported",
                )
            if not isinstance(part.get("text"), str):
                raise RequestError(
                    "a text content part needs a string `text`",
                    param=f"messages[{index}].content",
                )
            parts.append(part["text"])
        return "".join(parts)
    raise RequestError(
        "message content must be a string or a list of text parts",
        param=f"messages[{index}].content",
        code="invalid_type",
    )


def parse_chat(body: dict[str, Any]) -> ParsedRequest:
    model = _model(body)
    messages = body.get("messages")
    if messages is None:
        raise RequestError("messages is required", param="messages", code="missing_field")
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages must be a non-empty list", param="messages")
    clean = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise RequestError("each message must be an object", param=f"messages[{i}]")
        role = message.get("role")
        if role not in ROLES:
            raise RequestError(
                f"message role must be one of {', '.join(ROLES)}", param=f"messages[{i}].role"
            )
        content = message.get("content")
        text = "" if content is None and role == "assistant" else _content(content, i)
        clean.append({"role": role, "content": text})
    _refuse_logprobs(body)
    params = _sampling(body, ("max_tokens", "max_completion_tokens"))
    parsed = ParsedRequest(model=model, params=params, messages=clean)
    _stream(body, parsed)
    return parsed


def parse_completion(body: dict[str, Any]) -> ParsedRequest:
    model = _model(body)
    prompt = body.get("prompt")
    if prompt is None:
        raise RequestError("prompt is required", param="prompt", code="missing_field")
    # a batch of one is unwrapped; larger batches are refused
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], (str, list)):
        if len(prompt) != 1:
            raise RequestError(
                "only one prompt per request is supported", param="prompt", code="unsupported"
            )
        prompt = prompt[0]
    if isinstance(prompt, str):
        parsed = ParsedRequest(model=model, params=SamplingParams(None), text=prompt)
    else:
        parsed = ParsedRequest(
            model=model, params=SamplingParams(None), input_ids=_token_ids(prompt, "prompt")
        )
    if _bool(body, "echo"):
        raise RequestError("echo is not supported", param="echo", code="unsupported")
    best_of = _int(body, "best_of")
    if best_of is not None and best_of != 1:
        raise RequestError("only best_of=1 is supported", param="best_of", code="unsupported")
    if isinstance(body.get("suffix"), str) and body["suffix"]:
        raise RequestError("suffix is not supported", param="suffix", code="unsupported")
    _refuse_logprobs(body)
    parsed.params = _sampling(body, ("max_tokens",))
    _stream(body, parsed)
    return parsed


def parse_generate(body: dict[str, Any]) -> ParsedRequest:
    """SGLang's native /generate: `text` or `input_ids`, `sampling_params`, `stream`."""
    text, ids = body.get("text"), body.get("input_ids")
    if (text is None) == (ids is None):
        raise RequestError("give exactly one of text and input_ids", param="text")
    if text is not None and not isinstance(text, str):
        raise RequestError(
            "text must be a string (one prompt per request)", param="text", code="invalid_type"
        )
    sampling = body.get("sampling_params")
    sampling = {} if sampling is None else sampling
    if not isinstance(sampling, dict):
        raise RequestError("sampling_params must be an object", param="sampling_params")
    params = _sampling(sampling, ("max_new_tokens",), prefix="sampling_params.")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise RequestError("model must be a string", param="model", code="invalid_type")
    parsed = ParsedRequest(
        model=model,
        params=params,
        text=text,
        input_ids=None if ids is None else _token_ids(ids, "input_ids"),
    )
    parsed.stream = _bool(body, "stream")
    return parsed
