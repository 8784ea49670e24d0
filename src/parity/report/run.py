"""A comparison's output directory, read back for reporting, and the report writers.

``parity compare`` leaves ``OUT/verdict.json`` with ``OUT/baseline/`` and ``OUT/target/``
beside it. A report needs the verdict; the bundles add the plots that need raw data
(loss curves, step times), so a side whose bundles are gone or damaged costs those plots
and a note, never the report. A side is looked for under ``OUT/ROLE`` first, then where
the verdict says its bundles were.
"""

from __future__ import annotations

import logging
from pathlib import Path

from parity.bundle import REPORT_HTML, write_text
from parity.comparison import Comparison
from parity.errors import UsageError
from parity.model.codec import dumps
from parity.report.view import Run

DEFAULT_HTML = REPORT_HTML
REPORT_EXTRA = (
    "the HTML report needs matplotlib, which comes with the optional 'report' extra: "
    "pip install 'parity[report]'"
)
log = logging.getLogger("parity")


def run_of(comparison: Comparison) -> Run:
    """The view's input: a judged comparison's verdict and sides, as held in memory."""
    assert comparison.verdict is not None, "a report is of a judged comparison"
    return Run(
        path=comparison.out,
        verdict=comparison.verdict,
        sides=comparison.sides,
        problems=comparison.problems,
    )


def load_run(path: Path | str) -> Run:
    """Read ``RUN/verdict.json`` and the sides' bundles; BundleError when there is no verdict."""
    return run_of(Comparison.load(path))


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, text)
    return path


def html_report(run: Run) -> str:
    """The HTML report; UsageError naming the extra when matplotlib is missing."""
    try:
        import parity.report.plots  # noqa: F401  (matplotlib comes with the report extra)
    except ImportError as exc:
        raise UsageError(REPORT_EXTRA) from exc
    from parity.report.html import render_html

    return render_html(run)


def write_reports(
    run_path: Path | str,
    *,
    html: Path | None = None,
    md: Path | None = None,
    json_path: Path | None = None,
) -> dict[str, Path | str]:
    """Write the asked reports; ``-`` as a path returns that text instead of writing it.

    With no path at all, writes ``RUN/report.html``. Returns kind -> path (or text).
    """
    from parity.report.markdown import render_markdown

    run = load_run(run_path)
    if html is None and md is None and json_path is None:
        html = run.path / DEFAULT_HTML
    made: dict[str, Path | str] = {}
    for kind, target in (("html", html), ("md", md), ("json", json_path)):
        if target is None:
            continue
        if kind == "html":
            text = html_report(run)
        elif kind == "md":
            name = html.name if isinstance(html, Path) and str(html) != "-" else None
            text = render_markdown(run.verdict, sides=run.sides, html_name=name)
        else:
            text = dumps(run.verdict) + "\n"
        made[kind] = text if str(target) == "-" else _write(target, text)
    return made


def report_after_compare(comparison: Comparison) -> Path | None:
    """``OUT/report.html`` of a comparison just judged (from memory); a failure warns and
    never loses results."""
    out = comparison.out
    try:
        return _write(out / DEFAULT_HTML, html_report(run_of(comparison)))
    except UsageError as exc:
        if exc.__cause__ is not None and isinstance(exc.__cause__, ImportError):
            log.warning("parity: no %s: %s", DEFAULT_HTML, REPORT_EXTRA)
        else:
            log.warning("parity: no %s: %s", DEFAULT_HTML, exc)
    except Exception as exc:
        log.warning(
            "parity: could not write %s (%s: %s); the bundles and verdict.json are complete: "
            "retry with parity report %s",
            DEFAULT_HTML,
            type(exc).__name__,
            exc,
            out,
        )
    return None
