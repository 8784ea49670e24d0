"""A side's endpoint before anything is measured: a URL without secrets, a model it knows,
a prompt form it takes, and a stream.

A URL with user info, a query or a fragment is refused (credentials travel in such places
and would end up in a bundle, a log or the index); a key for a server that needs one is
read from an environment variable named by ``--api-key-env`` and only ever sent, as an
``Authorization`` header, never written. The probe is one short streaming request: the
server must answer 200 with an SSE stream that carries text; where it refuses a token-ID
prompt with a 4xx, the side sends the prompts' text instead (``prompt_form``, recorded).
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

from parity.errors import UsageError
from parity.model.serving import PromptForm
from parity.serving.client import Endpoint

PROBE_TOKENS = 2


def base_url(url: str, role: str) -> str:
    """``url`` checked by the one URL rule (``parity.safety.urls``: no user info, query or
    fragment) and reduced to its base (a trailing ``/v1/...`` path is the API's)."""
    from parity.safety.urls import checked

    flag = f"--{role}-url"
    text = checked(url, flag, example="http://HOST:PORT; a key goes in --api-key-env")
    try:
        parts = urllib.parse.urlsplit(text)
        port = parts.port
    except ValueError:
        raise UsageError(f"{flag}: not a URL: give http://HOST:PORT") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{flag}: not an http(s) URL: give http://HOST:PORT")
    path = parts.path.rstrip("/")
    for suffix in ("/v1/completions", "/v1/chat/completions", "/v1"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
            break
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = host + (f":{port}" if port else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, path, "", ""))


def api_path_of(url: str, given: str | None) -> str:
    """The API a side is measured on: ``--api-path`` where given, else the one its URL
    ends with (``http://h:8000/v1/chat/completions``), else completions."""
    if given:
        return given if given.startswith("/") else "/" + given
    path = urllib.parse.urlsplit(url).path.rstrip("/")
    return "/v1/chat/completions" if path.endswith("/chat/completions") else "/v1/completions"


async def _models(session: Any, base: str) -> list[str]:
    async with session.get(base + "/v1/models") as resp:
        if resp.status != 200:
            return []
        data = await resp.json(content_type=None)
    listed = data.get("data") if isinstance(data, dict) else None
    return [m["id"] for m in listed or [] if isinstance(m, dict) and isinstance(m.get("id"), str)]


async def _probe(session: Any, endpoint: Endpoint, prompt: list[int] | str) -> tuple[int, str]:
    """The probe's status and what came back (the stream's text, or the error body)."""
    from parity.serving.client import LOGPROBS, body, overrun

    payload = body(endpoint, prompt, PROBE_TOKENS, 0, LOGPROBS)
    async with session.post(endpoint.url, json=payload) as resp:
        kind = resp.headers.get("Content-Type", "")
        if resp.status != 200:
            return resp.status, (await resp.text())[:200]
        if "text/event-stream" not in kind:
            return -1, f"answered {kind or 'no content type'}, not an event stream"
        seen = []
        async for line in resp.content:
            text = line.decode("utf-8", errors="replace").strip()
            if text.startswith("data:") and text[5:].strip() not in ("", "[DONE]"):
                seen.append(text[5:].strip())
            if len(seen) > overrun(PROBE_TOKENS):
                return -1, f"streamed past {overrun(PROBE_TOKENS)} chunks for {PROBE_TOKENS} tokens"
        if not seen:
            return -1, "the stream carried no data"
        return 200, json.dumps(seen[:1])


async def discover(
    base: str, role: str, *, model: str | None, ids: list[int], text: str, api_path: str,
    headers: dict[str, str],
) -> Endpoint:  # fmt: skip
    """The endpoint as it will be measured; ``UsageError`` (one line) where it cannot be."""
    import aiohttp

    where = f"the {role} at {base}"
    try:
        async with aiohttp.ClientSession(
            headers=headers, timeout=aiohttp.ClientTimeout(total=120)
        ) as session:
            listed = await _models(session, base)
            if model is None:
                if len(listed) != 1:
                    choice = f" (it lists {', '.join(listed[:5])})" if listed else ""
                    raise UsageError(f"{where}: name the model with --{role}-model{choice}")
                model = listed[0]
            # token IDs before text, and log-probabilities asked before not: the first
            # the server takes (a 4xx other than 404 is a refusal of the request's form)
            tries: list[tuple[PromptForm, bool]] = [
                ("ids", True), ("text", True), ("ids", False), ("text", False)
            ]  # fmt: skip
            if Endpoint(base=base, api_path=api_path).chat:  # messages are text
                tries = [t for t in tries if t[0] == "text"]
            for form, scores in tries:
                endpoint = Endpoint(
                    base=base, api_path=api_path, model=model, prompt_form=form,
                    headers=headers, logprobs=scores,
                )  # fmt: skip
                prompt = ids if form == "ids" else text
                status, said = await _probe(session, endpoint, prompt)
                if not (400 <= status < 500 and status != 404):
                    break
    except aiohttp.ClientError as exc:
        raise UsageError(
            f"{where} does not answer ({type(exc).__name__}): start the server or fix the URL"
        ) from None
    except TimeoutError:
        raise UsageError(f"{where} did not answer a probe within 120 s") from None
    except (aiohttp.http_exceptions.HttpProcessingError, ValueError) as exc:
        raise UsageError(
            f"{where} sent a stream parity cannot read ({type(exc).__name__}: a line longer "
            "than the client reads): not an OpenAI-style event stream"
        ) from None
    if status == 404:
        raise UsageError(f"{where} does not know the model {model!r}: {_said(said)}")
    if status == -1:
        raise UsageError(f"{where} does not stream ({said}): parity measures streamed answers")
    if status != 200:
        raise UsageError(f"{where} refused a probe request (HTTP {status}): {_said(said)}")
    return endpoint


def _said(text: str) -> str:
    from parity.errors import one_line
    from parity.safety.redact import redact

    return one_line(redact(text), longest=120)
