"""The frozen load: a seeded arrival schedule and token-ID prompts, fingerprinted.

Arrivals are drawn once at unit rate from the seed and scaled by ``1 / rate`` (as vLLM's
``bench serve`` does), so every rate of a capacity search replays the same pattern, only
faster or slower: Poisson (exponential gaps), gamma (shape = burstiness, mean gap 1),
constant (equal gaps), or a closed loop (a request leaves as the one before it in its slot
ends; no schedule). Prompts are token-ID lists cut from real text with the model's own
tokenizer, of seeded lengths in a stated range; ``max_tokens`` likewise. Temperature is 0:
both sides answer greedily. Everything enters the fingerprint, so two bundles whose loads
differ are not compared.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from dataclasses import replace
from typing import Protocol

from parity.errors import OptionError
from parity.model.codec import encode
from parity.model.serving import Arrival, Load

ARRIVALS: tuple[Arrival, ...] = ("poisson", "gamma", "constant", "closed")


class Tokenizer(Protocol):
    """What the load needs of a tokenizer: text to IDs and back, and a name with a digest."""

    name: str

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


class ByteTokenizer:
    """UTF-8 bytes as token IDs: for servers that take any IDs (the scripted test server)."""

    name = "utf-8 bytes"

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: list[int]) -> str:
        return bytes(i % 256 for i in ids).decode("utf-8", errors="replace")


def unit_gaps(arrival: Arrival, count: int, seed: int, burstiness: float) -> list[float]:
    """Gaps between arrivals at one request per second (mean 1), drawn from ``seed``."""
    rng = random.Random(seed)
    if arrival == "poisson":
        return [rng.expovariate(1.0) for _ in range(count)]
    if arrival == "gamma":
        return [rng.gammavariate(burstiness, 1.0 / burstiness) for _ in range(count)]
    return [1.0] * count


def schedule(
    load: Load, rate: float, count: int | None = None, arrival: Arrival | None = None
) -> list[float]:
    """Seconds from a step's start at which each request is due, at ``rate`` per second
    (``arrival``: the load's unless given, as a soak's constant rate). The first request is
    due at once."""
    n = load.requests if count is None else count
    gaps = unit_gaps(arrival or load.arrival, n, load.seed, load.burstiness)
    out, t = [], 0.0
    for gap in gaps:
        out.append(t)
        t += gap / rate
    return out


def build(
    tokenizer: Tokenizer,
    texts: Iterator[str],
    *,
    source: str,
    arrival: Arrival = "poisson",
    burstiness: float = 1.0,
    seed: int = 0,
    requests: int = 100,
    concurrency: int = 1,
    warmup: int = 0,
    prompt_tokens: tuple[int, int] = (16, 64),
    output_tokens: tuple[int, int] = (16, 32),
) -> Load:
    """A load of ``warmup + requests`` prompts cut from ``texts`` (consecutive windows of
    the tokenized text, of seeded lengths), fingerprinted."""
    check_ranges(prompt_tokens, output_tokens, requests, concurrency, burstiness, warmup)
    rng = random.Random(seed + 1)
    total = warmup + requests
    lengths = [rng.randint(*prompt_tokens) for _ in range(total)]
    max_tokens = tuple(rng.randint(*output_tokens) for _ in range(total))
    stream: list[int] = []
    prompts: list[tuple[int, ...]] = []
    for length in lengths:
        while len(stream) < length:
            stream.extend(tokenizer.encode(next(texts) + "\n"))
        prompts.append(tuple(stream[:length]))
        del stream[:length]
    load = Load(
        arrival=arrival,
        burstiness=burstiness,
        seed=seed,
        requests=requests,
        concurrency=concurrency,
        warmup=warmup,
        tokenizer=tokenizer.name,
        source=source,
        prompt_tokens=prompt_tokens,
        output_tokens=output_tokens,
        prompts=tuple(prompts),
        max_tokens=max_tokens,
    )
    return replace(load, fingerprint=fingerprint(load))


def check_ranges(
    prompt_tokens: tuple[int, int],
    output_tokens: tuple[int, int],
    requests: int,
    concurrency: int,
    burstiness: float,
    warmup: int,
) -> None:
    for name, (lo, hi) in (("--prompt-tokens", prompt_tokens), ("--output-tokens", output_tokens)):
        if not 1 <= lo <= hi <= 1_000_000:
            raise OptionError(f"{name} {lo}..{hi}: give MIN..MAX with 1 <= MIN <= MAX, e.g. 16..64")
    if not 1 <= requests <= 1_000_000:
        raise OptionError(f"--requests {requests}: give between 1 and 1000000")
    if not 1 <= concurrency <= 10_000:
        raise OptionError(f"--concurrency {concurrency}: give between 1 and 10000")
    if not 0 < burstiness <= 1000:
        raise OptionError(f"--burstiness {burstiness}: give a positive number (1 is Poisson)")
    if not 0 <= warmup <= 100_000:
        raise OptionError(f"--warmup {warmup}: give between 0 and 100000")


def fingerprint(load: Load) -> str:
    """sha256 over every field of the load but the fingerprint."""
    data = encode(replace(load, fingerprint=""))
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def measured(load: Load) -> range:
    """The indices of the measured prompts (the warm-up ones come first)."""
    return range(load.warmup, load.warmup + load.requests)


class HfTokenizer:
    """A model's own tokenizer, read from disk (a tokenizer directory, or a ``.gguf``
    file's embedded one); never downloaded. Its name carries the files' digest."""

    def __init__(self, path: str) -> None:
        from pathlib import Path

        from parity.workloads.sample import digest

        where = Path(path)
        if not where.exists():
            raise OptionError(f"--tokenizer {path}: no such file or directory")
        try:
            from transformers import AutoTokenizer  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raise OptionError(
                "--tokenizer needs transformers: pip install 'parity[hf]' (or --tokenizer bytes)"
            ) from None
        try:
            if where.suffix == ".gguf":
                tok = AutoTokenizer.from_pretrained(where.parent, gguf_file=where.name)
            else:
                tok = AutoTokenizer.from_pretrained(where, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise OptionError(f"--tokenizer {path}: not a tokenizer ({exc})") from None
        self._tok = tok
        self.name = f"{where.name} sha256:{digest(where)[:16]}"

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False))

    def decode(self, ids: list[int]) -> str:
        return str(self._tok.decode(ids))


def tokenizer(spec: str) -> Tokenizer:
    """``bytes`` or a path (``--tokenizer``)."""
    return ByteTokenizer() if spec == "bytes" else HfTokenizer(spec)
