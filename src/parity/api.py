"""The API the command line calls, one function per command that measures or judges:
``run``, ``compare``, ``resume``, ``compare_curve``, ``diff``.

Each takes a validated request (``parity.request``) and returns what ``parity.compare``
returns (``parity.results``; ``run`` the bundle it made). The plans are the orchestrator's
(``parity.runs``); what happens to a comparison once measured (judged, written once,
reported, indexed, logged) is ``parity.sinks``'; reading existing sides is
``parity.comparison``'s. Bad input is refused before anything is written; a side that
fails is a result, not an error.
"""

from __future__ import annotations

from pathlib import Path

from parity import runs
from parity.comparison import Comparison
from parity.model.bundle import Bundle
from parity.model.verdict import JudgeInputs, Verdict
from parity.orchestrate import ProgressSink
from parity.request import CompareRequest, RunRequest
from parity.results import ComparisonResult
from parity.sinks import judge_inputs, overridden

__all__ = ["compare", "compare_curve", "diff", "resume", "run"]


def run(request: RunRequest, *, progress: ProgressSink | None = None) -> Bundle:
    """Run one side once (or scan it) into the bundle ``request.out``."""
    return runs.run(request, progress=progress)


def compare(
    request: CompareRequest, *, progress: ProgressSink | None = None, resuming: bool = False
) -> ComparisonResult:
    """Measure both sides in fresh, interleaved processes and judge them."""
    return ComparisonResult(runs.compare(request, progress=progress, resuming=resuming))


def resume(
    out: Path, *, progress: ProgressSink | None = None, request: CompareRequest | None = None
) -> ComparisonResult:
    """Finish an interrupted comparison (see ``parity.runs.resume``)."""
    return ComparisonResult(runs.resume(out, progress=progress, request=request))


def compare_curve(
    request: CompareRequest, *, progress: ProgressSink | None = None
) -> tuple[Path, list[ComparisonResult]]:
    """One comparison per batch size (``OUT/bsN``) and ``curve.json``."""
    out, made = runs.compare_curve(request, progress=progress)
    return out, [ComparisonResult(c) for c in made]


def diff(
    bundle_a: Path | str,
    bundle_b: Path | str,
    *,
    given: JudgeInputs | None = None,
    reference: Path | str | None = None,
    checks: list[Path] | None = None,
) -> Verdict:
    """Judge two existing bundles (possibly from different machines; paths or URLs).

    Sides from one ``parity compare`` directory are judged with the inputs that compare
    stored (``inputs.json``: allowed differences, target loss, resolved prices,
    operational answers, pinned versions), so the verdict is the same; inputs ``given``
    replace them. Nothing is written."""
    from parity.remote import relocated
    from parity.storage import is_url, readable, shown

    where = {
        r: shown(str(u)) for r, u in (("baseline", bundle_a), ("target", bundle_b)) if is_url(u)
    }
    a, b = readable(bundle_a), readable(bundle_b)
    ref = readable(reference) if reference is not None else None
    found = Comparison.of_sides(a, b, reference=ref)
    inputs = judge_inputs(
        found, overridden(found.inputs, given), roots=[a.parent, b.parent], checks=checks
    )
    judged = found.judged(inputs)
    assert judged.verdict is not None
    return relocated(judged.verdict, where)
