"""The view model: sections in reading order, each figure the verdict's own and shown
once, result words from one vocabulary, and nothing empty."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from parity.bundle import DIGEST, METRICS, load_bundle, seal, write_doc
from parity.model.metrics import SteadyState
from parity.report import fmt
from parity.report.parts import Sentence, Table, View
from parity.report.run import load_run
from parity.report.view import build_view
from tests.fixtures.runs import synthetic_run
from tests.report.cases import cases, tables

CASES = cases()


def rows_of(view: View, key: str) -> dict[str, tuple[str, ...]]:
    section = view.section(key)
    assert section is not None
    table = next(p for p in section.parts if isinstance(p, Table))
    return {r.cells[0]: r.cells[1:] for r in table.rows}


@pytest.mark.parametrize("name", list(CASES))
def test_sections_are_ordered_words_are_from_one_vocabulary_and_none_is_empty(name: str) -> None:
    view = build_view(CASES[name])
    keys = [s.key for s in view.sections]
    order = ["gates", "sides", "fairness", "differences", "quality", "numerics", "speed"]
    assert [k for k in order if k in keys] == [k for k in keys if k in order]
    assert keys[:2] == ["gates", "sides"]
    for section in view.sections:
        assert section.parts, section.key
        assert section.result in fmt.RESULTS
        for part in section.parts:
            if isinstance(part, Sentence):
                assert part.text and (part.result is None or part.result in fmt.RESULTS)
            else:
                for row in part.rows:
                    for cell, col in zip(row.cells, part.columns, strict=True):
                        assert col.kind != "result" or cell in fmt.RESULTS, cell
    assert all(s.title != "Withheld" for s in view.sections)


def test_the_sides_median_is_the_pooled_figure_the_speed_ratio_compares() -> None:
    v = CASES["passes"]
    view = build_view(v)
    assert v.speed is not None
    median = rows_of(view, "sides")["median step (steady)"]
    assert median == (
        fmt.seconds(v.sides.baseline.median_step_s),
        fmt.seconds(v.sides.target.median_step_s),
    )
    assert v.speed.baseline_median_s == v.sides.baseline.median_step_s
    labels = [r.cells[0] for t in tables(view) for r in t.rows]
    assert sum("median" in x for x in labels) == 1, "the median step is shown once"


def test_quality_failure_withholds_speed_and_cost_in_one_section() -> None:
    view = build_view(CASES["fails-quality"])
    speed = view.section("speed")
    assert speed is not None and speed.result == "WITHHELD"
    assert view.section("cost") is None and view.result == "FAIL"
    assert view.section("numerics") is None  # the probe did not run: said in quality
    quality = view.section("quality")
    assert quality is not None and quality.result == "FAIL"
    assert any("fp64 numerics: not run" in s.text for s in quality.parts if isinstance(s, Sentence))


def test_the_input_pipeline_says_which_side_is_input_bound() -> None:
    view = build_view(CASES["input-bound"])
    keys = [s.key for s in view.sections]
    assert keys.index("speed") < keys.index("input") < keys.index("cost")
    rows = rows_of(view, "input")
    assert rows["input-bound"] == ("no", "yes")
    assert rows["wait for the batch"][1] == fmt.seconds(0.030 * 1.015)  # the median
    section = view.section("input")
    assert section is not None
    said = [p.text for p in section.parts if isinstance(p, Sentence)]
    assert said[0].startswith("baseline not input-bound: 3% of the steady step")
    assert said[1].startswith("target input-bound: 83% of the steady step is waiting for")
    assert said[1].endswith("its step time measures its data pipeline as much as its device")
    assert build_view(CASES["passes"]).section("input") is None


def test_an_ungated_check_is_info() -> None:
    checks = rows_of(build_view(CASES["tokens"]), "quality")
    assert checks["generated tokens"][0] == "INFO"
    assert "90% of tokens agree; first difference at position 3" in checks["generated tokens"][1]


def test_the_per_module_table_states_its_rows_and_holds_every_amplifier() -> None:
    v = CASES["layers"]
    assert v.numerics is not None and v.numerics.layers is not None
    loc = v.numerics.layers
    short = build_view(v).section("numerics")
    full = build_view(v, layer_rows=None).section("numerics")
    assert short is not None and full is not None
    table = next(p for p in short.parts if isinstance(p, Table))
    shown = [r.cells[0] for r in table.rows]
    assert table.title is not None and f"{len(shown)} of 112 leaf modules" in table.title
    assert set(loc.top_amplification) | {loc.first_divergence} <= set(shown)
    assert [r.highlight for r in table.rows].count(True) == 1
    whole = next(p for p in full.parts if isinstance(p, Table))
    assert whole.title is not None and "all 112 leaf modules" in whole.title


@pytest.fixture(scope="module")
def generate_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_run(tmp_path_factory.mktemp("view") / "g", kind="generate")


def test_percentiles_show_their_samples_and_mark_a_thin_p99(generate_run: Path) -> None:
    run = load_run(generate_run)
    view = build_view(run.verdict, sides=run.sides)
    speed = view.section("speed")
    assert speed is not None
    latency = next(
        p for p in speed.parts if isinstance(p, Table) and p.title == "Latency percentiles"
    )
    rows = {r.cells[0]: r.cells for r in latency.rows}
    assert rows["TTFT"][3] == "10 / 10"
    assert rows["TTFT"][1].endswith(fmt.P99_MARK) and latency.legend is not None
    assert fmt.P99_LEGEND in latency.legend


def test_a_capped_steady_state_is_said_where_the_median_is(
    generate_run: Path, tmp_path: Path
) -> None:
    bundle = load_bundle(generate_run / "target" / "r01")
    assert bundle.metrics is not None
    capped = SteadyState(start=5, capped=True, method="MSER")
    write_doc(bundle.path / METRICS, replace(bundle.metrics, steady_state=capped))
    (bundle.path / DIGEST).unlink()
    seal(bundle.path)  # as the worker's parent would have sealed it
    run = load_run(generate_run)
    sides = build_view(run.verdict, sides=run.sides).section("sides")
    assert sides is not None
    warnings = [p.text for p in sides.parts if isinstance(p, Sentence) and p.tone == "warn"]
    assert warnings == [
        "target r01: steady state not reached within the cap (truncated at sample 5): the "
        "step time was still trending; run more warm-up steps or longer repeats; its median step "
        "includes steps that were still warming up"
    ]
    assert build_view(run.verdict).section("sides") != sides  # only the bundles know it
