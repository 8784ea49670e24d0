"""``parity serve``: the same load against a baseline and a target inference endpoint.

Each side is a URL (``--baseline-url``) or, with ``--baseline-cmd``, a server command that
parity starts and expects at that URL. Options are parsed into one ``serve.ServeRequest``;
the work is ``parity.api.serve``'s, the words ``report.serving``'s.
"""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from parity.cli import common as c
from parity.errors import OptionError

if TYPE_CHECKING:
    from parity.api.serve import SideInput
    from parity.model.fair import LatencyLimit
    from parity.model.serving import ServeVerdict
    from parity.serving.side import Measured

Url = Annotated[str, typer.Option(metavar="URL", help="where the side answers (http://HOST:PORT)")]
Cmd = Annotated[
    str | None,
    typer.Option(
        metavar="COMMAND", help="a server command parity starts (it must listen at the URL)"
    ),
]
Model = Annotated[str | None, typer.Option(metavar="NAME", help="model name (default: /v1/models)")]
EXIT = {"pass": 0, "fail": 1, "inconclusive": 3}


def _range(name: str, text: str) -> tuple[int, int]:
    lo, sep, hi = text.partition("..")
    try:
        return (int(lo), int(hi if sep else lo))
    except ValueError:
        raise OptionError(f"{name} {text}: give MIN..MAX whole numbers, e.g. 16..64") from None


def _seconds(name: str, text: str | None) -> float | None:
    if text is None:
        return None
    from parity.request.fair_options import parse_slo

    return parse_slo(f"e2e_p50={text}")[0].limit_s if text else None


ApiPath = Annotated[
    str | None,
    typer.Option(
        metavar="PATH",
        help="/v1/completions or /v1/chat/completions (default: as the URL ends, else completions)",
    ),
]
ApiKeyEnv = Annotated[
    str | None, typer.Option(metavar="VAR", help="environment variable holding an API key")
]
Tokenizer = Annotated[
    str, typer.Option(metavar="PATH", help="the model's tokenizer: a directory, a .gguf, or bytes")
]
Data = Annotated[str | None, typer.Option(metavar="FILE[:FIELD]", help="prompt text")]
Arrival = Annotated[str, typer.Option(metavar="KIND", help="poisson, gamma, constant or closed")]
Burstiness = Annotated[float, typer.Option(metavar="SHAPE", help="gamma shape (1: Poisson)")]
Seed = Annotated[int, typer.Option(metavar="N", help="the load's seed")]
Requests = Annotated[int, typer.Option(metavar="N", help="requests per measured step")]
Concurrency = Annotated[int, typer.Option(metavar="N", help="closed loop: requests in flight")]
Warmup = Annotated[int, typer.Option(metavar="N", help="warm-up requests, left out")]
Tokens = Annotated[str, typer.Option(metavar="MIN..MAX")]
Slo = Annotated[
    list[str] | None, typer.Option(metavar="LIMITS", help="e.g. ttft_p99=2s,tpot_p90=200ms")
]
Rate = Annotated[
    float | None,
    typer.Option(
        metavar="REQ/S",
        help="the step under load (default: the baseline's highest passing rate)",
    ),
]
StartRate = Annotated[float | None, typer.Option(metavar="REQ/S", help="the search's first rate")]
MaxSteps = Annotated[int, typer.Option(metavar="N", help="steps per capacity search")]
QualityPrompts = Annotated[int, typer.Option(metavar="N", help="prompts compared at concurrency 1")]
MinMatch = Annotated[
    float, typer.Option(metavar="FRACTION", help="least exact-match rate of greedy answers")
]
MinRatio = Annotated[float | None, typer.Option(metavar="RATIO", help="least target/baseline rate")]
Price = Annotated[list[str] | None, typer.Option(metavar="SIDE=USD[:N]")]
ClientLag = Annotated[
    str, typer.Option(metavar="TIME", help="client-bound above this dispatch lag p99")
]
ReadyTimeout = Annotated[str, typer.Option(metavar="TIME")]
Ceiling = Annotated[bool, typer.Option(help="measure the client's own ceiling")]
Soak = Annotated[
    str | None,
    typer.Option(
        metavar="TIME", help="then hold each side's highest passing rate this long (e.g. 1h)"
    ),
]
MaxDrift = Annotated[
    float, typer.Option(metavar="FRACTION", help="the soak's latency drift bound, per hour")
]
Out = Annotated[Path | None, typer.Option(metavar="DIR")]


def serve(
    baseline_url: Url,
    target_url: Url,
    baseline_cmd: Cmd = None,
    target_cmd: Cmd = None,
    baseline_model: Model = None,
    target_model: Model = None,
    model: Model = None,
    api_path: ApiPath = None,
    api_key_env: ApiKeyEnv = None,
    tokenizer: Tokenizer = "bytes",
    data: Data = None,
    arrival: Arrival = "poisson",
    burstiness: Burstiness = 1.0,
    seed: Seed = 0,
    requests: Requests = 100,
    concurrency: Concurrency = 1,
    warmup: Warmup = 4,
    prompt_tokens: Tokens = "16..64",
    output_tokens: Tokens = "16..32",
    slo: Slo = None,
    rate: Rate = None,
    start_rate: StartRate = None,
    max_steps: MaxSteps = 10,
    quality_prompts: QualityPrompts = 16,
    min_match: MinMatch = 0.95,
    min_ratio: MinRatio = None,
    price: Price = None,
    client_lag: ClientLag = "25ms",
    ready_timeout: ReadyTimeout = "900s",
    ceiling: Ceiling = True,
    soak: Soak = None,
    max_drift: MaxDrift = 0.10,
    out: Out = None,
    store: c.Store = None,
) -> None:
    """Compare two inference endpoints under one frozen load: quality, latency, capacity, cost."""
    from parity.api.serve import ServeRequest
    from parity.api.serve import serve as run
    from parity.request.fair_options import parse_slo
    from parity.request.values import parse_price
    from parity.serving.side import Settings

    c.use_store(store)
    limits = parse_slo(slo) if slo else ()
    prices = dict(parse_price(p) for p in price or ())
    soak_s = _soak(soak, limits, rate, min_match, max_drift)
    sides = _sides(
        (baseline_url, baseline_cmd, baseline_model), (target_url, target_cmd, target_model), model
    )
    settings = Settings(
        limits=limits, quality_prompts=quality_prompts, start_rate=start_rate, load_rate=rate,
        max_steps=max_steps, lag_bound_s=_seconds("--client-lag", client_lag) or 0.025,
        ready_timeout_s=_seconds("--ready-timeout", ready_timeout) or 900.0, ceiling=ceiling,
        soak_s=soak_s, max_drift=max_drift,
    )  # fmt: skip
    load = _load(arrival, burstiness, seed, requests, concurrency, warmup, prompt_tokens,
                 output_tokens)  # fmt: skip
    where = out or Path("parity-serve") / time.strftime("%Y%m%d-%H%M%S")
    req = ServeRequest(
        sides=sides, out=where, tokenizer=tokenizer, data=data, api_path=api_path,
        api_key_env=api_key_env, load=load, settings=settings, min_match=min_match,
        min_ratio=min_ratio, prices=prices,
    )  # fmt: skip
    began = time.perf_counter()
    verdict, measured, interrupted = run(req)
    _show(where, verdict, measured, began)
    if interrupted:
        sys.stderr.write("parity: interrupted: what was measured is kept\n")
        raise typer.Exit(130)
    raise typer.Exit(EXIT[verdict.outcome])


def _soak(
    soak: str | None,
    limits: tuple[LatencyLimit, ...],
    rate: float | None,
    min_match: float,
    max_drift: float,
) -> float | None:
    """The soak's length, the match and drift bounds checked first (in that order)."""
    from parity.request.values import parse_duration

    if not 0 <= min_match <= 1:
        raise OptionError(f"--min-match {min_match}: give a fraction between 0 and 1")
    if not max_drift > 0:
        raise OptionError(f"--max-drift {max_drift}: give a positive fraction per hour, e.g. 0.1")
    soak_s = parse_duration(soak, "--soak") if soak is not None else None
    if soak_s and not limits and rate is None:
        raise OptionError(
            "--soak holds the highest rate within --slo limits: give --slo (or --rate)"
        )
    return soak_s


def _sides(
    baseline: tuple[str, str | None, str | None],
    target: tuple[str, str | None, str | None],
    model: str | None,
) -> dict[str, SideInput]:
    """Each side's URL, server command and model (``--model`` where its own is not given)."""
    from parity.api.serve import SideInput

    return {
        role: SideInput(url=url, command=_split(cmd), model=own or model)
        for role, (url, cmd, own) in (("baseline", baseline), ("target", target))
    }


def _load(
    arrival: str,
    burstiness: float,
    seed: int,
    requests: int,
    concurrency: int,
    warmup: int,
    prompt_tokens: str,
    output_tokens: str,
) -> dict[str, object]:
    """The load's settings (``serving.load``), its arrival kind and token ranges checked."""
    if arrival not in ("poisson", "gamma", "constant", "closed"):
        raise OptionError(f"--arrival {arrival}: use poisson, gamma, constant or closed")
    return {
        "arrival": arrival, "burstiness": burstiness, "seed": seed, "requests": requests,
        "concurrency": concurrency, "warmup": warmup,
        "prompt_tokens": _range("--prompt-tokens", prompt_tokens),
        "output_tokens": _range("--output-tokens", output_tokens),
    }  # fmt: skip


def _show(
    where: Path, verdict: ServeVerdict, measured: Mapping[str, Measured], began: float
) -> None:
    """The report page written, the comparison indexed, the verdict's lines printed."""
    from parity.report.serving import lines, page
    from parity.store import index_quietly

    sides_seen = {r: m.side for r, m in measured.items()}
    steps = {r: m.steps for r, m in measured.items()}
    (where / "report.html").write_text(page(verdict, sides_seen, steps))
    index_quietly(where)  # parity ls lists it, parity show ID shows its verdict
    for line in lines(verdict, sides_seen, steps):
        c.write_out(line)
    c.note(f"took {time.perf_counter() - began:.0f} s; bundles and verdict.json in {where}")


def _split(command: str | None) -> tuple[str, ...] | None:
    if command is None:
        return None
    parts = tuple(shlex.split(command))
    if not parts:
        raise OptionError("an empty server command: give the command that starts the server")
    return parts


def register(app: typer.Typer) -> None:
    app.command(short_help="compare two inference endpoints under one load")(serve)
