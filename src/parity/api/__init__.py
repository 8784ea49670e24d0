"""The public API, for scripts, notebooks and the command line: ``compare``, ``run``,
``resume``, ``compare_curve``, ``diff``, and the results they return.

    >>> import parity
    >>> result = parity.compare("mlp-train", target="cpu+bf16", repeats=1)
    >>> result.passed, result.speedup
    >>> result.verdict                   # the typed verdict (parity.model.verdict.Verdict)
    >>> result.to_dataframe()            # one row per side (pandas, where installed)
    >>> result.to_dataframe("steps")     # one row per step: time and loss
    >>> result                           # in a notebook: an HTML summary

``compare`` and ``run`` take either a validated request (``parity.request``: what the
command line, a plan or a sweep builds) or what the command line takes, as keyword
arguments named after the options (the keys of ``parity.request.options.TABLE``: ``baseline``,
``target``, ``size``, ``batch_size``, ``seq_len``, ``steps``, ``seed``, ``hf_config``,
``out``, ``repeats``, ``precision``, ``budget_s``, ``compliance``, ``timeout_s``,
``nproc``, ``nnodes``, ``rdzv_endpoint``, ``allow_diff``, ``target_loss``, ``prices``,
``cost``, ``operational``, ``checks``, ``batch_sizes``, ``report``, ...), a workload name,
``hf:ARCH``, ``path/to/file.py:factory`` or ``script=[...]`` (script mode), ``plan=``
(a plan file; the options given replace its values) and ``resume=`` (an interrupted
comparison's directory). Bad input of any type raises a ``parity.UsageError`` subclass
naming the option and the fix, before anything is written; a side that fails is a
result, not an exception.

``progress=`` says how the workers' progress is shown: by default one line per event on
stderr (a tqdm bar per side and repeat in a notebook), ``False`` for silence, or a
callable ``(label, event)`` of your own (``parity.progress``). Given a request, the
default is silence (the command line passes its own display).

The plans are the orchestrator's (``parity.measure.runs``); what happens to a comparison once
measured (judged, written once, reported, indexed, logged) is ``parity.sinks``';
reading existing sides is ``parity.comparison``'s.

Several comparisons in one process (a notebook, a script of its own sweep) can share one
zygote, the process their CPU workers fork from, so that it imports torch once::

    >>> with parity.keep_zygotes():
    ...     for target in ("cpu+bf16", "cpu+fp16"):
    ...         parity.compare("mlp-train", target=target)

Results: ``ComparisonResult.verdict`` is the typed verdict, ``to_dict()`` plain JSON
data, ``to_dataframe()`` a pandas view (pandas is optional: ``pip install pandas``),
``_repr_html_()`` what a notebook shows; ``RunResult`` holds one side's bundle,
``CurveResult`` one comparison per batch size.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from parity.api.results import ComparisonResult, CurveResult, RunResult
from parity.errors import OptionError, UsageError
from parity.model.verdict import Verdict
from parity.request import CompareRequest, RunRequest, ScaleRequest
from parity.runner.kept import keep_zygotes

if TYPE_CHECKING:
    from parity.comparison import Comparison
    from parity.measure.orchestrate import ProgressSink
    from parity.measure.runs import Measured, Ran
    from parity.model.bundle import Bundle
    from parity.model.reports import ScalingReport
    from parity.progress import ProgressArg
    from parity.request.options import Given

__all__ = [
    "ComparisonResult",
    "CurveResult",
    "RunResult",
    "compare",
    "compare_curve",
    "diff",
    "keep_zygotes",
    "resume",
    "run",
]


@overload
def compare(
    workload: CompareRequest, *, progress: ProgressArg = None, resuming: bool = False
) -> ComparisonResult: ...


@overload
def compare(
    workload: str | None = None,
    *,
    plan: str | Path | None = None,
    resume: str | Path | None = None,
    progress: ProgressArg = None,
    **options: Any,
) -> ComparisonResult | CurveResult: ...


def compare(
    workload: CompareRequest | str | None = None,
    *,
    plan: str | Path | None = None,
    resume: str | Path | None = None,
    progress: ProgressArg = None,
    resuming: bool = False,
    **options: Any,
) -> ComparisonResult | CurveResult:
    """Run a workload (or ``script``, a command with ``{device}`` placeholders) on a
    baseline and a target in fresh, interleaved processes and judge them, as ``parity
    compare`` does: the request given, or one built from the options.

    ``target`` defaults to the accelerator PyTorch reports, else ``cpu+bf16``;
    ``hf_config`` is ``{"n_layer": 4}`` or ``["n_layer=4"]``; ``allow_diff`` is
    ``{"steps": "reason"}``; ``prices`` is ``{"target": "21.50:16"}``; ``pins`` (expected
    package versions, drift reported) is ``{"torch": "==2.13.*"}``; ``batch_sizes``
    (``[1, 8, 32]``) returns a ``CurveResult``, one comparison per batch size;
    ``production`` is ``{"parameters": "1.3B", "seq_len": 2048}``, ``slo``
    ``"ttft_p99=200ms,e2e_p99=2s"`` or ``{"ttft_p99": "200ms"}``, ``tuning_intended`` a
    reason (see docs/fairness.md).
    """
    from parity.measure import runs
    from parity.progress import resolve
    from parity.request import compare_request
    from parity.request.options import Given
    from parity.request.values import check_path

    if isinstance(workload, CompareRequest):
        _alone(workload, plan=plan, resume=resume, **options)
        index_server_reachable()
        with resolve(_quiet(progress)) as sink:
            return ComparisonResult(
                _concluded(runs.compare(workload, progress=sink, resuming=resuming))
            )
    from parity.measure.remote import resume_target

    where, published = (
        (None, None) if resume is None else resume_target(check_path("resume", resume))
    )
    planned = None if plan is None else Path(check_path("plan", plan))
    given = Given.read("compare", _named(workload, options), "kwargs")
    request = compare_request(given, planned, where)
    index_server_reachable()
    with resolve(progress) as sink:
        if where is not None:
            found = runs.resume(where, progress=sink, published=published)
            return ComparisonResult(_concluded(found))
        if request.batch_sizes:
            out, results = _curve(request, sink)
            return CurveResult(out, tuple(ComparisonResult(r) for r in results))
        return ComparisonResult(_concluded(runs.compare(request, progress=sink, resuming=resuming)))


def run(
    workload: RunRequest | str | None = None,
    *,
    device: str | None = None,
    progress: ProgressArg = None,
    **options: Any,
) -> RunResult:
    """Run a workload (or ``script``) once on one side (``device``, a side spec) into a
    bundle (``out``; required for a script), as ``parity run`` and ``parity scan`` do:
    the request given, or one built from the options."""
    from parity.measure import runs
    from parity.progress import resolve

    if isinstance(workload, RunRequest):
        _alone(workload, device=device, **options)
        index_server_reachable()
        with resolve(_quiet(progress)) as sink:
            return RunResult(_indexed(workload, runs.run(workload, progress=sink)))
    if device is None:
        raise UsageError("run needs device=, a side spec such as 'cpu' or 'cuda+bf16'")
    from parity.request.options import Given

    given = Given.read("run", {"device": device, **_named(workload, options)}, "kwargs")
    request = RunRequest.build(given)
    index_server_reachable()
    with resolve(progress) as sink:
        return RunResult(_indexed(request, runs.run(request, progress=sink)))


def resume(
    out: Path,
    *,
    progress: ProgressArg = None,
    request: CompareRequest | None = None,
    published: str | None = None,
) -> ComparisonResult:
    """Finish an interrupted comparison (see ``parity.measure.runs.resume``; ``published``:
    the URL it was published to, ``out`` its local copy); progress as with a request (none
    by default)."""
    from parity.measure import runs
    from parity.progress import resolve

    index_server_reachable()
    with resolve(_quiet(progress)) as sink:
        found = runs.resume(out, progress=sink, request=request, published=published)
        return ComparisonResult(_concluded(found))


def compare_curve(
    request: CompareRequest, *, progress: ProgressArg = None
) -> tuple[Path, list[ComparisonResult]]:
    """One comparison per batch size (``OUT/bsN``) and ``curve.json``."""
    from parity.progress import resolve

    with resolve(_quiet(progress)) as sink:
        out, made = _curve(request, sink)
    return out, [ComparisonResult(c) for c in made]


def _concluded(measured: Measured) -> Comparison:
    """Judge a measured comparison and send it to every sink (``parity.sinks``)."""
    from parity.sinks import conclude

    comparison, request, url = measured
    return conclude(
        comparison, request.judge, mlflow=request.mlflow, url=url, report=request.report
    )


def _indexed(request: RunRequest, ran: Ran) -> Bundle:
    """A run (not a scan) goes into the history index, as a comparison's sides do."""
    from parity.store import index_quietly

    if request.mode == "run":
        index_quietly(ran.bundle, url=ran.url)
    return ran.bundle


def _curve(request: CompareRequest, sink: ProgressSink | None) -> tuple[Path, list[Comparison]]:
    """One comparison per batch size (``OUT/bsN``), each judged, and ``curve.json`` with
    the best batch size within the SLO."""
    from parity.bundle import CURVE, write_doc
    from parity.judge.slo import best_batch
    from parity.measure import runs
    from parity.model.reports import Curve, CurvePoint

    out = runs.curve_out(request)
    results = [
        _concluded(
            runs.compare(
                replace(request.with_batch_size(bs), out=str(out / f"bs{bs}")), progress=sink
            )
        )
        for bs in request.batch_sizes
    ]
    pairs = [
        (bs, r.verdict)
        for bs, r in zip(request.batch_sizes, results, strict=True)
        if r.verdict is not None
    ]
    curve = Curve(
        batch_sizes=request.batch_sizes,
        points=tuple(CurvePoint.of(bs, verdict) for bs, verdict in pairs),
        best=best_batch(pairs),
    )
    write_doc(out / CURVE, curve)
    return out, results


def diff(
    bundle_a: Path | str,
    bundle_b: Path | str,
    *,
    given: Given | None = None,
    reference: Path | str | None = None,
    checks: list[Path] | None = None,
    **options: Any,
) -> Verdict:
    """Judge two existing bundles (possibly from different machines; paths or URLs).

    Sides from one ``parity compare`` directory are judged with the inputs that compare
    stored (``inputs.json``: allowed differences, target loss, resolved prices,
    operational answers, pinned versions), so the verdict is the same; the options given
    (``given``, as read by the option table, or keyword arguments as ``compare`` takes
    them: ``target_loss``, ``prices``, ``pins``, ``slo``...) replace them. Nothing is
    written."""
    from parity.comparison import Comparison
    from parity.measure.remote import relocated
    from parity.request.options import Given
    from parity.sinks import judge_inputs
    from parity.storage import is_url, readable, shown

    chosen = (given or Given("diff")).merged(Given.read("diff", options, "kwargs"))
    where = {
        r: shown(str(u)) for r, u in (("baseline", bundle_a), ("target", bundle_b)) if is_url(u)
    }
    a, b = readable(bundle_a), readable(bundle_b)
    ref = readable(reference) if reference is not None else None
    found = Comparison.of_sides(a, b, reference=ref)
    stored = chosen.placed(found.inputs, "judge")
    inputs = judge_inputs(found, stored, roots=[a.parent, b.parent], checks=checks)
    judged = found.judged(inputs)
    assert judged.verdict is not None
    return relocated(judged.verdict, where)


def _quiet(progress: ProgressArg) -> ProgressArg:
    """``progress`` beside a request: none unless given."""
    return False if progress is None else progress


def _alone(request: CompareRequest | RunRequest, **ignored: object) -> None:
    """A request carries all its options: refuse any given beside it."""
    extra = sorted(k for k, v in ignored.items() if v is not None)
    if extra:
        raise UsageError(
            f"{', '.join(extra)} given beside a {type(request).__name__}: put them in the "
            "request, or pass options without one"
        )


def _named(workload: str | None, options: Mapping[str, object]) -> dict[str, object]:
    """The keyword arguments as options; one given as None is a usage error (it reads as
    "not given" below, so ``baseline=None`` would silently run the default)."""
    for key, value in options.items():
        if value is None:
            raise OptionError(
                f"{key}=None: leave {key} out for its default, or give a value "
                f"(e.g. {key}={_EXAMPLES.get(key, '...')})"
            )
    return {"workload": workload, **options} if workload is not None else dict(options)


_EXAMPLES = {"baseline": "'cpu'", "target": "'cpu+bf16'", "device": "'cpu'", "out": "'runs/a'"}


def scale(request: ScaleRequest, *, progress: ProgressSink | None = None) -> ScalingReport:
    """Scaling over process counts as torchrun jobs (DDP), as ``parity scale`` runs it: the
    counts measured, the loss curves of the fewest and the most processes judged against
    each other, and ``scaling.json`` written."""
    from parity.bundle import SideRuns, write_doc
    from parity.judge.verdict import judge
    from parity.measure.scaling import DEFINITION, SCALING_FILE, measure_counts
    from parity.model.reports import LossCurves, ScalingReport

    out, workload, points, bundles = measure_counts(request, progress=progress)
    ok = [n for n in request.counts if bundles[n].ok]
    curves = None
    if len(ok) >= 2:
        verdict = judge(SideRuns.of(bundles[ok[0]]), SideRuns.of(bundles[ok[-1]]))
        curves = LossCurves(
            baseline=f"n{ok[0]}",
            target=f"n{ok[-1]}",
            quality=verdict.quality,
            passed=verdict.passed,
        )
    report = ScalingReport(
        side=str(request.side),
        workload=workload,
        points=tuple(points),
        definition=DEFINITION,
        loss_curves=curves,
        passed=all(p.status == "ok" for p in points) and (curves is None or curves.passed),
    )
    write_doc(out / SCALING_FILE, report)
    return report


def index_server_reachable() -> None:
    """The team's index (a PostgreSQL ``$PARITY_STORE``) reached with its credentials
    before anything runs: a wrong password is bad input, not a warning at the end."""
    import os

    if "://" in os.environ.get("PARITY_STORE", ""):
        from parity.store.engine import check_server

        check_server()
