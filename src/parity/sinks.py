"""What a comparison goes through once its sides are measured, each step taking the
comparison in memory: the judge's inputs (prices, checks) before judging, then the
verdict written once, the HTML report, the index and MLflow.

The steps after the verdict never lose results: each warns on failure and the
comparison's directory stays complete (``parity report``, ``parity reindex`` redo them).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from parity.comparison import Comparison
from parity.model.bundle import SideRuns
from parity.model.verdict import CostInputs, JudgeInputs, Price

if TYPE_CHECKING:
    from parity.request import MlflowLog

log = logging.getLogger("parity")


def resolve_prices(cost: CostInputs, a: SideRuns, b: SideRuns) -> CostInputs:
    """Prices for sides without one, from ``devices/specs.toml`` by the device names and
    logical-core setting each bundle recorded: resolved before judging, so a verdict
    depends on its inputs."""
    from parity.devices.specs import DeviceKey, price_for

    prices = dict(cost.prices)
    for role, side in (("baseline", a), ("target", b)):
        env = side.first.manifest.environment
        if role in prices or env is None:
            continue
        found = price_for(DeviceKey.of(env.device))
        if found is not None:
            prices[role] = Price(
                usd_per_hour=found.entry.usd_per_hour,
                accelerators=found.framework_devices,
                instance=found.entry.instance,
                source=found.source_text(),
            )
    return replace(cost, prices=prices)


def judge_inputs(
    comparison: Comparison,
    inputs: JudgeInputs,
    *,
    roots: list[Path],
    checks: list[Path] | None = None,
) -> JudgeInputs:
    """``inputs`` with the sides' prices resolved and what the checks stored under
    ``roots`` (and ``checks``) proved."""
    from parity.checks.common import checked_for

    a, b = comparison.measured_sides()
    checked = checked_for(a.first, b.first, roots=roots, extra=checks)
    return replace(inputs, cost=resolve_prices(inputs.cost, a, b), checked=checked)


def conclude(
    comparison: Comparison,
    inputs: JudgeInputs,
    *,
    mlflow: MlflowLog | None = None,
    url: str | None = None,
    report: bool = True,
) -> Comparison:
    """Judge a measured comparison and send it to every sink: ``inputs.json`` and
    ``verdict.json``, the HTML report, the comparison published at ``url`` (if given: the
    verdict names its sides there), the index, and MLflow where asked; the HTML report
    unless ``report`` is False (the report, the index and MLflow after the verdict is on
    disk: a failure only warns)."""
    from parity.report.run import report_after_compare
    from parity.store import index_quietly

    inputs = judge_inputs(comparison, inputs, roots=[comparison.out])
    judged = comparison.judged(inputs)
    if url:
        from parity.measure.remote import relocated
        from parity.storage import shown

        assert judged.verdict is not None
        where = {role: f"{shown(url)}/{role}" for role in ("baseline", "target")}
        judged = replace(judged, verdict=relocated(judged.verdict, where), url=shown(url))
    done = judged.save()
    if report:
        done = replace(done, report=report_after_compare(done))
    if url:
        from parity.storage import publish

        publish(done.out, url)
    index_quietly(done, url=url)
    if mlflow is not None:
        from parity.report.mlflow import log_comparison_quietly

        log_comparison_quietly(done, tracking_uri=mlflow.tracking_uri, experiment=mlflow.experiment)
    return done
