"""The software stack in the view: the packages that differ between the sides, drift
from pinned versions, and the git state of the user's script or workload file.

The package table shows the first ``PACKAGE_ROWS`` (torch and the backend packages come
first) and says how many more differ; ``verdict.json`` and the HTML report list all.
"""

from __future__ import annotations

from parity.model.stack import Package, PinCheck, PinStatus
from parity.model.verdict import Verdict
from parity.report.parts import Part, Row, Sentence, table

PACKAGE_ROWS = 12
CHANGES = {
    "added": "target only",
    "removed": "baseline only",
    "version": "version",
    "origin": "origin",
}


def _label(package: Package | None) -> str:
    return "not installed" if package is None else package.label


def packages(v: Verdict, limit: int | None = PACKAGE_ROWS) -> list[Part]:
    """The packages that differ, at most ``limit`` of them (None: all), and the count of
    the rest."""
    rows = [d.package for d in v.environment_differences if d.package is not None]
    if not rows:
        return []
    shown = rows if limit is None else rows[:limit]
    parts: list[Part] = [
        table(
            [("package", "name"), ("differs in", "text"), ("baseline", "text"), ("target", "text")],
            [
                Row(
                    cells=(d.name, CHANGES[d.change], _label(d.baseline), _label(d.target)),
                    highlight=d.backend,
                )
                for d in shown
            ],
            title=f"Packages that differ ({len(rows)})",
            legend="torch and the backend packages first (highlighted), then the rest",
            brief=True,
        )
    ]
    if len(rows) > len(shown):
        more = len(rows) - len(shown)
        parts.append(
            Sentence(
                text=f"and {more} more package{'s' if more > 1 else ''} differ: verdict.json "
                "(environment_differences) and the HTML report list every one",
                tone="muted",
                brief=True,
            )
        )
    return parts


def _cell(installed: str | None, status: PinStatus) -> str:
    if status == "missing":
        return "not installed (drift)"
    if status == "unknown":
        return "unknown (the bundle lists no packages)"
    return f"{installed} ({status})"


def _drift_text(c: PinCheck) -> str:
    sides = [
        f"{role} {'has none' if c.status(role) == 'missing' else 'has ' + str(installed)}"
        for role, installed in (("baseline", c.baseline), ("target", c.target))
        if c.status(role) in ("drift", "missing")
    ]
    return f"{c.package} (pinned {c.pin}: {', '.join(sides)})"


def drift(v: Verdict) -> Sentence | None:
    """One warning naming every pinned package outside its pin (None without drift)."""
    if v.pins is None or not v.pins.drifted:
        return None
    drifted = [c for c in v.pins.checks if c.drifted]
    return Sentence(
        text="the software stack drifts from its pins: "
        + "; ".join(_drift_text(c) for c in drifted)
        + " (reported, not gated: the figures are of what was installed)",
        tone="warn",
        brief=True,
    )


def pins(v: Verdict) -> list[Part]:
    """The pinned packages on each side, drifting ones highlighted."""
    if v.pins is None:
        return []
    rows = [
        Row(
            cells=(
                c.package,
                c.pin,
                _cell(c.baseline, c.baseline_status),
                _cell(c.target, c.target_status),
            ),
            highlight=c.drifted,
        )
        for c in v.pins.checks
    ]
    # the drift itself is said under the gates (``drift``): here, the table
    return [
        table(
            [("package", "name"), ("pin", "text"), ("baseline", "text"), ("target", "text")],
            rows,
            title="Pinned versions",
            legend="drift: installed outside the pin, or not installed (reported, not gated)",
            brief=bool(v.pins.drifted),
        )
    ]


def repository(v: Verdict) -> Sentence | None:
    """Where the user's script or workload file was at: its commit, and whether dirty."""
    d = v.workload.description
    repo = d.repository
    if repo is None:
        return None
    what = "the script" if d.script_mode else "the workload file"
    if repo.dirty:
        return Sentence(
            text=f"{what} is in a git repository at commit {repo.commit[:12]} with "
            "uncommitted changes: the results cannot be traced to that commit alone",
            tone="warn",
            brief=True,
        )
    state = "" if repo.dirty is False else " (whether it had uncommitted changes is unknown)"
    return Sentence(text=f"{what} is in a git repository at commit {repo.commit[:12]}{state}")
