"""The HTML report in a real headless Chromium: no console errors, no requests, and
every plot drawn with data. Screenshots go to the test's temporary directory, or to
``$PARITY_SCREENSHOTS`` when set.

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them) and the
``selenium`` package (the ``dev`` extra); skips with the reason when one is missing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from parity.report import plots
from parity.report.run import write_reports
from tests.fixtures.runs import LATER_SECTIONS, real_run, synthetic_run

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,900",
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()),
        reason="needs Debian's chromium and chromium-driver: "
        "apt-get install -y chromium chromium-driver (.ci/run does this)",
    ),
    pytest.mark.skipif(
        importlib.util.find_spec("selenium") is None,
        reason="needs selenium: pip install -e '.[dev]'",
    ),
]

# every figure.plot: its key, data points, rendered size, and how many of its data series
# have a non-empty bounding box (something was really drawn)
INSPECT = """
return Array.from(document.querySelectorAll('figure.plot')).map(function (fig) {
  var svg = fig.querySelector('svg');
  var box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  var series = svg ? Array.from(svg.querySelectorAll('g[id*="-series-"]')) : [];
  var drawn = series.filter(function (g) {
    var b = g.getBBox();
    return b.width > 0 || b.height > 0;
  });
  return {key: fig.dataset.plot, points: Number(fig.dataset.points), width: box.width,
          height: box.height, series: series.length, drawn: drawn.length};
});
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    profile = tempfile.mkdtemp(prefix="parity-chromium-")
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _synthetic_full(factory: pytest.TempPathFactory) -> Path:
    return synthetic_run(factory.mktemp("b") / "full", extra=LATER_SECTIONS)


def _synthetic_generate(factory: pytest.TempPathFactory) -> Path:
    return synthetic_run(factory.mktemp("b") / "generate", kind="generate")


def _real_train(factory: pytest.TempPathFactory) -> Path:
    return real_run(factory, "gpt-train")


CASES: dict[str, tuple[Callable[[pytest.TempPathFactory], Path], set[str]]] = {
    "synthetic-full": (
        _synthetic_full,
        {"loss", "step-times", "speed", "memory", "phases", "layers", "cost"},
    ),
    "synthetic-generate": (
        _synthetic_generate,
        {"step-times", "speed", "latency", "memory", "phases"},
    ),
    "real-gpt-train": (_real_train, {"loss", "step-times", "speed", "memory", "phases"}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_report_renders_in_chromium(
    case: str, browser: Any, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    make, expected = CASES[case]
    run = make(tmp_path_factory)
    verdict = json.loads((run / "verdict.json").read_text())
    if plots.layer_table(verdict.get("numerics"))[0]:  # a verdict with a per-layer table
        expected = expected | {"layers"}
    page = tmp_path / "report.html"
    write_reports(run, html=page)
    assert "http" not in page.read_text().lower()

    browser.get_log("browser")  # drop anything from earlier pages
    browser.get(page.as_uri())
    assert browser.execute_script("return document.readyState") == "complete"
    assert browser.title.startswith("parity: ")

    errors = [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]
    assert errors == [], errors
    requests = browser.execute_script(
        "return performance.getEntriesByType('resource').map(function (e) { return e.name; })"
    )
    assert requests == [], f"the report fetched {requests}"

    figures = browser.execute_script(INSPECT)
    assert {f["key"] for f in figures} == expected
    for f in figures:
        assert f["points"] > 0, f
        assert f["width"] > 300 and f["height"] > 60, f
        assert f["series"] > 0 and f["drawn"] > 0, f

    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, min(int(height) + 120, 16000))
    shot = tmp_path / f"report-{case}.png"
    assert browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 50_000
    keep = os.environ.get("PARITY_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
    browser.set_window_size(1280, 900)
