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

from parity.bundle import (
    CURVE,
    EXPECTED_DIR,
    INPUTS,
    REFERENCE_DIR,
    REPORT_HTML,
    REQUEST,
    VERDICT,
    write_text,
)
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


#: a comparison's own files, which a report never replaces (``report.html`` is the report)
EVIDENCE = (VERDICT, REQUEST, INPUTS, CURVE, "check.json")
#: a comparison's directories of bundles and evidence, which a report never goes into
EVIDENCE_DIRS = ("baseline", "target", REFERENCE_DIR, EXPECTED_DIR, "checks")


def check_report_path(run_dir: Path, target: Path, option: str) -> None:
    """Refuse, before anything is written, a report path that would overwrite evidence:
    a file inside a bundle (its digest would no longer match), one of the comparison's
    own files or directories, or a path that cannot be written (``parity.paths``)."""
    from parity.bundle import DIGEST, MANIFEST
    from parity.errors import OptionError
    from parity.paths import check_writable

    resolved, run = target.resolve(), run_dir.resolve()
    for parent in resolved.parents:
        if (parent / MANIFEST).is_file() or (parent / DIGEST).is_file():
            raise OptionError(
                f"{option} {target} is inside the bundle {parent}: parity never writes into "
                "a bundle (it would no longer verify); choose a path outside it"
            )
    inside = resolved.relative_to(run).parts if resolved.is_relative_to(run) else ()
    if inside and (inside[0] in EVIDENCE_DIRS or (len(inside) == 1 and inside[0] in EVIDENCE)):
        raise OptionError(
            f"{option} {target} would overwrite {'/'.join(inside)}, evidence of the "
            f"comparison {run_dir}: choose another file name"
        )
    check_writable(target, option, kind="file")


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
    for option, given in (("--html", html), ("--md", md), ("--json", json_path)):
        if given is not None and str(given) != "-":
            check_report_path(run.path, given, option)
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
