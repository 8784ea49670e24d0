"""A scripted OpenAI-compatible completions server with known timing: ground truth for the
serving client, its metrics and the capacity search.

``python -m parity.testing.scripted --port P [--ttft S] [--token S] [--chunk K] ...``
serves ``POST /v1/completions`` and ``/v1/chat/completions`` (streaming as vLLM does: SSE
``data:`` chunks of ``choices[0].text``, or ``choices[0].delta.content`` on chat, the
answer to the last message's text; a last usage chunk with
``stream_options.include_usage``, then ``data: [DONE]``), ``GET /health``,
``GET /v1/models`` and ``GET /metrics``.

Timing: a request holds one of ``--slots`` slots (others queue for one) for its whole
life; its first chunk of ``K`` tokens leaves ``--ttft`` seconds after it got its slot, and
each later chunk of ``K`` tokens ``K x --token`` seconds after the one before, on absolute
deadlines (a late wake-up does not push the rest). So for ``n`` tokens (a multiple of K),
E2E from the slot = ttft + (n/K - 1) K token, and the capacity is slots / that.

Each token is one ASCII letter that depends on the prompt and its position (one UTF-8
byte: one token for ``ByteTokenizer``). Faults: ``--error-every N`` answers every Nth
request with HTTP 500; ``--drop-every N`` cuts every Nth stream after its first chunk;
``--stall-at N --stall S`` freezes every stream S seconds when request N arrives;
``--diverge-at J`` changes every token from position J on (a target that answers
differently); ``--slow-by S`` adds S seconds to the first token for every second since
the first request (a server that degrades under sustained load); ``--no-stream``
answers with one JSON body whatever is asked; ``--no-done`` ends a stream after its
usage chunk without ``[DONE]``, as ``transformers serve`` does.

Log-probabilities, where a request asks (``logprobs: N``, vLLM's completions form): each
token's is ``-0.5 - --logprob-shift``, and the one alternative listed (the letter the
other answer would have, with ``--diverge-at``) ``0.2`` below it; ``--no-logprobs``
ignores the field, as ``transformers serve`` does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True, slots=True)
class Script:
    model: str = "scripted"
    ttft: float = 0.05
    token: float = 0.01
    chunk: int = 1
    slots: int = 64
    error_every: int = 0
    drop_every: int = 0
    stall_at: int = 0
    stall: float = 0.0
    diverge_at: int = -1
    no_stream: bool = False
    no_done: bool = False
    no_logprobs: bool = False
    logprob_shift: float = 0.0
    slow_by: float = 0.0


def letter(prompt: Any, position: int, diverge_at: int) -> str:
    seed = sum(prompt) if isinstance(prompt, list) else sum(map(ord, str(prompt)))
    shift = 7 if 0 <= diverge_at <= position else 0
    return chr(97 + (seed + position * 3 + shift) % 26)


#: the chosen token's log-probability (less --logprob-shift) and its alternative's gap
CHOSEN_LOGPROB = -0.5
ALTERNATIVE_GAP = 0.2


def logprobs(prompt: Any, positions: range, diverge_at: int, shift: float) -> dict[str, Any]:
    """vLLM's completions ``logprobs`` object for the tokens at ``positions``."""
    chosen = [letter(prompt, j, diverge_at) for j in positions]
    # the alternative: the letter the other answer has (diverged or not) at that position
    other = [
        letter(prompt, j, -1) if c != letter(prompt, j, -1) else letter(prompt, j, 0)
        for c, j in zip(chosen, positions, strict=True)
    ]
    lp = CHOSEN_LOGPROB - shift
    return {
        "tokens": chosen,
        "token_logprobs": [lp] * len(chosen),
        "top_logprobs": [
            {c: lp, o: lp - ALTERNATIVE_GAP} for c, o in zip(chosen, other, strict=True)
        ],
        "text_offset": list(positions),
    }


def chat_logprobs(completions: dict[str, Any]) -> dict[str, Any]:
    """The same tokens in chat's ``logprobs.content`` form."""
    content = [
        {
            "token": c,
            "logprob": lp,
            "top_logprobs": [{"token": t, "logprob": x} for t, x in top.items()],
        }
        for c, lp, top in zip(
            completions["tokens"],
            completions["token_logprobs"],
            completions["top_logprobs"],
            strict=True,
        )
    ]
    return {"content": content}


def _prompt(body: dict[str, Any]) -> Any:
    """A completions request's prompt, or a chat request's last message's text."""
    messages = body.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[-1], dict):
        return messages[-1].get("content")
    return body.get("prompt")


def _sse(obj: object) -> bytes:
    return f"data: {json.dumps(obj)}\n\n".encode()


class Server:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.count = 0
        self.slots = asyncio.Semaphore(script.slots)
        self.stall_until = 0.0
        self.served = 0
        self.first: float | None = None

    async def _until(self, deadline: float) -> None:
        while True:
            now = time.perf_counter()
            wait = max(deadline, self.stall_until) - now
            if wait <= 0:
                return
            await asyncio.sleep(wait)

    async def completions(self, request: Any) -> Any:
        from aiohttp import web

        s = self.script
        body = await request.json()
        self.count += 1
        number = self.count
        if body.get("model") != s.model:
            return web.json_response(
                {"error": {"message": f"The model `{body.get('model')}` does not exist."}},
                status=404,
            )
        if s.error_every and number % s.error_every == 0:
            return web.json_response({"error": {"message": "scripted failure"}}, status=500)
        if s.stall_at and number == s.stall_at:
            self.stall_until = time.perf_counter() + s.stall
        prompt, n = _prompt(body), int(body.get("max_tokens") or 16)
        text = [letter(prompt, j, s.diverge_at) for j in range(n)]
        if s.no_stream or not body.get("stream"):
            return web.json_response(
                {"choices": [{"text": "".join(text), "index": 0, "finish_reason": "length"}]}
            )
        async with self.slots:
            return await self._stream(request, body, text, number)

    async def _stream(
        self, request: Any, body: dict[str, Any], text: list[str], number: int
    ) -> Any:
        from aiohttp import web

        s = self.script
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        start = time.perf_counter()
        self.first = start if self.first is None else self.first
        late = s.slow_by * (start - self.first)
        scored = bool(body.get("logprobs")) and not s.no_logprobs
        chat = "messages" in body
        for j, at in enumerate(range(0, len(text), s.chunk)):
            await self._until(start + late + s.ttft + j * s.chunk * s.token)
            piece = "".join(text[at : at + s.chunk])
            choice: dict[str, Any] = {"index": 0}
            choice |= {"delta": {"content": piece}} if chat else {"text": piece}
            if scored:
                where = range(at, min(at + s.chunk, len(text)))
                scores = logprobs(_prompt(body), where, s.diverge_at, s.logprob_shift)
                choice["logprobs"] = chat_logprobs(scores) if chat else scores
            await resp.write(_sse({"choices": [choice]}))
            if j == 0 and s.drop_every and number % s.drop_every == 0:
                assert request.transport is not None
                request.transport.close()
                return resp
        last: dict[str, Any] = {"delta": {}} if chat else {"text": ""}
        await resp.write(_sse({"choices": [{"index": 0, **last, "finish_reason": "length"}]}))
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {"prompt_tokens": 0, "completion_tokens": len(text)}
            await resp.write(_sse({"choices": [], "usage": usage}))
        if not s.no_done:  # transformers serve ends after the usage chunk
            await resp.write(b"data: [DONE]\n\n")
        self.served += 1
        return resp

    def app(self) -> Any:
        from aiohttp import web

        app = web.Application()
        models = {"object": "list", "data": [{"id": self.script.model, "object": "model"}]}

        async def health(_: Any) -> Any:
            return web.json_response({"status": "ok"})

        async def listed(_: Any) -> Any:
            return web.json_response(models)

        async def scrape(_: Any) -> Any:
            return web.Response(text=f"scripted_requests_total {self.count}\n")

        app.router.add_post("/v1/completions", self.completions)
        app.router.add_post("/v1/chat/completions", self.completions)
        app.router.add_get("/health", health)
        app.router.add_get("/v1/models", listed)
        app.router.add_get("/metrics", scrape)
        return app


def main(argv: list[str] | None = None) -> None:
    from aiohttp import web

    p = argparse.ArgumentParser(prog="python -m parity.testing.scripted")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    for name, tp in (("model", str), ("ttft", float), ("token", float), ("chunk", int),
                     ("slots", int), ("error-every", int), ("drop-every", int),
                     ("stall-at", int), ("stall", float), ("diverge-at", int),
                     ("logprob-shift", float), ("slow-by", float)):  # fmt: skip
        p.add_argument(f"--{name}", type=tp, default=getattr(Script(), name.replace("-", "_")))
    p.add_argument("--no-stream", action="store_true")
    p.add_argument("--no-done", action="store_true")
    p.add_argument("--no-logprobs", action="store_true")
    args = vars(p.parse_args(argv))
    host, port = args.pop("host"), args.pop("port")
    script = Script(**args)
    web.run_app(Server(script).app(), host=host, port=port, print=None, access_log=None)


if __name__ == "__main__":
    main()
