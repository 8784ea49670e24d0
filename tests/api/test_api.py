"""The public Python API: ``parity.compare``, ``parity.run`` and their result objects."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import parity
from parity.api import ComparisonResult, RunResult
from parity.comparison import Comparison
from parity.errors import OptionError, PlanError, ResumeError, SpecError, UsageError, WorkloadError
from parity.judge.verdict import judge
from parity.model.codec import encode
from parity.request import CompareRequest, RunRequest
from tests.conftest import FIXTURES
from tests.fixtures.cli import stub_api
from tests.judge.synthetic import side_runs


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


@pytest.mark.slow  # starts a process
def test_import_parity_stays_light() -> None:
    code = "import sys, parity; print('torch' in sys.modules, parity.__version__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", parity.__version__]


@pytest.fixture
def comparison(tmp_path: Path) -> ComparisonResult:
    a = side_runs(tmp_path, "baseline", side="cpu", step_s=0.010)
    b = side_runs(tmp_path, "target", side="cpu+bf16", step_s=0.008, seed=1)
    verdict = judge(a, b)
    return ComparisonResult(Comparison(out=tmp_path, baseline=a, target=b, verdict=verdict))


def test_comparison_result_dict_rows_and_html(comparison: ComparisonResult) -> None:
    data = comparison.to_dict()
    assert json.loads(json.dumps(data))["verdict"] == encode(comparison.verdict)
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


API_CASES: list[tuple[str, str, dict[str, Any], type[UsageError], str]] = [
    ("seed float", "compare", {"seed": 1.5}, OptionError, "--seed must be a whole number"),
    ("batch size bool", "compare", {"batch_size": True}, OptionError, "--batch-size must be"),
    ("price text", "compare", {"prices": {"target": "x"}}, OptionError, "must be numbers"),
    ("price side", "compare", {"prices": {"gpu": 3}}, OptionError, "--price 'gpu=3'"),
    ("prices int", "compare", {"prices": 5}, OptionError, "prices must be a list"),
    ("steps text", "compare", {"steps": "10"}, OptionError, "--steps must be a whole number"),
    ("steps huge", "compare", {"steps": 10**400}, OptionError, "--steps must be at most"),
    ("timeout nan", "compare", {"timeout_s": math.nan}, OptionError, "finite"),
    ("timeout zero", "compare", {"timeout_s": 0}, OptionError, "--timeout must be at least 1"),
    ("budget inf", "compare", {"budget_s": math.inf}, OptionError, "--budget must be a finite"),
    ("precision two", "compare", {"precision": 2}, OptionError, "--precision must be at most"),
    ("repeats zero", "compare", {"repeats": 0}, OptionError, "--repeats must be at least 1"),
    ("nproc zero", "compare", {"nproc": 0}, OptionError, "--nproc must be at least 1"),
    ("nnodes negative", "compare", {"nnodes": -1}, OptionError, "--nnodes must be at least 1"),
    ("target loss nan", "compare", {"target_loss": math.nan}, OptionError, "finite"),
    ("compliance text", "compare", {"compliance": "yes"}, OptionError, "True or False"),
    ("workload int", "compare", {"workload": 5}, OptionError, "workload must be a string"),
    ("target list", "compare", {"target": ["cpu"]}, OptionError, "--target must be a side"),
    ("baseline device", "compare", {"baseline": "tpu9"}, SpecError, "unknown device 'tpu9'"),
    ("target nproc zero", "compare", {"target": "cpu+nproc=0"}, SpecError, "nproc=0"),
    ("unknown workload", "compare", {"workload": "nope"}, WorkloadError, "unknown workload"),
    ("size", "compare", {"size": "huge"}, SpecError, "size 'huge' is unknown"),
    ("allow int", "compare", {"allow_diff": 5}, OptionError, "allow_diff must be a list"),
    ("allow field", "compare", {"allow_diff": {"colour": "x"}}, OptionError, "fingerprint"),
    ("hf config int", "compare", {"hf_config": 5}, OptionError, "--hf-config must be a list"),
    ("hf config item", "compare", {"hf_config": ["novalue"]}, SpecError, "KEY=VALUE"),
    ("cost int", "compare", {"cost": 3}, OptionError, "cost must be a mapping"),
    ("cost range", "compare", {"cost": {"idle_fraction": 1.5}}, OptionError, "idle_fraction"),
    ("cost key", "compare", {"cost": {"nope": 1}}, OptionError, "not a cost setting"),
    ("operational list", "compare", {"operational": [1]}, OptionError, "operational must be"),
    ("batch sizes int", "compare", {"batch_sizes": 5}, OptionError, "batch_sizes must be a list"),
    ("batch sizes zero", "compare", {"batch_sizes": [0]}, OptionError, "at least 1"),
    ("batch both", "compare", {"batch_sizes": [1], "batch_size": 4}, OptionError, "not both"),
    ("script text", "compare", {"script": "python x.py"}, OptionError, "list of strings"),
    ("script empty", "compare", {"script": []}, OptionError, "script is empty"),
    (
        "script and workload",
        "compare",
        {"workload": "mlp-train", "script": ["python", "x.py"]},
        OptionError,
        "cannot go with a script",
    ),
    ("out int", "compare", {"out": 5}, OptionError, "out must be a directory path"),
    ("out empty", "compare", {"out": ""}, OptionError, "out must be a directory path"),
    ("task int", "compare", {"task": 5}, OptionError, "task must be a string"),
    ("data int", "compare", {"data": 5}, OptionError, "data must be a string"),
    ("unknown argument", "compare", {"colour": 1}, OptionError, "unknown argument 'colour'"),
    ("plan int", "compare", {"plan": 5}, OptionError, "plan must be"),
    ("plan missing", "compare", {"plan": "nope.toml"}, PlanError, "does not exist"),
    ("resume nowhere", "compare", {"resume": "nowhere"}, ResumeError, "holds no request.json"),
    ("progress text", "compare", {"progress": "yes"}, OptionError, "progress must be"),
    ("checks ints", "compare", {"checks": [1]}, OptionError, "checks must be a list"),
    ("run device int", "run", {"workload": "mlp-train", "device": 5}, OptionError, "--device"),
    ("run device", "run", {"workload": "mlp-train", "device": "tpu"}, SpecError, "'tpu'"),
    ("run nothing", "run", {"device": "cpu"}, OptionError, "needs a workload"),
    (
        "run script without out",
        "run",
        {"script": ["python", "t.py"], "device": "cpu"},
        OptionError,
        "--out",
    ),
    (
        "run nproc",
        "run",
        {"workload": "mlp-train", "device": "cpu", "nproc": 0},
        OptionError,
        "--nproc",
    ),
    (
        "run progress",
        "run",
        {"workload": "mlp-train", "device": "cpu", "progress": 3},
        OptionError,
        "progress",
    ),
]


@pytest.mark.parametrize(
    ("name", "function", "kwargs", "error", "message"), API_CASES, ids=[c[0] for c in API_CASES]
)
def test_bad_api_input_raises_usage_errors(
    name: str,
    function: str,
    kwargs: dict[str, Any],
    error: type[UsageError],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stub_api(monkeypatch)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error) as info:
        getattr(parity, function)(**kwargs)
    text = str(info.value)
    assert message in text and "\n" not in text, (name, text)
    assert list(tmp_path.iterdir()) == []


def test_the_api_hands_the_cli_s_options_to_one_request(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = stub_api(monkeypatch)
    with pytest.raises(parity.ParityError, match="stub"):
        parity.compare(
            "cnn-infer",
            target="cpu+bf16",
            nproc=2,
            prices={"target": "21.5:16"},
            batch_sizes=[1, 8],
            checks=["ck/a,ck/b"],
            steps=6,
            progress=False,
        )
    request = calls.last("curve_out")
    assert isinstance(request, CompareRequest)
    assert request.batch_sizes == (1, 8) and request.target.nproc == 2
    assert request.judge.cost.prices["target"].accelerators == 16
    assert request.checks == ("ck/a", "ck/b")
    with pytest.raises(parity.ParityError, match="stub"):
        parity.run("mlp-train", device="cpu+bf16", out="b", progress=False)
    run = calls.last("run")
    assert isinstance(run, RunRequest) and run.out == "b" and run.mode == "run"


def test_one_compare_and_one_run_take_a_request_or_options(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``parity.api`` is the one public face: the CLI hands it a request, a script
    options; a request carries all its options, so none is taken beside it."""
    from parity import api

    assert parity.compare is api.compare and parity.run is api.run
    calls = stub_api(monkeypatch)
    request = CompareRequest.from_kwargs(workload="mlp-train", target="cpu+bf16")
    with pytest.raises(UsageError, match="steps given beside a CompareRequest"):
        api.compare(request, steps=4)
    with pytest.raises(parity.ParityError, match="stub"):
        api.compare(request)
    assert calls.last("compare") is request
    with pytest.raises(UsageError, match="run needs device="):
        api.run("mlp-train")
    run = RunRequest.from_kwargs("run", device="cpu", workload="mlp-train")
    with pytest.raises(parity.ParityError, match="stub"):
        api.run(run)
    assert calls.last("run") is run


@pytest.mark.slow
def test_the_cli_and_the_api_build_the_same_request(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fixtures.cli import invoke

    calls = stub_api(monkeypatch)
    with pytest.raises(parity.ParityError, match="stub"):
        parity.compare(
            "mlp-train", target="cpu+bf16", steps=6, repeats=2, pins=["torch==2.13.*"],
            allow_diff={"seed": "why"}, prices={"target": "21.5:16"}, progress=False,
        )  # fmt: skip
    from_api = calls.last("compare")
    args = ["compare", "mlp-train", "--target", "cpu+bf16", "--steps", "6", "--repeats", "2"]
    args += ["--pin", "torch==2.13.*", "--allow-diff", "seed=why", "--price", "target=21.5:16"]
    assert invoke(*args).exit_code == 1
    assert calls.last("compare") == from_api


@pytest.mark.slow  # a real comparison and a script run, in worker processes
def test_compare_and_run_from_python(tmp_path: Path) -> None:
    result = parity.compare(
        "mlp-train", target="cpu+bf16", repeats=1, compliance=False, steps=6, out=tmp_path / "c"
    )
    assert isinstance(result, parity.ComparisonResult) and result.passed
    assert json.loads((tmp_path / "c" / "verdict.json").read_text()) == encode(result.verdict)
    assert len(result.losses()["target"]) == 6
    # set-up (preparing the workload in a worker, the zygote) is counted, not the budget's
    speed = result.verdict.speed
    stop = speed.stop if speed is not None else None
    assert stop is not None and stop.setup_s is not None and stop.setup_s > 0.1, stop
    script = ["python", str(FIXTURES / "train_script.py"), "--device", "{device}", "--steps", "4"]
    run = parity.run(script=script, device="cpu", out=tmp_path / "r")
    assert isinstance(run, RunResult) and run.ok and len(run.losses) == 4
    assert [r["step"] for r in run.rows()] == [0, 1, 2, 3]
    assert "cpu" in run._repr_html_() and run.to_dict()["status"] == "ok"


@pytest.mark.parametrize("key", ["baseline", "target", "out", "steps", "repeats"])
def test_an_option_given_as_none_is_a_typed_usage_error(key: str, tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=f"{key}=None: leave {key} out"):
        parity.compare("mlp-train", **{"out": str(tmp_path / "x"), key: None})
    assert not (tmp_path / "x").exists()
