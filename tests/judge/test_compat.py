"""The verdict's compatibility section, from each side's op census and environment."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from parity.bundle import Bundle
from parity.judge.compat import compatibility, side_summary
from parity.model.ops import (
    BackendReport,
    BreakReason,
    Explain,
    Fallbacks,
    Finding,
    GraphProbes,
    OpFinding,
    OpsCensus,
    OpSource,
    OpsSummary,
    ScanError,
    Versions,
)
from parity.model.verdict import OpAt, ReasonAt, VersionRow
from tests.fixtures import bundles

SRC = OpSource(where="model.py:12", code="x = f(x)", phase="forward", autograd_node=None, count=2)


def _ops(**over: object) -> OpsCensus:
    census = OpsCensus(
        device="neuron:0",
        steps_scanned=2,
        custom_ops=(
            OpFinding(
                op="mylib::fused",
                dtypes=("bfloat16",),
                phases=("forward",),
                count=2,
                error="a custom op",
                sources=(SRC,),
                test_first=True,
            ),
        ),
        unsupported=(
            OpFinding(
                op="aten::_unique2",
                dtypes=("int64",),
                phases=("forward",),
                count=2,
                error="not implemented",
                sources=(SRC,),
            ),
        ),
        fallbacks=Fallbacks(
            backend=BackendReport(backend="torch_neuronx", fallback_ops=("aten::nonzero",))
        ),
        host_syncs=(
            Finding(
                op="aten::_local_scalar_dense",
                phase="forward",
                dtypes=("f32",),
                where="train.py:40",
                source=None,
                autograd_node=None,
                count=2,
                detail=".item() waits",
            ),
        ),
        graphs=GraphProbes(
            explain=Explain(
                graph_breaks=1, reasons=(BreakReason(reason="r", where="m:3", count=1),)
            )
        ),
        summary=OpsSummary(
            ops=40,
            op_calls_per_step=(100, 90),
            custom_ops=1,
            unsupported=1,
            fallbacks=1,
            host_syncs=2,
            copies=0,
            graph_breaks=1,
            fullgraph=False,
            recompilations=0,
        ),
        versions=Versions(python="3.11.7", torch="2.13.0"),
        clean=False,
    )
    return replace(census, **over)  # type: ignore[arg-type]


def _bundle(python: str, packages: dict[str, str | None], ops: OpsCensus | None) -> Bundle:
    man = bundles.manifest(role="x", spec="cpu")
    env = man.environment
    assert env is not None
    env = replace(env, python=python, device=replace(env.device, backend_packages=packages))
    return Bundle(path=Path("b"), manifest=replace(man, environment=env), ops=ops)


def test_per_side_findings_and_versions_side_by_side() -> None:
    a = _bundle("3.11.7", {}, None)
    b = _bundle("3.11.9", {"torch-neuronx": "2.13.1", "neuronx-cc": None}, _ops())
    comp = compatibility(a, b)
    assert comp.baseline.scanned is False and comp.baseline.unsupported is None
    t = comp.target
    assert t.unsupported == (OpAt(op="aten::_unique2", dtypes=("int64",), where="model.py:12"),)
    assert t.custom_ops is not None
    assert t.custom_ops[0] == OpAt(op="mylib::fused", where="model.py:12", test_first=True)
    assert t.fallbacks is not None and t.fallbacks.backend == "torch_neuronx"
    assert t.fallbacks.ops == ("aten::nonzero",)
    assert t.host_syncs is not None and t.host_syncs[0].where == "train.py:40"
    assert t.graph_breaks == 1 and t.graph_break_reasons == (ReasonAt(reason="r", where="m:3"),)
    assert comp.target_clean is False
    rows = {r.name: r for r in comp.versions}
    assert rows["python"].mismatch is True and rows["torch"].mismatch is False
    assert rows["torch-neuronx"] == VersionRow(
        name="torch-neuronx", baseline=None, target="2.13.1", mismatch=False, one_side=True
    )


def test_differing_backend_package_versions_are_a_mismatch() -> None:
    a = _bundle("3.11", {"torch-neuronx": "2.13.0"}, _ops())
    b = _bundle("3.11", {"torch-neuronx": "2.13.1"}, _ops(clean=True))
    rows = {r.name: r for r in compatibility(a, b).versions}
    assert rows["torch-neuronx"].mismatch is True
    assert compatibility(a, b).target_clean is True


def test_a_scan_that_failed_still_summarises() -> None:
    failed = OpsCensus(scan_error=ScanError(type="E", message="m", where=None))
    s = side_summary(failed)
    assert s.scanned and s.scan_error is not None and s.scan_error.type == "E"
    assert s.unsupported == ()
