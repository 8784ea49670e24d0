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
from parity.api import ComparisonResult
from parity.bundle import load_bundle
from parity.errors import ResumeError, WorkloadError
from parity.model.codec import dumps
from parity.model.verdict import ByRole
from parity.progress import LineProgress
from parity.report.markdown import render_markdown
from parity.report.terminal import render_terminal
from parity.request import CompareRequest
from parity.safety.redact import REDACTED
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
    # formats by shape, in variables whose names say nothing (round three)
    "TORCH_HUB_HEADERS": "Authorization: Basic cGxhbnRlZDpiYXNpYy1lbnYtNDQx",
    "NEURON_DATA_URL": "https://acct.blob.example/d?sv=2024&sig=plantedEnvSig7781%2Bq&se=1",
    "PARITY_MIRROR": "https://b.s3.example/k?X-Amz-Credential=plantedEnvCred55&X-Amz-Signature=plantedEnvAmz66",
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
    values += ["cGxhbnRlZDpiYXNpYy1lbnYtNDQx", "plantedEnvSig7781", "plantedEnvCred55"]
    values += ["plantedEnvAmz66"]
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
    render_terminal(result.verdict, Console(file=buffer, width=200), sides=sides, verbose=True)
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


#: a script comparison that carries credentials on its command line in every format
#: (round three): killed at random points, no copy of any may be left anywhere
KILL_SECRETS = {
    "token": secrets_script.TOKEN,
    "api key": secrets_script.API_KEY,
    "db password": secrets_script.DB_PASSWORD,
    "basic": "cGxhbnRlZDpraWxsLWJhc2ljLTY2OTM=",
    "sig": "plantedKillSig0123abcd",
    "amz signature": "plantedKillAmzSignature9876",
    "amz credential": "AKIAPLANTEDKILLCRED77",
    "query token": "planted-kill-query-token-31",
}


def _script_command() -> list[str]:
    url = (
        f"https://b.s3.example/k?X-Amz-Credential={KILL_SECRETS['amz credential']}%2F2026"
        f"&X-Amz-Signature={KILL_SECRETS['amz signature']}&sig={KILL_SECRETS['sig']}"
        f"&token={KILL_SECRETS['query token']}"
    )
    return [
        "python",
        str(FIXTURES / "secrets_script.py"),
        "--device",
        "{device}",
        "--steps",
        "8",
        "--linger",
        "0.4",
        "--token",
        secrets_script.TOKEN,
        f"--api-key={secrets_script.API_KEY}",
        "--db",
        f"postgres://app:{secrets_script.DB_PASSWORD}@db.example:5432/runs",
        "--url",
        url,
        "--header",
        f"Authorization: Basic {KILL_SECRETS['basic']}",
    ]


def _leaks(*roots: Path) -> list[str]:
    """Every regular file under ``roots`` (hidden and temporary ones included) that holds a
    planted value."""
    found = []
    for root in roots:
        for path in root.rglob("*") if root.exists() else []:
            if path.is_symlink() or not path.is_file():  # a FIFO is never read here
                continue
            data = path.read_bytes()
            found += [f"{k} in {path}" for k, v in KILL_SECRETS.items() if v.encode() in data]
    return found


def _started(out: Path) -> bool:
    """A worker has printed its command line (into a hidden temporary bundle's log)."""
    return any(b"connecting to" in p.read_bytes() for p in out.glob("*/.r00.tmp-*/stdout.log"))


@pytest.mark.slow
def test_a_script_comparison_killed_at_any_point_leaves_no_secret(tmp_path: Path) -> None:
    import os
    import random
    import signal
    import subprocess
    import sys
    import time

    env = {
        **os.environ,
        "PARITY_CACHE_DIR": str(tmp_path / "cache"),
        "PARITY_STORE": str(tmp_path / "store" / "index.sqlite"),
    }
    compare = [sys.executable, "-m", "parity", "compare", "--target", "cpu+bf16"]
    command = ["--repeats", "1", "--no-compliance", "--", *_script_command()]
    rng = random.Random(30)
    # killed once the first worker printed its secrets, then at random points
    kills: list[float | None] = [None, *(rng.uniform(0.5, 12.0) for _ in range(2))]
    for i, delay in enumerate(kills):
        out = tmp_path / f"c{i}"
        proc = subprocess.Popen([*compare, "--out", str(out), *command], env=env)
        began = time.monotonic()
        while proc.poll() is None and time.monotonic() - began < 120:
            if (delay is None and _started(out)) or (
                delay is not None and time.monotonic() - began > delay
            ):
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        time.sleep(0.5)  # the workers die with it (PR_SET_PDEATHSIG)
        assert not _leaks(out, tmp_path / "cache", tmp_path / "store"), (i, delay)
    assert any(out.glob("*/.r00.tmp-*/stdout.log") for out in tmp_path.glob("c*")), (
        "no kill fell inside a worker"
    )
    out = tmp_path / "c0"
    # --resume alone cannot run the masked command: one line, exit 2, nothing secret left
    refused = run_cli("compare", "--resume", str(out), env=env)
    assert refused.returncode == 2, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    # given the real command again, it finishes the comparison
    resumed = run_cli("compare", "--resume", str(out), *command, env=env)
    assert resumed.returncode in (0, 1), resumed.stderr
    assert (out / "verdict.json").is_file()
    printed = refused.stdout + refused.stderr + resumed.stdout + resumed.stderr
    leaks = _leaks(tmp_path) + [k for k, v in KILL_SECRETS.items() if v in printed]
    assert not leaks


#: a plan's free-text notes that carry credentials (``[operational]``, ``[tuning]``)
NOTES = {
    "quotas": "ask ops, https://quota.example/api?token=plantedNotesQuery55 works",
    "monitoring": "grafana at https://u:plantedNotesUrlPw66@grafana.example",
    "deployment_tooling": "helm with hf_plantedNotesHfToken0123456789abcd",
}
NOTE_SECRETS = [
    "plantedNotesQuery55",
    "plantedNotesUrlPw66",
    "hf_plantedNotesHfToken0123456789abcd",
]


def _printing_workload(root: Path) -> tuple[str, Path]:
    """The printing workload copied into ``root/work`` beside its ``.env``, and a plan
    whose notes carry credentials."""
    import shutil

    from tests.fixtures import printing_secrets

    work = root / "work"
    work.mkdir(parents=True)
    shutil.copy(FIXTURES / "printing_secrets.py", work)
    printing_secrets.write_dotenv(work)
    plan = root / "plan.toml"
    notes = "".join(f'{k} = "{v}"\n' for k, v in NOTES.items())
    plan.write_text(f'[operational]\n{notes}\n[tuning]\nintended = "key={NOTE_SECRETS[0]}"\n')
    return f"{work / 'printing_secrets.py'}:PrintingTrain", plan


def _planted_leaks(root: Path, printed: str, skip: tuple[Path, ...]) -> list[str]:
    """Each planted value, or a third of one, in any file under ``root`` (hidden and
    temporary ones included; the user's own files in ``skip`` aside) or in ``printed``."""
    from tests.fixtures import printing_secrets

    values = [*printing_secrets.ALL, printing_secrets.RAISED.split("=")[1], *NOTE_SECRETS]
    pieces = {
        v[i : i + max(8, len(v) // 3)]: v
        for v in values
        for i in range(len(v) - max(8, len(v) // 3) + 1)
    }
    found = []
    for path in root.rglob("*"):
        if path.is_symlink() or not path.is_file() or any(s in (path, *path.parents) for s in skip):
            continue
        data = path.read_bytes()
        found += sorted(
            {f"{v} in {path.relative_to(root)}" for p, v in pieces.items() if p.encode() in data}
        )
    found += sorted({f"{v} printed" for p, v in pieces.items() if p in printed})
    return found


@pytest.mark.slow
def test_what_a_workload_prints_glued_split_from_dotenv_or_raises_with_redaction_off_leaks_nowhere(
    tmp_path: Path,
) -> None:
    """Issue 53, class 7: a real workload file prints its secrets glued to text, split
    over lines and over writes, loads more from its ``.env``, then switches the worker's
    redactor off and raises them all; the plan's notes carry more. No whole value and no
    third of one is in any file parity wrote (bundles, verdict, report, cache, index) or
    in anything it printed, and the run is still judged and reported."""
    from tests.fixtures import printing_secrets

    workload, plan = _printing_workload(tmp_path)
    env = {
        **printing_secrets.ENV,
        "PARITY_CACHE_DIR": str(tmp_path / "cache"),
        "PARITY_STORE": str(tmp_path / "store" / "index.sqlite"),
    }
    out = tmp_path / "out"
    args = ["--target", "cpu+bf16", "--steps", "4", "--repeats", "1", "--no-compliance"]
    res = run_cli("compare", workload, "--plan", str(plan), *args, "--out", str(out), env=env)
    assert res.returncode == 1, res.stderr  # the target raised: a failed side, judged
    assert "target failed" in res.stdout and REDACTED in res.stdout
    report = run_cli("report", str(out), env=env)
    shown = run_cli("explain", str(out), env=env)
    assert report.returncode == 0 and shown.returncode == 0, report.stderr + shown.stderr
    assert (out / "report.html").is_file() and (tmp_path / "store" / "index.sqlite").is_file()
    # the baseline's log holds its lines, redacted, in the order printed
    log = (out / "baseline" / "r00" / "stdout.log").read_text()
    assert log.index("auth") < log.index("value ") and REDACTED in log
    verdict = (out / "verdict.json").read_text()
    assert '"quotas"' in verdict and REDACTED in verdict  # the note is kept, redacted
    printed = "".join(r.stdout + r.stderr for r in (res, report, shown))
    work = tmp_path / "work"
    assert not _planted_leaks(tmp_path, printed, skip=(work, plan))


@pytest.mark.slow
def test_a_printing_workload_killed_midway_leaves_no_raw_log(tmp_path: Path) -> None:
    """The same workload with parity SIGKILLed while the target's worker runs (after it
    printed): the hidden temporary bundle it leaves holds no secret, nor anything else."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.fixtures import printing_secrets

    workload, plan = _printing_workload(tmp_path)
    env = {
        **os.environ,
        **printing_secrets.ENV,
        "PRINTING_LINGER_S": "30",
        "PARITY_CACHE_DIR": str(tmp_path / "cache"),
        "PARITY_STORE": str(tmp_path / "store" / "index.sqlite"),
    }
    out = tmp_path / "out"
    command = [sys.executable, "-m", "parity", "compare", workload, "--plan", str(plan)]
    command += ["--target", "cpu+bf16", "--steps", "4", "--repeats", "1", "--no-compliance"]
    proc = subprocess.Popen(
        [*command, "--out", str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    began = time.monotonic()

    def target_printed() -> bool:  # its step 0 is done: it printed, and lingers in step 1
        events = out.glob("target/.r00.tmp-*/events.jsonl")
        return any(b'"phase": "steps"' in p.read_bytes() for p in events)

    while proc.poll() is None and not target_printed() and time.monotonic() - began < 240:
        time.sleep(0.1)
    time.sleep(3)  # the relay lets out whole lines after a quiet second
    assert proc.poll() is None, "the comparison ended before its target was killed"
    proc.send_signal(signal.SIGKILL)
    stdout, stderr = proc.communicate()
    time.sleep(0.5)  # the workers die with it (PR_SET_PDEATHSIG)
    logs = [p.read_text() for p in out.glob("target/.r00.tmp-*/stdout.log")]
    assert logs and "auth" in logs[0] and REDACTED in logs[0]  # what it printed, redacted
    assert not _planted_leaks(tmp_path, stdout + stderr, skip=(tmp_path / "work", plan))
