"""What the API returns: a judged comparison, a single run and a throughput-latency
curve, each with its verdict or bundle, a dictionary and DataFrame views (pandas only
where asked for)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from parity.errors import UsageError
from parity.model.codec import JsonObject, encode
from parity.model.verdict import Role, Verdict
from parity.report import words

if TYPE_CHECKING:
    from parity.comparison import Comparison
    from parity.model.bundle import Bundle, SideRuns

ROLES: tuple[Role, Role] = ("baseline", "target")
VIEWS = ("sides", "steps", "checks")

#: one row of a DataFrame view: a column name and a plain value (str, number, bool, None)
Row = dict[str, object]


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise ImportError("to_dataframe needs pandas: pip install pandas") from None
    return pandas


def _step_rows(role: str, side: SideRuns) -> list[Row]:
    rows = []
    for bundle in side.repeats:
        times = bundle.metrics.step_samples_s if bundle.metrics is not None else ()
        steady = bundle.metrics.steady_from_step if bundle.metrics is not None else 1
        losses = bundle.losses
        for i in range(max(len(times), len(losses))):
            rows.append(
                {
                    "role": role,
                    "side": str(bundle.side),
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
    """What ``parity.compare`` (and ``parity.api.compare``) returns: the judged
    comparison, its typed verdict and where the bundles and the report are."""

    comparison: Comparison

    def __post_init__(self) -> None:
        if self.comparison.verdict is None:
            raise ValueError("a comparison result is of a judged comparison")

    @property
    def out(self) -> Path:
        return self.comparison.out

    @property
    def report(self) -> Path | None:
        return self.comparison.report

    @property
    def url(self) -> str | None:
        """Where the comparison was published (``--out URL``); ``out`` is its local copy,
        removed when this process ends (``parity.safety.scratch``)."""
        return self.comparison.url

    @property
    def verdict(self) -> Verdict:
        """The verdict, typed (``to_dict()["verdict"]`` is its JSON, as ``verdict.json``)."""
        assert self.comparison.verdict is not None
        return self.comparison.verdict

    @property
    def baseline(self) -> SideRuns:
        return self.comparison.measured_sides()[0]

    @property
    def target(self) -> SideRuns:
        return self.comparison.measured_sides()[1]

    @property
    def passed(self) -> bool:
        return self.verdict.passed

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    @property
    def speedup(self) -> float | None:
        """Baseline time over target time (> 1: the target is faster); None without one."""
        speed = self.verdict.speed
        return None if speed is None else speed.speedup

    def losses(self) -> dict[str, list[float | None]]:
        """Each side's loss curve (first successful repeat)."""
        return {
            role: list(side.first.losses)
            for role, side in (("baseline", self.baseline), ("target", self.target))
        }

    def to_dict(self) -> Row:
        verdict: JsonObject = encode(self.verdict)  # type: ignore[assignment]
        return {
            "out": str(self.out),
            "report": str(self.report) if self.report else None,
            "passed": self.passed,
            "exit_code": self.exit_code,
            "verdict": verdict,
        }

    def _side_row(self, role: Role) -> Row:
        v = self.verdict
        side = v.sides.of(role)
        phases = v.phases.of(role) if v.phases is not None else None
        memory = v.memory.of(role).steps if v.memory is not None else None
        losses = self.losses()[role]
        return {
            "role": role,
            "side": str(side.side),
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

    def rows(self, view: str = "sides") -> list[Row]:
        """The rows behind ``to_dataframe(view)``, as plain dicts (no pandas needed)."""
        v = self.verdict
        if view == "sides":
            return [self._side_row(role) for role in ROLES]
        if view == "steps":
            return _step_rows("baseline", self.baseline) + _step_rows("target", self.target)
        if view == "checks":
            checks: list[Row] = [
                {"section": "gate", "name": g.name, "passed": g.passed, "detail": words.gate(g)}
                for g in v.gates
            ]
            for c in v.quality.checks if v.quality is not None else ():
                checks.append(
                    {
                        "section": "quality",
                        "name": c.name,
                        "passed": c.passed,
                        "detail": words.detail(c) or ("gated" if c.gated else ""),
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

        return summary_html(self.verdict, out=self.out)

    def __repr__(self) -> str:
        from parity.report.summary import summary_text

        return f"<ComparisonResult {summary_text(self.verdict, out=self.out)}>"


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

    def to_dict(self) -> Row:
        return {
            "path": str(self.path),
            "side": str(self.bundle.side),
            "status": self.bundle.status,
            "reason": self.reason,
            "median_step_s": self.median_step_s,
            "manifest": encode(self.bundle.manifest),
            "metrics": encode(self.bundle.metrics),
            "outputs": encode(self.bundle.outputs),
        }

    def rows(self) -> list[Row]:
        """One row per step: time and loss."""
        from parity.model.bundle import SideRuns

        return _step_rows("run", SideRuns.of(self.bundle))

    def to_dataframe(self) -> Any:
        return _pandas().DataFrame(self.rows())

    def _repr_html_(self) -> str:
        from parity.report.summary import run_html

        return run_html(self.bundle)

    def __repr__(self) -> str:
        from parity.report.summary import run_text

        return run_text(self.bundle)


@dataclass(frozen=True)
class CurveResult:
    """What ``parity.compare(..., batch_sizes=[...])`` returns: one comparison per batch
    size, and the directory holding them and ``curve.json``."""

    out: Path
    comparisons: tuple[ComparisonResult, ...]

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.comparisons)

    @property
    def exit_code(self) -> int:
        return max((r.exit_code for r in self.comparisons), default=0)

    def to_dict(self) -> Row:
        return {
            "out": str(self.out),
            "passed": self.passed,
            "exit_code": self.exit_code,
            "comparisons": [r.to_dict() for r in self.comparisons],
        }

    def __repr__(self) -> str:
        state = "passed" if self.passed else "failed"
        return f"<CurveResult {state} {len(self.comparisons)} batch sizes out={str(self.out)!r}>"
