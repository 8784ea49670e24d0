"""``parity check``: rollback, failure recovery and sustained load (soak).

Each check is a plan of parts (fresh worker processes) run by the orchestrator into
bundles under ``--out``, and a ``check.json`` (``parity.model.checks.CheckResult``)
written last; exit 0 (pass), 1 (fail) or 2 (bad input). A passing check ticks the
verdict's "not yet proven" list of a comparison on the same sides (``parity compare
--checks DIR,...``, or ``OUT/checks/<name>/check.json`` beside the sides, which ``parity
diff`` reads too).

This package's ``__init__`` stays light: the CLI imports it on every start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from parity.measure.orchestrate import ProgressSink
    from parity.model.checks import CheckResult
    from parity.request import CheckRequest


def run_check(request: CheckRequest, *, progress: ProgressSink | None = None) -> CheckResult:
    """Run the check a request names and return its result (``check.json`` is written)."""
    if request.check == "rollback":
        from parity.checks.rollback import rollback

        return rollback(request, progress=progress)
    if request.check == "recovery":
        from parity.checks.recovery import recovery

        return recovery(request, progress=progress)
    from parity.checks.soak import soak

    return soak(request, progress=progress)
