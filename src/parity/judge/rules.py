"""The fair-comparison rules added to a verdict: tuning asymmetry, representativeness,
fit at production size, and the latency limits' gate (each judged in its own module;
this one reads the bundles for them and puts the sections in place)."""

from __future__ import annotations

from dataclasses import replace

from parity.judge.fit import Measured, judge_fit
from parity.judge.representative import FROZEN, HOW, ITEM, UNSEEN, judge_representative
from parity.judge.slo import judge_slo
from parity.judge.tuning import judge_tuning
from parity.model.bundle import Bundle, SideRuns
from parity.model.fair import DeviceMemory, Fit, Representativeness, Slo
from parity.model.findings import Finding
from parity.model.manifest import FlagValue
from parity.model.roles import ByRole
from parity.model.verdict import DATA_PIPELINE, Gate, JudgeInputs, UnprovenItem, Verdict


def device_memory(bundle: Bundle) -> DeviceMemory | None:
    """The memory the side's worker recorded: the device's own report, else the
    ``devices/specs.toml`` figure for its name, with the source."""
    env = bundle.manifest.environment
    if env is None or env.device.memory_bytes is None:
        return None
    return DeviceMemory(
        bytes=env.device.memory_bytes, source=env.device.memory_source or "recorded"
    )


def _measured(side: SideRuns) -> Measured | None:
    if not side.ok:
        return None
    first = side.ok[0]
    if first.metrics is None:
        return None
    memory = first.metrics.memory
    resolved = first.manifest.resolved
    return Measured(
        memory=memory,
        host=memory.steps.device.allocated is None,
        probed=first.capture is not None,
        precision=resolved.precision if resolved is not None else first.side.precision,
        device_memory=device_memory(first),
    )


def _flags(bundle: Bundle) -> dict[str, FlagValue]:
    env = bundle.manifest.environment
    return dict(env.device.flags) if env is not None else {}


def _slo_gate(slo: Slo) -> Gate:
    failing = [c for c in slo.sides.target.checks if c.status != "pass"]
    if failing:
        outside = Finding(
            code="slo.outside",
            severity="blocks",
            figures={"checks": [c.figures() for c in failing]},
        )
        return Gate(name="latency limits", passed=slo.passed, finding=outside)
    within = Finding(
        code="slo.within", severity="context", figures={"limits": [x.name for x in slo.limits]}
    )
    return Gate(name="latency limits", passed=slo.passed, finding=within)


def _unproven(verdict: Verdict, shape: Representativeness) -> Verdict:
    """The representative-workload item: what the shape showed, where it was checked."""
    found = None
    if shape.representative is not None:
        found = Finding(code="shape.measured", severity="context", figures=shape.figures())
    item = UnprovenItem(
        item=ITEM,
        checked=bool(shape.representative),
        evidence=None,
        how_to_check=HOW,
        finding=found,
    )
    return replace(verdict, unproven=(*verdict.unproven, item))


def apply_rules(
    verdict: Verdict, baseline: SideRuns, target: SideRuns, inputs: JudgeInputs
) -> Verdict:
    """The verdict with the four rules' sections, the latency gate and the unproven item."""
    a, b = baseline.first, target.first
    description = a.manifest.workload.description
    tuning = judge_tuning(
        ByRole(baseline=a.side, target=b.side),
        ByRole(baseline=a.manifest.resolved, target=b.manifest.resolved),
        ByRole(baseline=_flags(a), target=_flags(b)),
        batch=description.batch_size,
        intended=inputs.tuning_intended,
    )
    fed = DATA_PIPELINE in inputs.checked or all(
        info.input_pipeline is not None for _, info in verdict.sides.items()
    )
    shape = judge_representative(
        description,
        (str(a.side.precision), str(b.side.precision)),
        "the workload's loader" if fed else UNSEEN if description.script_mode else FROZEN,
        inputs.production,
    )
    fit: Fit | None = None
    if inputs.production is not None:
        fit = judge_fit(
            description,
            inputs.production,
            ByRole(baseline=_measured(baseline), target=_measured(target)),
        )
    slo = judge_slo(inputs.slo, ByRole(baseline=baseline, target=target))
    gates = verdict.gates if slo is None else (*verdict.gates, _slo_gate(slo))
    made = replace(verdict, tuning=tuning, representativeness=shape, fit=fit, slo=slo, gates=gates)
    return _unproven(made, shape)
