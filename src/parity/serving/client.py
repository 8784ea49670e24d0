"""One streaming request to an OpenAI-compatible ``/v1/completions`` endpoint, stamped.

The request is what vLLM, vLLM Neuron and ``transformers serve`` all take: ``prompt``
(token IDs, or their text where a server takes text only), ``max_tokens``, temperature 0,
a seed, ``stream`` with ``stream_options.include_usage`` so the last chunk carries the
server's token count. Every stamp is ``perf_counter_ns`` minus the step's origin: sent
(just before the request is written), each chunk that carries text (the first is the first
token's arrival) and the end. There are no retries: an HTTP error, a timeout or a stream
that ends before ``[DONE]`` or a finish reason is recorded as such and counts as not good.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

from parity.model.serving import PromptForm, RequestEvent, RequestStatus
from parity.safety.redact import redact
from parity.serving.load import Tokenizer

#: the first characters of an error body kept (redacted)
ERROR_CHARS = 300


@dataclass(frozen=True, kw_only=True, slots=True)
class Endpoint:
    """Where requests go. ``base`` has no user info, query or fragment (``serving.endpoint``
    refuses those before anything is sent)."""

    base: str
    api_path: str = "/v1/completions"
    model: str = ""
    prompt_form: PromptForm = "ids"
    timeout_s: float = 600.0
    #: sent with every request, never written (an Authorization header from --api-key-env)
    headers: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def url(self) -> str:
        return self.base.rstrip("/") + self.api_path


def body(endpoint: Endpoint, prompt: list[int] | str, max_tokens: int, seed: int) -> dict[str, Any]:
    return {
        "model": endpoint.model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "seed": seed,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def _chunk(line: bytes) -> dict[str, Any] | str | None:
    """One SSE line: a JSON chunk, ``"[DONE]"``, or None (a comment or blank line)."""
    text = line.decode("utf-8", errors="replace").strip()
    if not text.startswith("data:"):
        return None
    data = text[5:].strip()
    if data == "[DONE]":
        return data
    try:
        parsed = json.loads(data)
    except ValueError:
        return {"error": f"not JSON: {data[:80]}"}
    return parsed if isinstance(parsed, dict) else {"error": "not a JSON object"}


def _finished(chunk: dict[str, Any]) -> bool:
    """A chunk that ends the answer: a finish reason, or the usage chunk after it. Some
    servers (``transformers serve``) close the stream there without ``[DONE]``."""
    choices = chunk.get("choices") or []
    ended = bool(choices) and isinstance(choices[0], dict) and bool(choices[0].get("finish_reason"))
    return ended or isinstance(chunk.get("usage"), dict)


def _text(chunk: dict[str, Any]) -> str:
    choices = chunk.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        return ""
    piece = choices[0].get("text")
    if piece is None:  # a chat endpoint's delta
        piece = (choices[0].get("delta") or {}).get("content")
    return piece if isinstance(piece, str) else ""


def overrun(max_tokens: int) -> int:
    """Chunks past which a stream is cut as endless: a server may send a token in
    several chunks, or usage and empty chunks, but not without bound."""
    return 4 * max_tokens + 64


async def send(
    session: Any,
    endpoint: Endpoint,
    *,
    step: str,
    index: int,
    prompt: list[int] | str,
    max_tokens: int,
    seed: int,
    scheduled_ns: int,
    origin_ns: int,
    tokenizer: Tokenizer,
    ready_ns: int | None = None,
) -> RequestEvent:
    """Send one request and read its stream to the end; never raises for the server's
    faults (they are the event's status), only ``CancelledError`` passes through."""
    import aiohttp

    sent = time.perf_counter_ns() - origin_ns
    chunks: list[int] = []
    counts: list[int] = []
    pieces: list[str] = []
    usage: int | None = None
    received = 0
    status: RequestStatus = "truncated"
    error: str | None = "the stream ended before [DONE]"
    timeout = aiohttp.ClientTimeout(total=endpoint.timeout_s)
    try:
        async with session.post(
            endpoint.url, json=body(endpoint, prompt, max_tokens, seed), timeout=timeout
        ) as resp:
            if resp.status != 200:
                text = (await resp.text())[:ERROR_CHARS]
                status, error = "error", f"HTTP {resp.status}: {text}"
            else:
                async for line in resp.content:
                    now = time.perf_counter_ns() - origin_ns
                    chunk = _chunk(line)
                    if chunk is None:
                        continue
                    if chunk == "[DONE]":
                        status, error = "ok", None
                        break
                    assert isinstance(chunk, dict)
                    if "error" in chunk:
                        status, error = "error", f"stream error: {chunk['error']}"[:ERROR_CHARS]
                        break
                    if _finished(chunk):
                        status, error = "ok", None  # a server that ends without [DONE]
                    got = chunk.get("usage")
                    if isinstance(got, dict) and isinstance(got.get("completion_tokens"), int):
                        usage = got["completion_tokens"]
                    piece = _text(chunk)
                    if piece:
                        chunks.append(now)
                        counts.append(len(tokenizer.encode(piece)))
                        pieces.append(piece)
                    received += 1
                    if received > overrun(max_tokens):  # a server that never stops
                        status, error = "error", f"the stream ran past {received - 1} chunks"
                        break
    except asyncio.TimeoutError:
        status, error = "timeout", f"no end within {endpoint.timeout_s:g} s"
    except aiohttp.ClientPayloadError as exc:
        status, error = "truncated", f"the stream broke: {exc}"[:ERROR_CHARS]
    except aiohttp.ClientError as exc:
        status, error = "error", f"{type(exc).__name__}: {exc}"[:ERROR_CHARS]
    except (aiohttp.http_exceptions.HttpProcessingError, ValueError) as exc:
        # a line or chunk longer than the client reads (an enormous or malformed stream)
        status, error = "error", f"unreadable stream: {type(exc).__name__}"
    end = time.perf_counter_ns() - origin_ns
    text = "".join(pieces)
    ids = tuple(tokenizer.encode(text)) if text else ()
    return RequestEvent(
        step=step,
        index=index,
        scheduled_ns=scheduled_ns,
        ready_ns=ready_ns,
        sent_ns=sent,
        first_ns=chunks[0] if chunks else None,
        end_ns=end,
        chunks_ns=tuple(chunks),
        chunk_sizes=tuple(counts),
        usage_count=usage,
        local_count=len(ids),
        status=status,
        error=None if error is None else redact(error),
        text=text,
        output_ids=ids,
    )


def cancelled(step: str, index: int, scheduled_ns: int, sent_ns: int | None) -> RequestEvent:
    """A request the step ended before it finished (or before it was sent)."""
    return RequestEvent(
        step=step,
        index=index,
        scheduled_ns=scheduled_ns,
        sent_ns=scheduled_ns if sent_ns is None else sent_ns,
        status="cancelled",
        error="the step ended early (over-saturated) before this request finished",
    )
