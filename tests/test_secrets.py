"""Credentials never reach a bundle, a verdict, a report, the cache, the index or a line
parity prints: in the environment, printed or raised by a workload, on a script's
command line, in a user file's factory error."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest
from rich.console import Console

from parity import api
from parity.bundle import load_bundle
from parity.errors import ResumeError, WorkloadError
from parity.model.codec import dumps
from parity.model.verdict import ByRole
from parity.progress import LineProgress
from parity.redact import REDACTED
from parity.report.markdown import render_markdown
from parity.report.terminal import render_terminal
from parity.request import CompareRequest
from parity.results import ComparisonResult
from tests.conftest import FIXTURES, run_cli
from tests.fixtures import planted_secrets as secrets
from tests.fixtures import secrets_script

SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzSECRET1",
    "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7PLANTED1",
    "HF_TOKEN": "hf_plantedTokenValue0123456789abcdef",
    "GITHUB_TOKEN": "ghp_plantedTokenValue0123456789abcdefXY",
    "TORCH_SECRET_SAUCE": "torch-secret-planted-value-42",
    "NEURON_RT_AUTH": "neuron-auth-planted-value-42",
    "PARITY_DB_PASSWORD": "parity-password-planted-value",
    "NCCL_PROXY": "http://user:planted-proxy-pass@proxy.example:3128",
}


@pytest.mark.slow
def test_planted_credentials_appear_in_no_output_file(tmp_path: Path) -> None:
    out = tmp_path / "c"
    res = run_cli(
        "compare",
        "mlp-train",
        "--target",
        "cpu+bf16",
        "--steps",
        "4",
        "--repeats",
        "1",
        "--out",
        str(out),
        env=SECRETS,
    )
    assert res.returncode == 0, res.stderr
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) > 20
    values = [v for v in SECRETS.values()] + ["planted-proxy-pass"]
    for path in files:
        data = path.read_bytes()
        for value in values:
            assert value.encode() not in data, f"{value} leaked into {path}"
    for stream in (res.stdout, res.stderr):
        for value in values:
            assert value not in stream
    # the allow-listed names are recorded, redacted, so a reader sees they were set
    manifest = (out / "target" / "r00" / "manifest.json").read_text()
    assert '"TORCH_SECRET_SAUCE": "<redacted>"' in manifest
    assert "AWS_SECRET_ACCESS_KEY" not in manifest  # not allow-listed at all


LEAKY = f"{FIXTURES / 'planted_secrets.py'}"
SCRIPT_SECRETS = [
    secrets_script.TOKEN,
    secrets_script.API_KEY,
    secrets_script.DB_PASSWORD,
]
PLANTED = [
    *secrets.STDOUT.values(),
    *secrets.STDERR.values(),
    *secrets.RAISED.values(),
    *secrets.FACTORY.values(),
    *secrets.ENV_SECRETS,
    *SCRIPT_SECRETS,
]


def _compare(out: Path, progress: LineProgress, **options: object) -> ComparisonResult:
    request = CompareRequest.from_kwargs(
        **dict(target="cpu+bf16", repeats=1, compliance=False, out=str(out), **options)  # type: ignore[arg-type]
    )
    return api.compare(request, progress=progress)


def _shown(result: ComparisonResult) -> str:
    """What a person is shown of a result: the terminal report and the Markdown one."""
    buffer = io.StringIO()
    sides = ByRole(baseline=result.baseline, target=result.target)
    render_terminal(result.verdict, Console(file=buffer, width=200), sides=sides)
    return buffer.getvalue() + render_markdown(result.verdict) + dumps(result.verdict)


@pytest.mark.slow
def test_planted_secrets_reach_no_file_and_no_printed_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    assert len(set(PLANTED)) >= 20
    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PARITY_STORE", str(tmp_path / "store" / "index.sqlite"))
    for name, value in secrets.ENV.items():
        monkeypatch.setenv(name, value)
    caplog.set_level(logging.DEBUG, logger="parity")
    lines: list[str] = []
    progress = LineProgress(write=lines.append, interval_s=0.0)
    shown: list[str] = []

    # a workload that prints them, reads them from the environment and raises them
    leaky = _compare(tmp_path / "leaky", progress, workload=f"{LEAKY}:LeakyTrain", steps=4)
    target = leaky.target.repeats[0]
    assert leaky.baseline.repeats[0].ok and not target.ok
    assert REDACTED in (target.manifest.reason or "")
    assert target.ops is not None and target.ops.plain_run is not None  # the failure scan
    assert target.ops.plain_run.error is not None
    assert REDACTED in target.ops.plain_run.error.message
    env = target.manifest.environment
    assert env is not None and env.env["XLA_FLAGS"].startswith("--xla_dump_to=/tmp/xla ")
    assert env.env["TORCH_DB_PWD"] == env.env["TORCH_CUSTOM_VALUE"] == REDACTED
    shown.append(_shown(leaky))

    # a script given them as arguments: run with the real ones, recorded masked
    command = [
        "python",
        str(FIXTURES / "secrets_script.py"),
        "--device",
        "{device}",
        "--token",
        secrets_script.TOKEN,
        f"--api-key={secrets_script.API_KEY}",
        "--db",
        f"postgres://app:{secrets_script.DB_PASSWORD}@db.example:5432/runs",
    ]
    scripted = _compare(tmp_path / "script", progress, script=tuple(command))
    assert all(side.repeats[0].ok for side in (scripted.baseline, scripted.target)), [
        side.repeats[0].manifest.reason for side in (scripted.baseline, scripted.target)
    ]
    job = (tmp_path / "script" / "target" / "r00" / "job.json").read_text()
    assert '"--token",' in job and REDACTED in job
    shown.append(_shown(scripted))
    # the stored request holds the command masked: resuming needs the real one again
    with pytest.raises(ResumeError, match="secret values masked"):
        api.resume(tmp_path / "script")
    request = CompareRequest.from_kwargs(
        **dict(
            target="cpu+bf16",
            repeats=1,
            compliance=False,
            out=str(tmp_path / "script"),
            script=tuple(command),
        )
    )
    assert (
        api.resume(tmp_path / "script", request=request).verdict.passed == scripted.verdict.passed
    )

    # a user file's factory that raises them: one line, nothing written
    with pytest.raises(WorkloadError) as raised:
        _compare(tmp_path / "factory", progress, workload=f"{LEAKY}:leaky_factory")
    assert REDACTED in str(raised.value) and not (tmp_path / "factory").exists()
    shown.append(str(raised.value))

    printed = capfd.readouterr()
    shown += [printed.out, printed.err, *lines, *(r.getMessage() for r in caplog.records)]
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".sqlite" for p in files) and any(p.name == "report.html" for p in files)
    assert len(files) > 50
    leaks = [
        f"{value} in {path.relative_to(tmp_path)}"
        for path in files
        for value in PLANTED
        if value.encode() in path.read_bytes()
    ]
    leaks += [f"{value} printed" for text in shown for value in PLANTED if value in text]
    assert not leaks
    load_bundle(tmp_path / "script" / "target" / "r00")  # redacted before it was sealed
