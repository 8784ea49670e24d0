"""The software stack in the report: packages that differ (bounded, with the count of the
rest), drift from pins said where the gates are, and the git state of the user's file."""

from __future__ import annotations

from dataclasses import replace

from parity.model.stack import Package, PackageDifference, PinCheck, Pins, SourceRepository
from parity.model.verdict import EnvironmentDifference, Verdict
from parity.report.decision import differences, fairness, gates
from parity.report.markdown import format_markdown
from parity.report.parts import Sentence, Table
from parity.report.stack import PACKAGE_ROWS
from parity.report.view import build_view
from tests.report.cases import golden


def row(name: str, a: str | None, b: str | None, backend: bool = False) -> EnvironmentDifference:
    pa = Package(name=name, version=a) if a else None
    pb = Package(name=name, version=b) if b else None
    change = "added" if pa is None else "removed" if pb is None else "version"
    return EnvironmentDifference(
        field=f"package {name}",
        baseline=a,
        target=b,
        package=PackageDifference(
            name=name, change=change, baseline=pa, target=pb, backend=backend
        ),
    )


def with_stack(v: Verdict, extra: int = 20) -> Verdict:
    rows = [row("torch", "2.13.0", "2.14.0", backend=True), row("six", "1.16.0", None)]
    rows += [row(f"pkg{i:02d}", "1.0", "1.1") for i in range(extra)]
    check = PinCheck(
        package="torch",
        pin="==2.13.*",
        baseline="2.13.0",
        target="2.14.0",
        baseline_status="ok",
        target_status="drift",
    )
    pins = Pins(checks=(check,), drifted=("torch",))
    return replace(v, environment_differences=tuple(rows), pins=pins)


def texts(parts: tuple[object, ...]) -> list[str]:
    return [p.text for p in parts if isinstance(p, Sentence)]


def test_packages_are_bounded_with_the_count_of_the_rest() -> None:
    v = with_stack(golden("passes"))
    section = differences(v)
    assert section is not None
    tables = {p.title: p for p in section.parts if isinstance(p, Table)}
    assert "Environment differences" not in tables  # only packages differ here
    packages = tables["Packages that differ (22)"]
    assert len(packages.rows) == PACKAGE_ROWS
    assert packages.rows[0].cells == ("torch", "version", "2.13.0", "2.14.0")
    assert packages.rows[0].highlight
    assert packages.rows[1].cells == ("six", "baseline only", "1.16.0", "not installed")
    assert f"and {22 - PACKAGE_ROWS} more packages differ" in texts(section.parts)[0]
    whole = differences(v, package_rows=None)
    assert whole is not None and not any("more packages" in t for t in texts(whole.parts))
    html_view = build_view(v, package_rows=None).section("differences")
    assert html_view is not None
    listed = next(p for p in html_view.parts if isinstance(p, Table) and "Packages" in str(p.title))
    assert len(listed.rows) == 22


def test_drift_is_said_under_the_gates_and_in_the_pins_table() -> None:
    v = with_stack(golden("passes"))
    assert v.passed
    warning = texts(gates(v).parts)
    assert warning == [
        "the software stack drifts from its pins: torch (pinned ==2.13.*: target has 2.14.0) "
        "(reported, not gated: the figures are of what was installed)"
    ]
    section = differences(v)
    assert section is not None
    pins = next(p for p in section.parts if isinstance(p, Table) and p.title == "Pinned versions")
    assert pins.rows[0].cells == ("torch", "==2.13.*", "2.13.0 (ok)", "2.14.0 (drift)")
    assert pins.rows[0].highlight
    assert "drifts from its pins" in format_markdown(build_view(v))
    assert texts(gates(golden("passes")).parts) == []


def test_the_repository_of_a_user_file_is_said_with_fairness() -> None:
    v = golden("passes")
    description = replace(
        v.workload.description, repository=SourceRepository(commit="a" * 40, dirty=True)
    )
    dirty = replace(v, workload=replace(v.workload, description=description))
    said = texts(fairness(dirty).parts)
    assert any(
        t.startswith(f"the workload file is in a git repository at commit {'a' * 12} with "
                     "uncommitted changes") for t in said
    )  # fmt: skip
    clean = replace(description, repository=SourceRepository(commit="b" * 40, dirty=False))
    said = texts(fairness(replace(v, workload=replace(v.workload, description=clean))).parts)
    assert f"the workload file is in a git repository at commit {'b' * 12}" in said
