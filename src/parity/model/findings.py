"""Findings: what the judge found, as facts that the view turns into words.

A finding is a stable code (``speed.contention``), the figures it rests on, the verdict
section it belongs to and a severity:

- ``blocks``: it decides the verdict or withholds part of it (a failing gate, a speed
  verdict withheld, a speed that is not reliable);
- ``reading``: it changes how to read a figure (an interval widened by busy cores);
- ``context``: background a careful reader may want (why a probe did not run).

The judge composes no sentence: ``parity.report.words`` holds one template per code, so
every renderer says a finding the same way, and the summary screen can pick the few that
change the decision, most consequential first. Codes are part of ``verdict.json``'s
contract: rename one only with a schema version bump.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from parity.model.codec import Json

Severity = Literal["blocks", "reading", "context"]
#: most consequential first
SEVERITIES: tuple[Severity, ...] = ("blocks", "reading", "context")


@dataclass(frozen=True, kw_only=True, slots=True)
class Finding:
    """A fact of the verdict: ``code`` names it (``section.what``), ``figures`` hold
    what the words about it need (numbers, names, side specs), never a sentence."""

    code: str
    severity: Severity
    figures: dict[str, Json] = field(default_factory=dict)

    @property
    def section(self) -> str:
        """The verdict section the finding belongs to (the code's first part)."""
        return self.code.split(".", 1)[0]

    @property
    def rank(self) -> int:
        """0 for the most consequential severity."""
        return SEVERITIES.index(self.severity)


def ranked(findings: tuple[Finding, ...] | list[Finding]) -> list[Finding]:
    """Most consequential first; the judge's order within a severity."""
    return sorted(findings, key=lambda f: f.rank)
