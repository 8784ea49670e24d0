"""Compile probes: graph breaks with reasons, the fullgraph try, recompilations."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from parity.model.ops import Fullgraph
from parity.probes.graphs import CallCapture, fullgraph, graph_probes, unwrap

HERE = Path(__file__).resolve()


def _line(marker: str) -> int:
    return next(i for i, ln in enumerate(HERE.read_text().splitlines(), 1) if marker in ln)


class Breaky(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(x).relu()
        torch._dynamo.graph_break()  # MARK: break
        return self.b(h)  # type: ignore[no-any-return]


def test_a_planted_graph_break_is_counted_with_its_reason_and_line() -> None:
    model = Breaky()
    with CallCapture(model) as cap:
        for n in (2, 3):
            model(torch.randn(n, 4))
    assert len(cap.calls) == 2
    result = graph_probes(model, cap.calls)
    assert result.backend == "eager" and result.ran_on == "cpu"
    explain = result.explain
    assert explain is not None and explain.graph_breaks == 1 and explain.graphs == 2
    (reason,) = explain.reasons
    assert "graph_break()" in reason.reason
    assert reason.where is not None
    assert reason.where.endswith(f"test_graphs.py:{_line('MARK: break')}")
    assert result.fullgraph is not None and result.fullgraph.passed is False
    assert result.fullgraph.inferred_from == "explain"  # the break fails it: no compile
    assert "graph_break" in str(result.fullgraph.error)
    # what the compile would have said: fullgraph=True raises at that same break
    compiled = fullgraph(model, cap.calls[0])
    assert compiled.passed is False and "graph_break" in str(compiled.error)
    # a second batch size recompiles both graphs once
    rec = result.recompilations
    assert rec is not None and rec.calls == 2 and (rec.recompilations or 0) >= 1
    assert any("size mismatch" in r.reason for r in rec.reasons)


def test_a_clean_model_compiles_as_one_graph() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.GELU())
    compiled = torch.compile(model, backend="eager")
    assert unwrap(compiled) is model  # type: ignore[arg-type]
    with CallCapture(compiled) as cap:  # type: ignore[arg-type]
        model(torch.randn(2, 4))
        model(torch.randn(2, 4))
    result = graph_probes(compiled, cap.calls)  # type: ignore[arg-type]
    assert result.explain is not None and result.explain.graph_breaks == 0
    assert result.fullgraph == Fullgraph(passed=True, error=None, inferred_from="explain")
    assert result.recompilations is not None and result.recompilations.recompilations == 0


def test_calls_captured_in_inference_mode_are_traced_in_it() -> None:
    # a generation loop runs its forwards in inference mode: traced outside it, their
    # inference tensors cannot be saved for backward and every probe failed on that
    model = nn.Sequential(nn.Linear(4, 4), nn.GELU())
    with CallCapture(model) as cap, torch.inference_mode():
        model(torch.randn(2, 4))
        model(torch.randn(3, 4))
    assert cap.calls[0][0][0].is_inference()
    result = graph_probes(model, cap.calls)
    assert result.explain is not None and result.explain.error is None
    assert result.explain.graphs == 1 and result.explain.graph_breaks == 0
    assert result.fullgraph is not None and result.fullgraph.passed is True
    rec = result.recompilations
    assert rec is not None and rec.error is None and rec.calls == 2


def test_no_forward_call_skips_the_probes() -> None:
    result = graph_probes(nn.Linear(2, 2), [])
    assert result.skipped is not None and result.explain is None


def test_capture_keeps_only_the_first_calls_and_unhooks() -> None:
    model = nn.Linear(2, 2)
    with CallCapture(model, limit=2) as cap:
        for _ in range(5):
            model(torch.ones(1, 2))
    model(torch.ones(1, 2))
    assert len(cap.calls) == 2


def test_the_fullgraph_probe_compiles_a_clean_forward() -> None:
    model = nn.Linear(3, 2)
    assert fullgraph(model, ((torch.ones(1, 3),), {})) == Fullgraph(passed=True, error=None)
