"""The HTML report in a real headless Chromium at 1400 and 800 px: no console errors, no
requests, every plot drawn with data, every section's heading on screen, and no
horizontal page scroll. Screenshots are checked against what the page says it drew, and
go to the test's temporary directory, or to ``$PARITY_SCREENSHOTS`` when set.

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them) and the
``selenium`` package (the ``dev`` extra); skips with the reason when one is missing.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from parity.report.run import load_run, write_reports
from parity.report.screen import build_screen
from parity.report.view import build_view
from tests.fixtures.runs import synthetic_run, with_layers, write_verdict

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WIDTHS = (1400, 800)
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
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
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
# how far the page reaches sideways, and where each section heading sits
LAYOUT = """
var root = document.documentElement;
return {scroll: root.scrollWidth, client: root.clientWidth,
  headings: Array.from(document.querySelectorAll('section h2')).map(function (h) {
    var r = h.getBoundingClientRect();
    return {text: h.firstChild.textContent.trim(), left: r.left + window.scrollX,
            right: r.right + window.scrollX, top: r.top + window.scrollY,
            bottom: r.bottom + window.scrollY};
  })};
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


def _train_with_layers(root: Path) -> Path:
    """A training comparison with a 112-module localisation (a long table)."""
    out = synthetic_run(root / "train")
    write_verdict(out, with_layers(load_run(out).verdict))
    return out


def _generate(root: Path) -> Path:
    return synthetic_run(root / "generate", kind="generate")


CASES: dict[str, tuple[Callable[[Path], Path], set[str]]] = {
    "train-layers": (
        _train_with_layers,
        {"loss", "step-times", "speed", "memory", "phases", "layers", "cost"},
    ),
    "generate": (_generate, {"step-times", "speed", "latency", "memory", "phases", "cost"}),
}


def overflow(browser: Any) -> int:
    """How many pixels the page reaches past the viewport sideways (0: none)."""
    layout = browser.execute_script(LAYOUT)
    return int(layout["scroll"]) - int(layout["client"])


def inked(shot: Path, box: dict[str, float]) -> float:
    """The share of dark pixels inside ``box`` of a screenshot: text drawn there."""
    from PIL import Image

    with Image.open(shot) as image:
        gray = image.convert("L").crop(
            (int(box["left"]), int(box["top"]), int(box["right"]), int(box["bottom"]))
        )
        counts: list[int] = gray.histogram()
    return sum(counts[:128]) / max(sum(counts), 1)


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[str]]]:
    """Each case's report and the section titles its view has."""
    made = {}
    for case, (make, _) in CASES.items():
        run_dir = make(tmp_path_factory.mktemp(case))
        page = run_dir / "report.html"
        write_reports(run_dir, html=page)
        run = load_run(run_dir)
        titles = [s.title for s in build_view(run.verdict, sides=run.sides).sections]
        made[case] = (page, titles)
    return made


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", list(CASES))
def test_report_renders_in_chromium(
    case: str,
    width: int,
    browser: Any,
    pages: dict[str, tuple[Path, list[str]]],
    tmp_path: Path,
) -> None:
    page, titles = pages[case]
    assert "http" not in page.read_text().lower()
    browser.set_window_size(width, 900)
    browser.get_log("browser")  # drop anything from earlier pages
    browser.get(page.as_uri())
    # get() returns once the page has loaded; on a busy machine a large page's
    # readyState can still read "loading" for a moment after a resize: wait for it
    deadline = time.monotonic() + 30
    while browser.execute_script("return document.readyState") != "complete":
        assert time.monotonic() < deadline, "the report never finished loading"
        time.sleep(0.1)
    assert browser.title.startswith("parity: ")
    # the report leads with its summary, each section collapsed: open them all to see them
    browser.execute_script(
        "document.querySelectorAll('details').forEach(function (d) { d.open = true; })"
    )
    errors = [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]
    assert errors == [], errors
    requests = browser.execute_script(
        "return performance.getEntriesByType('resource').map(function (e) { return e.name; })"
    )
    assert requests == [], f"the report fetched {requests}"

    figures = browser.execute_script(INSPECT)
    assert {f["key"] for f in figures} == CASES[case][1]
    for f in figures:
        assert f["points"] > 0, f
        assert f["width"] > min(300, width / 3) and f["height"] > 60, f
        assert f["series"] > 0 and f["drawn"] > 0, f

    assert overflow(browser) <= 0, f"the page scrolls sideways at {width} px"
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(width, min(int(height) + 200, 16000))
    layout = browser.execute_script(LAYOUT)
    shot = tmp_path / f"report-{case}-{width}.png"
    assert browser.save_screenshot(str(shot))
    from PIL import Image

    with Image.open(shot) as image:
        shot_width = image.size[0]
    assert shot_width == width == layout["client"], "the screenshot is the window, no wider"
    headings = {h["text"]: h for h in layout["headings"]}
    assert list(headings) == titles, "every section of the view has its heading"
    for title, box in headings.items():
        assert box["left"] >= 0 and box["right"] <= layout["client"], title
        assert inked(shot, box) > 0.02, f"the heading {title!r} is not drawn in the screenshot"
    keep = os.environ.get("PARITY_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)


def test_the_overflow_check_catches_a_page_that_scrolls_sideways(
    browser: Any, pages: dict[str, tuple[Path, list[str]]]
) -> None:
    page, _ = pages["train-layers"]
    browser.set_window_size(800, 900)
    browser.get(page.as_uri())
    assert overflow(browser) <= 0
    browser.execute_script(
        "var d = document.createElement('div'); d.style.width = '2000px'; d.textContent = 'x';"
        "document.querySelector('main').appendChild(d);"
    )
    assert overflow(browser) > 0


# where the banner and each summary row sit on the page, and what they say
FIRST_SCREEN = """
var h1 = document.querySelector('header h1');
var open = Array.from(document.querySelectorAll('details')).filter(function (d) {
  return d.open;
}).length;
function box(e) {
  var r = e.getBoundingClientRect();
  return {left: r.left, right: r.right, top: r.top, bottom: r.bottom};
}
return {height: window.innerHeight, open: open, decision: h1.textContent,
  banner: box(h1),
  rows: Array.from(document.querySelectorAll('#summary tr')).map(function (tr) {
    return {label: tr.querySelector('th').textContent, text: tr.textContent,
            box: box(tr)};
  })};
"""


@pytest.mark.parametrize("width", WIDTHS)
def test_the_first_screen_shows_the_decision_speed_and_cost(
    width: int, browser: Any, pages: dict[str, tuple[Path, list[str]]], tmp_path: Path
) -> None:
    """As a reader opens the report, before they scroll or open anything: the decision in
    the banner, and the speed and cost rows of the summary, drawn inside the window."""
    page, _ = pages["train-layers"]
    run = load_run(page.parent)
    browser.set_window_size(width, 900)
    browser.get(page.as_uri())
    seen = browser.execute_script(FIRST_SCREEN)
    assert seen["open"] == 0, "the sections start collapsed"
    screen = build_screen(run.verdict)
    assert seen["decision"] == screen.decision
    assert seen["decision"].split(":")[0] in {"PASS", "FAIL", "NOT DECIDED"}
    rows = {r["label"]: r for r in seen["rows"]}
    assert {"quality", "speed", "cost"} <= set(rows)
    for row in screen.rows:
        assert row.text in rows[row.label]["text"], row.label
    speed, cost = run.verdict.speed, run.verdict.cost
    assert speed is not None and cost is not None and cost.cost_ratio is not None
    assert f"{speed.ratio:.2f}" in rows["speed"]["text"], rows["speed"]["text"]
    assert f"{cost.cost_ratio:.2f}" in rows["cost"]["text"], rows["cost"]["text"]
    shot = tmp_path / f"first-screen-{width}.png"
    assert browser.save_screenshot(str(shot))
    for name, where in (("decision", seen["banner"]), *((k, rows[k]["box"]) for k in rows)):
        assert where["top"] >= 0 and where["bottom"] <= seen["height"], f"{name} below the fold"
        assert where["right"] <= width, f"{name} past the window's edge"
        assert inked(shot, where) > 0.01, f"{name} is not drawn on the first screen"
