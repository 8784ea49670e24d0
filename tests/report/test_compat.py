"""The compatibility section: each side's scan counted, every finding a row, versions
side by side with a column that says whether they match."""

from __future__ import annotations

from dataclasses import replace

from parity.model.verdict import (
    CompatCounts,
    FallbackSummary,
    OpAt,
    ReasonAt,
    SideCompatibility,
    VersionRow,
)
from parity.report.compat import compatibility, findings
from parity.report.parts import Sentence, Table
from tests.report.cases import golden

SCANNED = SideCompatibility(
    scanned=True,
    clean=False,
    custom_ops=(OpAt(op="mylib::fused", where="model.py:12"),),
    unsupported=(OpAt(op="aten::_unique2", where="model.py:12", dtypes=("int64",)),),
    fallbacks=FallbackSummary(backend="torch_neuronx", ops=("aten::nonzero",), device_mismatch=()),
    host_syncs=(OpAt(op="aten::_local_scalar_dense", where="train.py:40", count=2),),
    graph_breaks=1,
    graph_break_reasons=(ReasonAt(reason="data-dependent branch", where="m.py:3"),),
    counts=CompatCounts(unsupported=1, fallbacks=1, host_syncs=2, custom_ops=1, ops=40),
)


def test_findings_are_rows_and_versions_say_whether_they_match() -> None:
    v = golden("passes")
    versions = (
        *v.compatibility.versions,
        VersionRow(name="torch-neuronx", baseline=None, target="2.9", mismatch=True, one_side=True),
    )
    comp = replace(v.compatibility, target=SCANNED, versions=versions, target_clean=False)
    section = compatibility(replace(v, compatibility=comp))
    tables = {t.title: t for t in section.parts if isinstance(t, Table)}
    summary = tables[None]
    assert summary.brief and [r.cells[1] for r in summary.rows] == ["no scan", "findings"]
    assert [r.cells[1:] for r in tables["Findings"].rows] == findings(SCANNED)
    assert {r.cells[3] for r in tables["Versions"].rows} == {"yes", "one side only"}
    assert all(r.cells[3] for r in tables["Versions"].rows), "no empty column"


def test_without_a_scan_one_sentence_says_how_to_get_one() -> None:
    section = compatibility(golden("passes"))
    first = section.parts[0]
    assert isinstance(first, Sentence) and "parity scan --device SIDE" in first.text
