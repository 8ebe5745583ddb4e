"""A stand-in OpenAI-compatible server for the bench tests, until `specpilot serve` lands.

It streams a deterministic answer (one word per chunk) derived from the prompt, with SGLang-style
`meta_info` (cumulative `output_ids`, `spec_accept_length`, `spec_steps`) on the last content
chunk and a usage chunk at the end. Run: `python -m uvicorn --fd N standin_server:app`.
"""

from __future__ import annotations

import asyncio
import json
import time

from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

app = FastAPI()
MODEL = "standin-model"


def answer_words(prompt: str) -> list[str]:
    """The deterministic answer to a prompt, as the words streamed one per chunk."""
    n = len(prompt.split())
    return ["Stand-in", "answer:", "the", "prompt", "has", f"\\boxed{{{n}}}", "words."]


@app.get("/v1/models")
async def models() -> dict:
    return {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "test"}]}


@app.post("/v1/chat/completions")
async def chat(request: Request) -> StreamingResponse:
    body = await request.json()
    words = answer_words(body["messages"][-1]["content"])
    base = {"id": "cmpl-1", "object": "chat.completion.chunk", "created": int(time.time())}
    base["model"] = body["model"]

    async def events():
        for i, word in enumerate(words):
            await asyncio.sleep(0.005)
            text = word if i == 0 else " " + word
            last = i == len(words) - 1
            chunk = dict(
                base,
                choices=[
                    {
                        "index": 0,
                        "delta": {"content": text},
                        "finish_reason": "stop" if last else None,
                    }
                ],
            )
            if last:
                chunk["meta_info"] = {
                    "output_ids": list(range(100, 100 + len(words))),
                    "spec_accept_length": 2.5,
                    "spec_steps": 3,
                }
            yield f"data: {json.dumps(chunk)}\n\n"
        usage = {
            "prompt_tokens": 1,
            "completion_tokens": len(words),
            "total_tokens": 1 + len(words),
        }
        yield f"data: {json.dumps(dict(base, choices=[], usage=usage))}\n\n"
        yield "data: [DONE]\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")
