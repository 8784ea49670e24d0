"""A comparison: its directory and everything in it, held in memory once.

``parity compare`` makes one from the bundles its orchestrator ran (each loaded and
verified once, as its run finished: ``Comparison.measured``); ``parity diff`` from two
sides' directories (``Comparison.of_sides``), ``parity report`` and ``parity reindex``
from a comparison's directory (``Comparison.load``). The judge takes its sides; the
reports, the index and MLflow take the whole object (``parity.sinks``): the verdict is
written once and nothing is read back. Every read and write of a comparison's files
goes through ``parity.bundle``, the one module that knows their names and paths.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from parity.bundle import (
    EXPECTED_DIR,
    INPUTS,
    REFERENCE_DIR,
    VERDICT,
    is_bundle,
    is_comparison,
    load_bundle,
    load_side,
    read_inputs,
    read_verdict,
    write_doc,
)
from parity.errors import BundleError, OptionError
from parity.model.bundle import Bundle, SideRuns
from parity.model.verdict import ROLES, ByRole, JudgeInputs, Role, Verdict


@dataclass(frozen=True)
class Comparison:
    """A comparison's directory, its sides (None: a side whose bundles could not be read
    back, which costs a report its raw-data plots), the references, what the judge was
    given and the verdict, once judged or read."""

    out: Path
    baseline: SideRuns | None
    target: SideRuns | None
    reference: Bundle | None = None
    expected: Bundle | None = None
    inputs: JudgeInputs = field(default_factory=JudgeInputs)
    verdict: Verdict | None = None
    #: the sha256 of ``verdict.json`` as it was written or read (the index's id)
    verdict_sha256: str | None = None
    #: the HTML report, once written
    report: Path | None = None
    #: where the comparison was published (``--out URL``); ``out`` is its local copy
    url: str | None = None
    #: why a side could not be read back (a report's notes)
    problems: tuple[str, ...] = ()

    # -- made or loaded ------------------------------------------------------------------

    @classmethod
    def measured(
        cls,
        out: Path,
        sides: ByRole[SideRuns],
        *,
        reference: Bundle | None = None,
        expected: Bundle | None = None,
    ) -> Comparison:
        """The sides an orchestrator just ran, as it holds them (nothing is read)."""
        return cls(
            out=out,
            baseline=sides.baseline,
            target=sides.target,
            reference=reference,
            expected=expected,
        )

    @classmethod
    def of_sides(cls, a: Path, b: Path, *, reference: Path | None = None) -> Comparison:
        """Two sides' directories (or bundles), possibly from different machines, with the
        inputs a ``parity compare`` stored beside them and its references (``reference``:
        the fp64 reference given explicitly)."""
        baseline, target = load_side(a), load_side(b)
        fingerprint = baseline.first.fingerprint
        ref = _beside(a, b, REFERENCE_DIR) if reference is None else load_bundle(reference)
        if ref is not None and ref.fingerprint != fingerprint:
            if reference is not None:
                raise OptionError(
                    f"--reference {reference} is the fp64 reference of another workload: pass "
                    "the reference/ directory of the same comparison"
                )
            ref = None
        expected = _beside(a, b, EXPECTED_DIR)
        if expected is not None and expected.fingerprint != fingerprint:
            expected = None
        stored = next((i for i in (read_inputs(s.parent) for s in (a, b)) if i is not None), None)
        return cls(
            out=a.parent,
            baseline=baseline,
            target=target,
            reference=ref,
            expected=expected,
            inputs=stored or JudgeInputs(),
        )

    @classmethod
    def load(cls, out: Path | str, *, strict: bool = False) -> Comparison:
        """A judged comparison's directory: its verdict, and each side where it loads (a
        side is looked for under ``OUT/ROLE``, then where the verdict says it was). A
        side that cannot be read costs a report its plots (``problems``); ``strict``: a
        side that is there but does not load is a BundleError."""
        out = Path(out)
        if not is_comparison(out):
            raise BundleError(
                f"{out} holds no {VERDICT}: pass the --out directory of a parity compare "
                "(for --batch-sizes, one of its bsN directories)"
            )
        verdict, sha = read_verdict(out)
        problems: list[str] = []
        found = {role: _side(out, role, verdict, problems, strict) for role in ROLES}
        return cls(
            out=out,
            baseline=found["baseline"],
            target=found["target"],
            inputs=read_inputs(out) or JudgeInputs(),
            verdict=verdict,
            verdict_sha256=sha,
            problems=tuple(problems),
        )

    # -- judged and written ----------------------------------------------------------------

    @property
    def sides(self) -> ByRole[SideRuns | None]:
        return ByRole(baseline=self.baseline, target=self.target)

    def measured_sides(self) -> tuple[SideRuns, SideRuns]:
        """Both sides; BundleError when one could not be read."""
        if self.baseline is None or self.target is None:
            raise BundleError(f"{self.out}: {'; '.join(self.problems) or 'a side is missing'}")
        return self.baseline, self.target

    def judged(self, inputs: JudgeInputs) -> Comparison:
        """The verdict on the sides with ``inputs`` (prices resolved, checks found: see
        ``parity.sinks.judge_inputs``), in memory; ``save`` writes it."""
        from parity.judge.verdict import judge

        a, b = self.measured_sides()
        verdict = judge(a, b, inputs=inputs, reference=self.reference, expected=self.expected)
        return replace(self, inputs=inputs, verdict=verdict)

    def save(self) -> Comparison:
        """Write ``inputs.json`` and ``verdict.json``, once each."""
        if self.verdict is None:
            raise ValueError("save a comparison after judging it")
        write_doc(self.out / INPUTS, self.inputs)
        return replace(self, verdict_sha256=write_doc(self.out / VERDICT, self.verdict))

    def bundles(self) -> list[tuple[Role, Bundle]]:
        """Every bundle of both sides, with its role (repeats, then compliance runs)."""
        return [
            (role, bundle)
            for role, side in self.sides.items()
            if side is not None
            for bundle in side.bundles
        ]


def _beside(a: Path, b: Path, name: str) -> Bundle | None:
    """The bundle ``name`` (``reference``, ``expected``) beside either side, if any."""
    for side in (a, b):
        if is_bundle(side.parent / name):
            return load_bundle(side.parent / name)
    return None


def _side(
    out: Path, role: Role, verdict: Verdict, problems: list[str], strict: bool
) -> SideRuns | None:
    recorded = verdict.sides.of(role).bundle
    errors = []
    for candidate in dict.fromkeys([out / role, Path(recorded)]):
        if not candidate.exists():
            continue
        try:
            return load_side(candidate)
        except BundleError as exc:
            if strict:
                raise
            errors.append(str(exc))
    problems.append(
        f"the {role} bundles could not be read ({'; '.join(errors) or 'not found'}): "
        "plots that need raw samples are left out"
    )
    return None
