"""One streaming request to an OpenAI-compatible ``/v1/completions`` (or, where the side's
API path is ``/v1/chat/completions``, chat) endpoint, stamped.

The request is what vLLM, vLLM Neuron and ``transformers serve`` all take: ``prompt``
(token IDs, or their text where a server takes text only), ``max_tokens``, temperature 0,
a seed, ``stream`` with ``stream_options.include_usage`` so the last chunk carries the
server's token count. On the quality steps the request also asks for each token's
log-probability and its ``LOGPROBS`` likeliest alternatives (``logprobs: N`` on completions,
``logprobs: true, top_logprobs: N`` on chat, as vLLM takes them); a server that ignores the
field simply gives none. Every stamp is ``perf_counter_ns`` minus the step's origin: sent
(just before the request is written), each chunk that carries text (the first is the first
token's arrival) and the end. There are no retries: an HTTP error, a timeout or a stream
that ends before ``[DONE]`` or a finish reason is recorded as such and counts as not good.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

from parity.model.serving import Logprob, PromptForm, RequestEvent, RequestStatus
from parity.safety.redact import redact
from parity.serving.load import Tokenizer

#: the first characters of an error body kept (redacted)
ERROR_CHARS = 300
#: alternatives asked for with each token's log-probability (vLLM allows up to 20)
LOGPROBS = 5
#: the chat completions API's path (else the completions API's)
CHAT = "/chat/completions"
#: a log-probability JSON cannot hold (-inf: a token the server deems impossible)
FLOOR = -1e9


@dataclass(frozen=True, kw_only=True, slots=True)
class Endpoint:
    """Where requests go. ``base`` has no user info, query or fragment (``serving.endpoint``
    refuses those before anything is sent)."""

    base: str
    api_path: str = "/v1/completions"
    model: str = ""
    prompt_form: PromptForm = "ids"
    timeout_s: float = 600.0
    #: whether the server takes the log-probability fields (``endpoint.discover``)
    logprobs: bool = True
    #: sent with every request, never written (an Authorization header from --api-key-env)
    headers: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def url(self) -> str:
        return self.base.rstrip("/") + self.api_path

    @property
    def chat(self) -> bool:
        """The chat completions API: ``messages`` of text, answers in ``delta.content``."""
        return self.api_path.rstrip("/").endswith(CHAT)


def body(
    endpoint: Endpoint, prompt: list[int] | str, max_tokens: int, seed: int, logprobs: int = 0
) -> dict[str, Any]:
    """The request; ``logprobs``: alternatives asked for with each token (0: none asked).
    On the chat API the prompt is one user message of text (the server applies the
    model's chat template, the same on both sides)."""
    out: dict[str, Any] = {"model": endpoint.model}
    if endpoint.chat:
        out["messages"] = [{"role": "user", "content": prompt}]
    else:
        out["prompt"] = prompt
    out |= {
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "seed": seed,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if logprobs and endpoint.logprobs:
        out |= (
            {"logprobs": True, "top_logprobs": logprobs}
            if endpoint.chat
            else {"logprobs": logprobs}
        )
    return out


def _finite(x: object) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) else FLOOR


def _top(listed: object) -> tuple[tuple[str, float], ...]:
    """Alternatives as (piece, log-probability), likeliest first: a completions mapping or
    a chat list of ``{token, logprob}``."""
    pairs: list[tuple[str, float]] = []
    if isinstance(listed, dict):
        items = list(listed.items())
    elif isinstance(listed, list):
        items = [(x.get("token"), x.get("logprob")) for x in listed if isinstance(x, dict)]
    else:
        return ()
    for piece, lp in items:
        got = _finite(lp)
        if isinstance(piece, str) and got is not None:
            pairs.append((piece, got))
    return tuple(sorted(pairs, key=lambda p: -p[1]))


def logprobs_of(chunk: dict[str, Any]) -> list[Logprob] | None:
    """The tokens a chunk's ``choices[0].logprobs`` carries (None: it carries none).

    Completions: ``{tokens, token_logprobs, top_logprobs}`` (parallel lists); chat:
    ``{content: [{token, logprob, top_logprobs}]}``."""
    choices = chunk.get("choices") or []
    given = choices[0].get("logprobs") if choices and isinstance(choices[0], dict) else None
    if not isinstance(given, dict):
        return None
    out: list[Logprob] = []
    if isinstance(given.get("content"), list):
        for item in given["content"]:
            if isinstance(item, dict) and isinstance(item.get("token"), str):
                lp = _finite(item.get("logprob"))
                if lp is not None:
                    top = _top(item.get("top_logprobs"))
                    out.append(Logprob(piece=item["token"], logprob=lp, top=top))
        return out
    pieces, lps = given.get("tokens"), given.get("token_logprobs")
    if not isinstance(pieces, list) or not isinstance(lps, list):
        return None
    tops = given.get("top_logprobs")
    tops = tops if isinstance(tops, list) else [None] * len(pieces)
    for piece, lp, top in zip(pieces, lps, tops, strict=False):
        got = _finite(lp)
        if isinstance(piece, str) and got is not None:
            out.append(Logprob(piece=piece, logprob=got, top=_top(top)))
    return out


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


@dataclass(slots=True)
class _Reading:
    """What a response's stream said so far: each text chunk's arrival and size in tokens,
    the server's token count, the log-probabilities, and how the stream ended."""

    chunks: list[int] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    pieces: list[str] = field(default_factory=list)
    usage: int | None = None
    scores: list[Logprob] | None = None
    received: int = 0
    status: RequestStatus = "truncated"
    error: str | None = "the stream ended before [DONE]"


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
    logprobs: int = 0,
) -> RequestEvent:
    """Send one request and read its stream to the end; never raises for the server's
    faults (they are the event's status), only ``CancelledError`` passes through.
    ``logprobs``: alternatives asked for with each token's log-probability (0: none)."""
    import aiohttp

    sent = time.perf_counter_ns() - origin_ns
    got = _Reading()
    timeout = aiohttp.ClientTimeout(total=endpoint.timeout_s)
    try:
        async with session.post(
            endpoint.url, json=body(endpoint, prompt, max_tokens, seed, logprobs), timeout=timeout
        ) as resp:
            if resp.status != 200:
                text = (await resp.text())[:ERROR_CHARS]
                got.status, got.error = "error", f"HTTP {resp.status}: {text}"
            else:
                await _read(resp, got, origin_ns, tokenizer, max_tokens, logprobs)
    except asyncio.TimeoutError:
        got.status, got.error = "timeout", f"no end within {endpoint.timeout_s:g} s"
    except aiohttp.ClientPayloadError as exc:
        got.status, got.error = "truncated", f"the stream broke: {exc}"[:ERROR_CHARS]
    except aiohttp.ClientError as exc:
        got.status, got.error = "error", f"{type(exc).__name__}: {exc}"[:ERROR_CHARS]
    except (aiohttp.http_exceptions.HttpProcessingError, ValueError) as exc:
        # a line or chunk longer than the client reads (an enormous or malformed stream)
        got.status, got.error = "error", f"unreadable stream: {type(exc).__name__}"
    end = time.perf_counter_ns() - origin_ns
    text = "".join(got.pieces)
    ids = tuple(tokenizer.encode(text)) if text else ()
    return RequestEvent(
        step=step,
        index=index,
        scheduled_ns=scheduled_ns,
        ready_ns=ready_ns,
        sent_ns=sent,
        first_ns=got.chunks[0] if got.chunks else None,
        end_ns=end,
        chunks_ns=tuple(got.chunks),
        chunk_sizes=tuple(got.counts),
        usage_count=got.usage,
        local_count=len(ids),
        status=got.status,
        error=None if got.error is None else redact(got.error),
        text=text,
        output_ids=ids,
        logprobs=tuple(got.scores) if got.scores is not None else None,
    )


async def _read(
    resp: Any, got: _Reading, origin_ns: int, tokenizer: Tokenizer, max_tokens: int, logprobs: int
) -> None:
    """Read a response's stream into ``got``, each line stamped as it arrives, until
    ``[DONE]``, an error chunk, a stream that runs past ``overrun`` or the stream's end."""
    async for line in resp.content:
        now = time.perf_counter_ns() - origin_ns
        chunk = _chunk(line)
        if chunk is None:
            continue
        if chunk == "[DONE]":
            got.status, got.error = "ok", None
            return
        assert isinstance(chunk, dict)
        if "error" in chunk:
            got.status, got.error = "error", f"stream error: {chunk['error']}"[:ERROR_CHARS]
            return
        if _finished(chunk):
            got.status, got.error = "ok", None  # a server that ends without [DONE]
        usage = chunk.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            got.usage = usage["completion_tokens"]
        given = logprobs_of(chunk) if logprobs else None
        if given is not None:
            got.scores = [] if got.scores is None else got.scores
            got.scores.extend(given)
        piece = _text(chunk)
        if piece:
            got.chunks.append(now)
            got.counts.append(len(tokenizer.encode(piece)))
            got.pieces.append(piece)
        got.received += 1
        if got.received > overrun(max_tokens):  # a server that never stops
            got.status, got.error = "error", f"the stream ran past {got.received - 1} chunks"
            return


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
