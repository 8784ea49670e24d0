"""What ``parity scan`` prints: the census as view sections, fitted to the width."""

from __future__ import annotations

import pytest

from parity.model.ops import (
    BackendReport,
    Explain,
    Fallbacks,
    Finding,
    GraphProbes,
    OpFinding,
    OpsCensus,
    OpSource,
    OpsSummary,
    PlainRun,
    ScanError,
    Versions,
)
from parity.report.ops import render_scan, scan_sections
from parity.report.parts import View
from tests.report.cases import ANSI, atoms, printed, view_texts

WHERE = "src/models/very_long_package_name/transformer_blocks.py:123 in forward"


def census() -> OpsCensus:
    source = OpSource(
        where=WHERE, code="x = torch.linalg.eigh(h)", phase="forward", autograd_node=None, count=2
    )
    sync = Finding(
        op="aten::_local_scalar_dense",
        phase="forward",
        dtypes=("float32",),
        where=WHERE,
        source=None,
        autograd_node=None,
        count=4,
        detail="tensor.item() copies to the host",
    )
    return OpsCensus(
        device="neuron",
        steps_scanned=2,
        unsupported=(
            OpFinding(
                op="aten::linalg_eigh",
                dtypes=("float32",),
                phases=("forward",),
                count=2,
                error="NotImplementedError",
                sources=(source,),
            ),
        ),
        host_syncs=(sync,),
        fallbacks=Fallbacks(
            backend=BackendReport(backend="torch_neuronx", fallback_ops=("aten::linalg_eigh",))
        ),
        graphs=GraphProbes(
            backend="eager",
            note="torch.compile probes with the eager backend",
            ran_on="cpu",
            explain=Explain(graphs=2, graph_breaks=1, ops_in_graphs=40),
        ),
        plain_run=PlainRun(
            ran=True,
            failed=True,
            error=ScanError(type="RuntimeError", message="no kernel", where=WHERE),
        ),
        versions=Versions(
            python="3.11.7", torch="2.13.0", backend_packages={"torch_neuronx": "2.9"}
        ),
        summary=OpsSummary(
            ops=40,
            op_calls_per_step=(120, 118),
            custom_ops=0,
            unsupported=1,
            fallbacks=1,
            host_syncs=1,
            copies=0,
            graph_breaks=1,
            fullgraph=None,
            recompilations=None,
        ),
    )


def test_sections_name_what_the_device_cannot_run() -> None:
    keys = [s.key for s in scan_sections(census())]
    assert keys == ["scan", "fallbacks", "compile"]
    assert [s.key for s in scan_sections(OpsCensus())] == ["scan", "compile"]


@pytest.mark.parametrize("terminal", [True, False])
@pytest.mark.parametrize("width", [80, 100, 200])
def test_the_scan_fits_the_width(width: int, terminal: bool) -> None:
    text = ANSI.sub("", printed(lambda c: render_scan(census(), c), width, terminal=terminal))
    assert max(len(line) for line in text.splitlines()) <= width
    view = View(title="", result="INFO", subtitle="", sections=scan_sections(census()))
    texts, names = view_texts(view)
    assert sorted({a for t in texts for a in atoms(t) if a not in text}) == []
    assert all(n.rsplit("::", 1)[-1] in text for n in names)
    assert (
        "Unsupported on neuron: 1 op(s)" in text and "torch_neuronx reports 1 CPU fallback" in text
    )
