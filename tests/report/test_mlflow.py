"""MLflow: a comparison built from a golden verdict, logged to a real local tracking server
(SQLite backend store, on 127.0.0.1) and read back through the MLflow client."""

from __future__ import annotations

import contextlib
import http.client
import logging
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from parity.comparison import Comparison
from parity.errors import UsageError
from parity.model.bundle import SideRuns
from parity.model.codec import decode, loads
from parity.model.side import MeasurePlan, MeasureRecord, Stop
from parity.model.verdict import Verdict
from parity.report.markdown import render_markdown
from parity.report.mlflow import log_comparison, log_comparison_quietly, mlflow_key, run_record
from parity.testing.raycluster import free_port
from tests.conftest import run_cli
from tests.fixtures.bundles import make_bundle, manifest, metrics

GOLDEN = Path(__file__).parents[1] / "golden"
NO_MLFLOW = "mlflow is not installed: pip install -e '.[dev]' (make test does)"
QUIET_ENV = {
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "1",
    # the tracking server alone: its job runner (huey consumers, periodic tasks) serves
    # nothing parity logs and took more CPU than the server itself
    "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
    "MLFLOW_SERVER_JOB_ENABLE_PERIODIC_TASKS": "false",
}


def comparison(root: Path, golden: str = "verdict-passes.json") -> Comparison:
    """A judged comparison in memory, as ``parity compare`` hands it to its sinks: the
    golden verdict (written, as the sinks find it), a report, one bundle per side and the
    measuring plan; nothing else is read."""
    out = root / golden.removesuffix(".json")
    out.mkdir(parents=True)
    text = (GOLDEN / golden).read_text()
    verdict = decode(Verdict, loads(text))
    (out / "verdict.json").write_text(text)
    (out / "report.html").write_text("<!doctype html><title>stub</title>\n")
    stop = Stop(reason="repeats", message="3 repeat(s) per side, as asked")
    info = MeasureRecord(stop=stop, plan=MeasurePlan(repeats=3, timeout_s=600.0))
    sides = {
        role: SideRuns(
            path=out / role,
            repeats=(
                make_bundle(
                    out / role / "r00",
                    manifest(role=role, spec=str(side.side), device_name=side.device_name),
                    run_metrics=metrics([0.02, *[0.01] * 10]),
                ),
            ),
            info=info,
        )
        for role, side in verdict.sides.items()
    }
    return Comparison(
        out=out,
        baseline=sides["baseline"],
        target=sides["target"],
        verdict=verdict,
        report=out / "report.html",
    )


def test_keys_are_what_mlflow_accepts() -> None:
    assert (
        mlflow_key("quality.output eval_logits.rel_rmse") == "quality.output_eval_logits.rel_rmse"
    )
    assert mlflow_key("../x[0]/y") == "_x_0_y"
    assert mlflow_key("") == "_" and len(mlflow_key("a" * 400)) == 250


@pytest.mark.parametrize("golden", sorted(p.name for p in GOLDEN.glob("verdict-*.json")))
def test_every_golden_verdict_makes_a_record(tmp_path: Path, golden: str) -> None:
    made = comparison(tmp_path, golden)
    verdict = made.verdict
    assert verdict is not None
    record = run_record(made)
    assert record.tags["parity.verdict"] == ("PASS" if verdict.passed else "FAIL")
    assert record.tags["parity.exit_code"] == str(verdict.exit_code)
    assert record.params["baseline.spec"] == str(verdict.sides.baseline.side)
    assert record.params["measure.repeats"] == "3" and record.params["measure.timeout_s"] == "600.0"
    assert record.params["target.parity_version"] == "0.1.0"
    assert all(len(k) <= 250 and mlflow_key(k) == k for k in [*record.params, *record.metrics])
    summary = render_markdown(verdict, sides=made.sides)  # the summary.md artifact
    assert summary.startswith(f"### parity: {record.tags['parity.verdict']}")


def test_without_the_extra_the_error_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = comparison(tmp_path)
    for name in ("mlflow", "mlflow.tracking"):  # importing them raises ImportError
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(UsageError, match=r"parity\[mlflow\]"):
        log_comparison(made, tracking_uri="http://127.0.0.1:9")


def test_a_failure_to_log_only_warns(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="parity.report.mlflow"):
        assert log_comparison_quietly(tmp_path / "missing") is None
    assert "not logged to MLflow" in caplog.text and "verdict.json" in caplog.text


#: tries at a fresh port: another process (a Ray worker of another test, say) may take
#: the free port between its pick and the server's bind
STARTS = 3


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real MLflow tracking server in its own process group, killed at the end."""
    pytest.importorskip("mlflow", reason=NO_MLFLOW)
    root = tmp_path_factory.mktemp("mlflow-server")
    for attempt in range(1, STARTS + 1):
        uri = f"http://127.0.0.1:{free_port()}"
        proc = _launch(uri, root)
        try:
            if _wait_for(uri, proc, root / "server.log", last=attempt == STARTS):
                break
        except BaseException:
            _stop(proc)
            raise
        _stop(proc)  # the port was taken: another one
    try:
        yield uri
    finally:
        _stop(proc)


def _launch(uri: str, root: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1"]
    command += ["--port", uri.rsplit(":", 1)[1], "--workers", "1"]
    command += ["--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}"]
    command += ["--default-artifact-root", str(root / "artifacts")]
    with (root / "server.log").open("wb") as logfile:
        return subprocess.Popen(
            command,
            cwd=root,
            stdout=logfile,
            stderr=subprocess.STDOUT,
            env={**os.environ, **QUIET_ENV},
            start_new_session=True,
        )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _wait_for(uri: str, proc: subprocess.Popen[bytes], logfile: Path, *, last: bool) -> bool:
    """True once the server answers; False where its port turned out to be taken (the
    server exited, or something that is not HTTP answers there) and another try is left."""
    deadline = time.monotonic() + 180  # a cold start on two shared cores takes ~30 s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            if not last:
                return False
            pytest.fail(f"mlflow server exited with {proc.returncode}:\n{logfile.read_text()}")
        try:
            with urllib.request.urlopen(f"{uri}/health", timeout=2) as answer:
                if answer.status == 200:
                    return True
        except http.client.HTTPException:  # not an HTTP server: someone else's port
            if not last:
                return False
            raise
        except OSError:
            time.sleep(1)
    pytest.fail(f"mlflow server did not answer within 180 s:\n{logfile.read_text()[-2000:]}")


@pytest.mark.slow
@pytest.mark.parametrize("golden", ["verdict-passes.json", "verdict-fails-quality.json"])
def test_a_comparison_is_logged_as_a_run(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, golden: str
) -> None:
    from mlflow.tracking import MlflowClient

    for key, value in QUIET_ENV.items():
        monkeypatch.setenv(key, value)
    made = comparison(tmp_path, golden)
    out, v = made.out, made.verdict
    assert v is not None
    run_id = log_comparison(made, tracking_uri=server, experiment="parity-test")

    client = MlflowClient(server)
    run = client.get_run(run_id)
    params, metrics, tags = run.data.params, run.data.metrics, run.data.tags
    assert run.info.status == "FINISHED"
    assert client.get_experiment(run.info.experiment_id).name == "parity-test"
    record = run_record(made)
    assert params == record.params and metrics == record.metrics
    assert tags.items() >= record.tags.items()

    assert params["workload.name"] == v.workload.name
    assert params["workload.fingerprint"] == v.workload.fingerprint
    assert params["target.spec"] == str(v.sides.target.side)
    assert params["baseline.version.torch"] == "2.13.0" and params["measure.repeats"] == "3"
    assert tags["parity.verdict"] == ("PASS" if v.passed else "FAIL")
    assert tags["parity.exit_code"] == str(v.exit_code) and tags["parity.out"] == str(out.resolve())
    assert metrics["target.median_step_s"] == v.sides.target.median_step_s
    if v.speed is None:  # withheld when quality fails
        assert "parity.speed" not in tags and "speed.ratio" not in metrics
    else:
        assert tags["parity.speed"] == v.speed.verdict
        assert metrics["speed.ratio"] == v.speed.ratio
        assert metrics["speed.interval_low"] == v.speed.interval.low
    assert v.quality is not None
    for check in v.quality.checks:
        key = mlflow_key(f"quality.{check.name}.passed")
        if check.passed is None:  # not decided (too few decisive rows): neither 1 nor 0
            assert key not in metrics, key
        else:
            assert metrics[key] == float(check.passed), key

    names = {a.path for a in client.list_artifacts(run_id)}
    assert names == {"verdict.json", "report.html", "summary.md"}
    got = Path(client.download_artifacts(run_id, "verdict.json", str(tmp_path)))
    assert got.read_text() == (out / "verdict.json").read_text()


@pytest.mark.slow
def test_parity_compare_with_mlflow_logs_its_run(server: str, tmp_path: Path) -> None:
    """The command line's ``--mlflow URI``: the comparison runs, then is logged."""
    from mlflow.tracking import MlflowClient

    out = tmp_path / "cmp"
    command = ["compare", "mlp-train", "--target", "cpu"]
    command += ["--repeats", "1", "--no-compliance", "--steps", "6", "--out", str(out)]
    command += ["--mlflow", server, "--mlflow-experiment", "parity-cli"]
    done = run_cli(*command, env=QUIET_ENV)
    assert done.returncode in (0, 1), done.stderr
    assert "not logged" not in done.stderr
    client = MlflowClient(server)
    experiment = client.get_experiment_by_name("parity-cli")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    assert [r.data.tags["parity.out"] for r in runs] == [str(out.resolve())]
    assert runs[0].data.params["target.spec"] == "cpu"


def test_an_unreachable_server_fails_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Not after MLflow's retries (four minutes by default): at once, as a warning."""
    pytest.importorskip("mlflow", reason=NO_MLFLOW)
    for key, value in QUIET_ENV.items():
        monkeypatch.setenv(key, value)
    made = comparison(tmp_path)
    uri = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(UsageError, match="no MLflow tracking server answers at"):
        log_comparison(made, tracking_uri=uri)
    with caplog.at_level(logging.WARNING, logger="parity.report.mlflow"):
        assert log_comparison_quietly(made, tracking_uri=uri) is None
    assert "not logged to MLflow" in caplog.text and str(made.out) in caplog.text
