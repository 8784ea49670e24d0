"""``parity serve``: the same frozen load against a baseline and a target endpoint, judged.

The request is checked whole before anything runs (URLs without secrets, limits, prices,
the tokenizer, the load); URL sides are probed before either is measured, so a URL that
does not answer, a model it does not know or a server that does not stream is one line and
exit code 2 with nothing written. Then: the client's ceiling against a server that does no
work; the baseline; the target (its step under load at the baseline's highest passing rate
unless ``--rate`` is given, so both answer the same load); a bundle per side; the verdict
from what is in memory (``verdict.json``), the same that ``parity diff`` of the two
bundles gives. A side that fails is recorded and the other is still measured; Ctrl-C or
SIGTERM stops the servers parity started and keeps what was measured.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from parity.bundle import temp_dir_for, write_doc
from parity.errors import OptionError, UsageError
from parity.judge.drift import window_for
from parity.judge.serving import MAX_DRIFT, SOAK, SideFacts, judge
from parity.model.fair import LatencyLimit
from parity.model.inputs import Price
from parity.model.serving import (
    Load,
    Logprob,
    RequestEvent,
    ServeSide,
    ServeVerdict,
    ServeWindow,
    StepFigures,
)
from parity.serving import bundle as sbundle
from parity.serving import metrics
from parity.serving.endpoint import api_path_of, base_url, discover
from parity.serving.load import Tokenizer, build, tokenizer
from parity.serving.side import (
    Measured,
    Settings,
    SideSpec,
    client_ceiling,
    measure_side,
    side_record,
)

VERDICT = "verdict.json"
INTERRUPTED = "interrupted (Ctrl-C or SIGTERM)"
ROLES = ("baseline", "target")


@dataclass(frozen=True, kw_only=True)
class SideInput:
    url: str
    command: tuple[str, ...] | None = None
    model: str | None = None


@dataclass(frozen=True, kw_only=True)
class ServeRequest:
    sides: Mapping[str, SideInput]
    out: Path
    tokenizer: str = "bytes"
    data: str | None = None
    #: None: each side's from its URL (``serving.endpoint.api_path_of``)
    api_path: str | None = None
    api_key_env: str | None = None
    load: Mapping[str, object] = field(default_factory=dict)
    settings: Settings = field(default_factory=Settings)
    min_match: float = 0.95
    min_ratio: float | None = None
    prices: Mapping[str, Price] = field(default_factory=dict)


def _texts(data: str | None) -> tuple[Iterator[str], str]:
    from parity.workloads.checkpoint import corpus_source
    from parity.workloads.sample import documents, parse_data

    src = parse_data(data) if data else corpus_source()
    name = f"{'--data ' + src.path.name if data else 'parity corpus'} sha256:{src.digest()[:16]}"
    return documents(src), name


def make_load(req: ServeRequest, tok: Tokenizer) -> Load:
    texts, source = _texts(req.data)
    return build(tok, texts, source=source, **req.load)  # type: ignore[arg-type]


def _headers(env: str | None) -> dict[str, str]:
    if env is None:
        return {}
    key = os.environ.get(env)
    if not key:
        raise OptionError(f"--api-key-env {env}: that environment variable is not set")
    return {"Authorization": f"Bearer {key}"}


def _specs(req: ServeRequest, headers: dict[str, str]) -> dict[str, SideSpec]:
    out = {}
    for role in ROLES:
        given = req.sides.get(role)
        if given is None:
            raise UsageError(f"give the {role}: --{role}-url URL [--{role}-cmd 'COMMAND']")
        out[role] = SideSpec(
            role=role,
            url=base_url(given.url, role),
            command=given.command,
            model=given.model,
            api_path=api_path_of(given.url, req.api_path),
            headers=headers,
        )
    return out


def _preflight(specs: Mapping[str, SideSpec], load: Load, tok: Tokenizer) -> None:
    """Probe every URL side (no command) before anything is measured."""
    first = list(load.prompts[load.warmup])
    for spec in specs.values():
        if spec.command is None:
            asyncio.run(
                discover(
                    spec.url, spec.role, model=spec.model, ids=first, text=tok.decode(first),
                    api_path=spec.api_path, headers=spec.headers,
                )
            )  # fmt: skip


@contextlib.contextmanager
def _signals_interrupt() -> Iterator[None]:
    """SIGTERM and SIGINT raise KeyboardInterrupt where they land, so that every server
    parity started is stopped on the way out. (Inside ``asyncio.run`` a SIGINT would
    otherwise only cancel the running step, which a step may finish as if complete.)"""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        before = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        for s, h in before.items():
            signal.signal(s, h)


def side_facts(
    side: ServeSide, fingerprint: str, steps: Sequence[StepFigures], events: Sequence[RequestEvent]
) -> SideFacts:
    """What the judge reads of a side: its answers (and their log-probabilities, where the
    server gave them) by step and prompt, good requests only."""
    outputs: dict[str, dict[int, tuple[int, ...]]] = {}
    scores: dict[str, dict[int, tuple[Logprob, ...]]] = {}
    for e in events:
        if e.status == "ok":
            outputs.setdefault(e.step, {})[e.index] = e.output_ids
            if e.logprobs:
                scores.setdefault(e.step, {})[e.index] = e.logprobs
    soaked = next((s for s in steps if s.label == SOAK), None)
    windows: tuple[ServeWindow, ...] = ()
    if soaked is not None:
        width = window_for(side.soak_s or soaked.duration_s)
        windows = metrics.windows([e for e in events if e.step == SOAK], width)
    return SideFacts(
        side=side, fingerprint=fingerprint, steps=tuple(steps), outputs=outputs,
        logprobs=scores, soak_windows=windows,
    )  # fmt: skip


def facts(m: Measured, load: Load) -> SideFacts:
    return side_facts(m.side, load.fingerprint, m.steps, m.events)


def verdict_of(
    sides: Mapping[str, SideFacts], limits: Sequence[LatencyLimit], req: ServeRequest
) -> ServeVerdict:
    return judge(
        sides,
        limits=tuple((x.name, x.limit_s) for x in limits),
        min_match=req.min_match,
        prices=req.prices,
        min_ratio=req.min_ratio,
        max_drift=req.settings.max_drift,
    )


def serve(req: ServeRequest) -> tuple[ServeVerdict, dict[str, Measured], bool]:
    """Measure both sides, write their bundles and the verdict; returns the verdict, the
    measured sides and whether it was interrupted."""
    if (req.out / VERDICT).exists() or any((req.out / r).exists() for r in ROLES):
        raise UsageError(f"{req.out} already holds a comparison: give a new --out")
    specs = _specs(req, _headers(req.api_key_env))
    tok = tokenizer(req.tokenizer)
    load = make_load(req, tok)
    _preflight(specs, load, tok)
    req.out.mkdir(parents=True, exist_ok=True)
    measured: dict[str, Measured] = {}
    interrupted = False
    settings = req.settings
    with _signals_interrupt():
        try:
            ceiling = None
            if settings.ceiling:  # the no-work server's logs are not kept
                with tempfile.TemporaryDirectory(prefix="parity-ceiling-") as logs:
                    ceiling = client_ceiling(load, tok, Path(logs))
            for role in ROLES:
                tmp = temp_dir_for(req.out / role)
                try:
                    m = measure_side(specs[role], load, tok, settings, tmp)
                except KeyboardInterrupt:
                    m = _interrupted(specs[role])
                interrupted = interrupted or m.interrupted or m.side.reason == INTERRUPTED
                m.side = replace(m.side, client_ceiling_rps=ceiling)
                measured[role] = m
                sbundle.write(
                    tmp, req.out / role, side=m.side, load=load, steps=m.steps,
                    events=m.events, scrape=m.scrape,
                )  # fmt: skip
                if interrupted:
                    break
                cap = m.side.capacity
                if settings.load_rate is None and cap is not None and cap.rate is not None:
                    settings = replace(settings, load_rate=cap.rate)
        except KeyboardInterrupt:
            interrupted = True
    limits = settings.limits
    sides = {r: facts(m, load) for r, m in measured.items()}
    verdict = verdict_of(sides, limits, req)
    write_doc(req.out / VERDICT, verdict)
    return verdict, measured, interrupted


def _interrupted(spec: SideSpec) -> Measured:
    side = side_record(spec, status="failed", reason=INTERRUPTED)
    return Measured(side=side)


def diff(paths: Sequence[Path], *, min_match: float, prices: Mapping[str, Price],
         min_ratio: float | None = None) -> ServeVerdict:  # fmt: skip
    """The verdict of two serving side bundles (e.g. measured on two machines); a soak is
    judged against the bound it was run with (recorded in the target's side)."""
    read = [sbundle.SideBundle(p) for p in paths]
    limits = {
        tuple((c.name, c.limit_s) for c in s.checks) for b in read for s in b.steps if s.checks
    }
    if len(limits) > 1:
        raise UsageError("the two bundles were measured against different --slo limits")
    sides = {}
    for role, b in zip(ROLES, read, strict=True):
        side = replace(b.side, role="baseline" if role == "baseline" else "target")
        sides[role] = side_facts(side, b.load.fingerprint, b.steps, b.events)
    return judge(
        sides,
        limits=next(iter(limits)) if limits else (),
        min_match=min_match,
        prices=prices,
        min_ratio=min_ratio,
        max_drift=read[1].side.max_drift or MAX_DRIFT,
    )
