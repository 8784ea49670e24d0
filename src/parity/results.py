"""The Python API for scripts and notebooks: ``parity.compare`` and ``parity.run``.

    >>> import parity
    >>> result = parity.compare("mlp-train", target="cpu+bf16", repeats=1)
    >>> result.passed, result.speedup
    >>> result.to_dataframe()            # one row per side (pandas, where installed)
    >>> result.to_dataframe("steps")     # one row per step: time and loss
    >>> result                           # in a notebook: an HTML summary

Both take the same inputs as the command line (a workload name, ``hf:ARCH``,
``path/to/file.py:factory``, or ``script=[...]`` for script mode) and return result
objects: ``to_dict()`` is plain JSON data, ``to_dataframe()`` a pandas view (pandas is
optional: ``pip install pandas``), ``_repr_html_()`` what a notebook shows. Bad input
raises ``parity.UsageError``; a side that fails is a result, not an exception.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from parity.errors import UsageError
from parity.model.codec import encode
from parity.model.verdict import Role

if TYPE_CHECKING:
    from parity.api import CompareResult
    from parity.bundle import Bundle, SideRuns

ROLES: tuple[Role, Role] = ("baseline", "target")
VIEWS = ("sides", "steps", "checks")


def _overrides(hf_config: Mapping[str, object] | Sequence[str] | None) -> tuple[str, ...]:
    if hf_config is None:
        return ()
    if isinstance(hf_config, Mapping):
        return tuple(
            f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in hf_config.items()
        )
    if isinstance(hf_config, str):
        return (hf_config,)
    return tuple(hf_config)


def _spec(
    workload: str,
    size: str,
    batch_size: int | None,
    seq_len: int | None,
    steps: int | None,
    seed: int,
    hf_config: Mapping[str, object] | Sequence[str] | None,
) -> Any:
    from parity.spec import WorkloadSpec, parse_overrides

    return WorkloadSpec(
        name=workload,
        size=size,
        batch_size=batch_size,
        seq_len=seq_len,
        steps=steps,
        seed=seed,
        overrides=parse_overrides(_overrides(hf_config)),
    )


def _allow(allow_diff: Mapping[str, str] | Sequence[str] | None) -> list[str] | None:
    if allow_diff is None:
        return None
    if isinstance(allow_diff, Mapping):
        return [f"{k}={v}" for k, v in allow_diff.items()]
    return [allow_diff] if isinstance(allow_diff, str) else list(allow_diff)


def compare(
    workload: str | None = None,
    *,
    script: Sequence[str] | None = None,
    baseline: str = "cpu",
    target: str | None = None,
    size: str = "tiny",
    batch_size: int | None = None,
    seq_len: int | None = None,
    steps: int | None = None,
    seed: int = 0,
    hf_config: Mapping[str, object] | Sequence[str] | None = None,
    out: str | Path | None = None,
    repeats: int | None = None,
    compliance: bool = True,
    budget_s: float | None = None,
    precision: float | None = None,
    timeout_s: float = 900.0,
    allow_diff: Mapping[str, str] | Sequence[str] | None = None,
    target_loss: float | None = None,
) -> ComparisonResult:
    """Run a workload (or ``script``, a command with ``{device}`` placeholders) on a
    baseline and a target in fresh processes and judge them, as ``parity compare`` does.

    ``target`` defaults to the accelerator PyTorch reports, else ``cpu+bf16``;
    ``hf_config`` is ``{"n_layer": 4}`` or ``["n_layer=4"]``; ``allow_diff`` is
    ``{"steps": "reason"}``; ``budget_s`` and ``precision`` default to the command's.
    """
    from parity import api
    from parity.runner.measure import Plan

    if workload is not None and script is not None:
        raise UsageError("give a workload or a script, not both")
    try:
        plan = Plan(repeats=repeats, compliance=compliance, timeout_s=timeout_s)
        if budget_s is not None or precision is not None:
            plan = replace(
                plan,
                budget_s=plan.budget_s if budget_s is None else budget_s,
                precision=plan.precision if precision is None else precision,
            )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    target = target if target is not None else api.default_target()
    where = Path(out) if out is not None else None
    if script is not None:
        from parity.runner.script import compare_script

        result = compare_script(
            list(script),
            baseline,
            target,
            out=where,
            allow_diff=_allow(allow_diff),
            plan=plan,
            target_loss=target_loss,
        )
    else:
        wspec = _spec(workload or "gpt-train", size, batch_size, seq_len, steps, seed, hf_config)
        result = api.compare(
            wspec,
            baseline,
            target,
            out=where,
            allow_diff=_allow(allow_diff),
            plan=plan,
            target_loss=target_loss,
        )
    return ComparisonResult(result)


def run(
    workload: str | None = None,
    *,
    device: str,
    out: str | Path,
    script: Sequence[str] | None = None,
    size: str = "tiny",
    batch_size: int | None = None,
    seq_len: int | None = None,
    steps: int | None = None,
    seed: int = 0,
    hf_config: Mapping[str, object] | Sequence[str] | None = None,
    timeout_s: float = 900.0,
) -> RunResult:
    """Run a workload (or ``script``) once on one side into the bundle ``out``."""
    from parity import api

    if (workload is None) == (script is None):
        raise UsageError("give a workload or a script (one of the two)")
    if script is not None:
        from parity.runner.script import run_script

        return RunResult(run_script(list(script), device, Path(out), timeout_s=timeout_s))
    assert workload is not None
    wspec = _spec(workload, size, batch_size, seq_len, steps, seed, hf_config)
    return RunResult(api.run(wspec, device, Path(out), timeout_s=timeout_s))


# -- result objects ---------------------------------------------------------------------


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise ImportError("to_dataframe needs pandas: pip install pandas") from None
    return pandas


def _step_rows(role: str, side: SideRuns) -> list[dict[str, Any]]:
    rows = []
    for bundle in side.repeats:
        times = bundle.metrics.step_samples_s if bundle.metrics is not None else ()
        steady = bundle.metrics.steady_from_step if bundle.metrics is not None else 1
        losses = bundle.losses
        for i in range(max(len(times), len(losses))):
            rows.append(
                {
                    "role": role,
                    "side": bundle.side,
                    "repeat": bundle.path.name,
                    "step": i,
                    "time_s": times[i] if i < len(times) else None,
                    "loss": losses[i] if i < len(losses) else None,
                    "steady": i >= steady,
                }
            )
    return rows


@dataclass(frozen=True)
class ComparisonResult:
    """What ``parity.compare`` returns: the verdict and where the bundles are."""

    raw: CompareResult

    @property
    def out(self) -> Path:
        return self.raw.out

    @property
    def report(self) -> Path | None:
        return self.raw.report

    @property
    def verdict(self) -> dict[str, Any]:
        """The verdict as plain JSON data (``verdict.json``)."""
        data = encode(self.raw.verdict)
        assert isinstance(data, dict)
        return data

    @property
    def passed(self) -> bool:
        return self.raw.verdict.passed

    @property
    def exit_code(self) -> int:
        return self.raw.verdict.exit_code

    @property
    def speedup(self) -> float | None:
        """Baseline time over target time (> 1: the target is faster); None without one."""
        speed = self.raw.verdict.speed
        return None if speed is None else speed.speedup

    def losses(self) -> dict[str, list[float | None]]:
        """Each side's loss curve (first successful repeat)."""
        return {
            role: list(side.first.losses)
            for role, side in (("baseline", self.raw.baseline), ("target", self.raw.target))
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "out": str(self.out),
            "report": str(self.report) if self.report else None,
            "passed": self.passed,
            "exit_code": self.exit_code,
            "verdict": self.verdict,
        }

    def _side_row(self, role: Role) -> dict[str, Any]:
        v = self.raw.verdict
        side = v.sides.of(role)
        phases = v.phases.of(role) if v.phases is not None else None
        memory = v.memory.of(role).steps if v.memory is not None else None
        losses = self.losses()[role]
        return {
            "role": role,
            "side": side.spec,
            "status": side.status,
            "device": side.device_name,
            "repeats_ok": side.repeats_ok,
            "median_step_s": side.median_step_s,
            "samples_per_s": side.throughput.samples_per_s if side.throughput else None,
            "tokens_per_s": side.throughput.tokens_per_s if side.throughput else None,
            "first_step_s": phases.first_step_s if phases else None,
            "load_s": phases.load_s if phases else None,
            "host_peak_rss": memory.host_peak_rss if memory else None,
            "final_loss": losses[-1] if losses else None,
        }

    def rows(self, view: str = "sides") -> list[dict[str, Any]]:
        """The rows behind ``to_dataframe(view)``, as plain dicts (no pandas needed)."""
        v = self.raw.verdict
        if view == "sides":
            return [self._side_row(role) for role in ROLES]
        if view == "steps":
            return _step_rows("baseline", self.raw.baseline) + _step_rows("target", self.raw.target)
        if view == "checks":
            checks: list[dict[str, Any]] = [
                {"section": "gate", "name": g.name, "passed": g.passed, "detail": g.detail}
                for g in v.gates
            ]
            for c in v.quality.checks if v.quality is not None else ():
                checks.append(
                    {
                        "section": "quality",
                        "name": c.name,
                        "passed": c.passed,
                        "detail": c.detail or ("gated" if c.gated else ""),
                    }
                )
            return checks
        raise UsageError(f"no view {view!r}: use one of {', '.join(VIEWS)}")

    def to_dataframe(self, view: str = "sides") -> Any:
        """A pandas DataFrame: ``sides`` (one row per side), ``steps`` (one row per step
        and repeat: time and loss) or ``checks`` (gates and quality checks)."""
        return _pandas().DataFrame(self.rows(view))

    def _repr_html_(self) -> str:
        from parity.report.summary import summary_html

        return summary_html(self.raw.verdict, out=self.out)

    def __repr__(self) -> str:
        from parity.report.summary import summary_text

        return f"<ComparisonResult {summary_text(self.raw.verdict, out=self.out)}>"


@dataclass(frozen=True)
class RunResult:
    """What ``parity.run`` returns: one side's bundle."""

    bundle: Bundle

    @property
    def path(self) -> Path:
        return self.bundle.path

    @property
    def ok(self) -> bool:
        return self.bundle.ok

    @property
    def reason(self) -> str | None:
        return self.bundle.manifest.reason

    @property
    def median_step_s(self) -> float | None:
        return self.bundle.metrics.median_step_s if self.bundle.metrics is not None else None

    @property
    def losses(self) -> list[float | None]:
        return list(self.bundle.losses)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "side": self.bundle.side,
            "status": self.bundle.status,
            "reason": self.reason,
            "median_step_s": self.median_step_s,
            "manifest": encode(self.bundle.manifest),
            "metrics": encode(self.bundle.metrics),
            "outputs": encode(self.bundle.outputs),
        }

    def rows(self) -> list[dict[str, Any]]:
        """One row per step: time and loss."""
        from parity.bundle import SideRuns

        return _step_rows("run", SideRuns.of(self.bundle))

    def to_dataframe(self) -> Any:
        return _pandas().DataFrame(self.rows())

    def _repr_html_(self) -> str:
        from parity.report.summary import run_html

        return run_html(self.bundle)

    def __repr__(self) -> str:
        from parity.report.summary import run_text

        return run_text(self.bundle)
