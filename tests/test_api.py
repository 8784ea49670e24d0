"""The public Python API: ``parity.compare``, ``parity.run`` and their result objects."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

import parity
from parity.api import CompareResult
from parity.bundle import load_side
from parity.judge.verdict import judge
from parity.results import ComparisonResult, RunResult
from tests.conftest import FIXTURES
from tests.judge.synthetic import side_dir


def test_all_is_sorted_and_complete() -> None:
    assert parity.__all__ == sorted(parity.__all__)
    public = {
        name
        for name, value in vars(parity).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public - {"TYPE_CHECKING", "Any", "annotations"} <= set(parity.__all__)
    for name in parity.__all__:
        assert getattr(parity, name) is not None
    with pytest.raises(AttributeError):
        _ = parity.no_such_name  # type: ignore[attr-defined]


def test_import_parity_stays_light() -> None:
    code = "import sys, parity; print('torch' in sys.modules, parity.__version__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", parity.__version__]


@pytest.fixture
def comparison(tmp_path: Path) -> ComparisonResult:
    a = load_side(side_dir(tmp_path, "baseline", side="cpu", step_s=0.010))
    b = load_side(side_dir(tmp_path, "target", side="cpu+bf16", step_s=0.008, seed=1))
    verdict = judge(a, b)
    return ComparisonResult(CompareResult(out=tmp_path, baseline=a, target=b, verdict=verdict))


def test_comparison_result_dict_rows_and_html(comparison: ComparisonResult) -> None:
    data = comparison.to_dict()
    assert json.loads(json.dumps(data))["verdict"] == comparison.verdict
    assert data["passed"] is comparison.passed and data["exit_code"] == comparison.exit_code
    assert comparison.speedup is not None and comparison.speedup > 1
    sides = comparison.rows("sides")
    assert [r["role"] for r in sides] == ["baseline", "target"]
    assert sides[1]["side"] == "cpu+bf16" and sides[0]["median_step_s"] > 0
    steps = comparison.rows("steps")
    assert len(steps) == 2 * 3 * 40  # sides x repeats x steps
    assert {"time_s", "loss", "steady"} <= set(steps[0])
    assert any(c["name"] == "loss curve" for c in comparison.rows("checks"))
    with pytest.raises(parity.UsageError, match="no view"):
        comparison.rows("nope")
    page = comparison._repr_html_()
    assert "PASS" in page and "cpu+bf16" in page and "<table>" in page and "<script" not in page
    assert "PASS: the target passes every gate" in repr(comparison)
    assert "step time" in repr(comparison) and "loss curve" in repr(comparison)


def test_dataframes_where_pandas_is_installed(comparison: ComparisonResult) -> None:
    pd = pytest.importorskip("pandas")
    frame = comparison.to_dataframe()
    assert isinstance(frame, pd.DataFrame) and list(frame["role"]) == ["baseline", "target"]
    steps = comparison.to_dataframe("steps")
    assert steps.groupby("role")["time_s"].count().to_dict() == {"baseline": 120, "target": 120}


def test_dataframe_without_pandas_says_how_to_get_it(
    comparison: ComparisonResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        comparison.to_dataframe()


def test_bad_api_input_raises_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(parity.UsageError, match="not both"):
        parity.compare("mlp-train", script=["python", "x.py"])
    with pytest.raises(parity.UsageError, match="one of the two"):
        parity.run(device="cpu", out=tmp_path / "x")
    with pytest.raises(parity.UsageError, match="unknown workload"):
        parity.compare("no-such-workload", out=tmp_path / "y")
    with pytest.raises(parity.UsageError, match="repeats"):
        parity.compare("mlp-train", repeats=0)


@pytest.mark.slow
def test_compare_and_run_from_python(tmp_path: Path) -> None:
    result = parity.compare(
        "mlp-train", target="cpu+bf16", repeats=1, compliance=False, steps=6, out=tmp_path / "c"
    )
    assert isinstance(result, parity.ComparisonResult) and result.passed
    assert json.loads((tmp_path / "c" / "verdict.json").read_text()) == result.verdict
    assert len(result.losses()["target"]) == 6
    script = ["python", str(FIXTURES / "train_script.py"), "--device", "{device}", "--steps", "4"]
    run = parity.run(script=script, device="cpu", out=tmp_path / "r")
    assert isinstance(run, RunResult) and run.ok and len(run.losses) == 4
    assert [r["step"] for r in run.rows()] == [0, 1, 2, 3]
    assert "cpu" in run._repr_html_() and run.to_dict()["status"] == "ok"
