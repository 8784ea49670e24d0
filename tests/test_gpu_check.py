"""scripts/gpu-check and scripts/gpu-wheels, on this CPU machine.

The dry run (``GPU_CHECK_DRY=1``) is the GPU run's plumbing with the CPU standing in for
CUDA: every step reached, every file the GPU run writes written, and nothing fetched (the
network is cut off where ``unshare -n`` works, and every pip and HTTP route points nowhere).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from parity.devices.cpu import cpu_model

ROOT = Path(__file__).resolve().parent.parent
OUT_FILES = {"log", "summary.txt", "env.txt", "pytest-cuda.xml", "verdicts.json", "logs.tgz"}
OFFLINE = {
    "PIP_NO_INDEX": "1",
    "PIP_CONFIG_FILE": os.devnull,
    **{k: "http://127.0.0.1:9" for k in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")},
    **{k: "http://127.0.0.1:9" for k in ("http_proxy", "https_proxy", "all_proxy")},
    "NO_PROXY": "",
    "no_proxy": "",
    "HF_HUB_OFFLINE": "1",
}


def _report_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gcr", ROOT / "scripts" / "gpu_check_report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _no_network_prefix() -> list[str]:
    """``unshare -n`` (a network namespace with no way out) where this machine allows it."""
    if shutil.which("unshare") is None:
        return []
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    return ["unshare", "-n"] if probe.returncode == 0 else []


def _dummy_wheel(folder: Path) -> Path:
    """A minimal pure-Python wheel: a stand-in for one scripts/gpu-wheels carries."""
    folder.mkdir()
    wheel = folder / "paritydry_probe-0.1-py3-none-any.whl"
    info = "paritydry_probe-0.1.dist-info"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("paritydry_probe/__init__.py", "VALUE = 1\n")
        zf.writestr(
            f"{info}/METADATA", "Metadata-Version: 2.1\nName: paritydry-probe\nVersion: 0.1\n"
        )
        zf.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        zf.writestr(f"{info}/RECORD", "")
    return wheel


# nightly: the dry run pip-installs the stand-in wheel into this interpreter's environment
# (as the GPU run installs what it carries), which the other test workers import from
@pytest.mark.nightly
def test_dry_run_reaches_every_step_offline(tmp_path: Path) -> None:
    out = tmp_path / "out"
    specs = tmp_path / "specs.toml"
    # this CPU under its exact name, so the MFU step computes a figure and names its unit
    specs.write_text(
        f"[devices.this-cpu]\nnames = [{json.dumps(cpu_model())}]\n"
        'unit = "CPU (test entry)"\nunits_per_chip = 1\npeak_flops = { bf16 = 1e12 }\n'
    )
    env = {
        **os.environ,
        **OFFLINE,
        "GPU_CHECK_DRY": "1",
        "GPU_CHECK_PYTHON": sys.executable,
        "GPU_CHECK_WHEELS": str(_dummy_wheel(tmp_path / "wheels").parent),
        # a busy machine: the budgets guard the GPU run's lease, not this test
        "GPU_CHECK_BUDGET_S": "800",
        "GPU_CHECK_STEP_S": "400",
        "PARITY_SPECS": str(specs),
        "OUT": str(out),
    }
    prefix = _no_network_prefix()
    run = subprocess.run(
        [*prefix, str(ROOT / "scripts" / "gpu-check")],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-4000:]
    # the files a GPU run writes, flat in OUT: the device tool returns 8 files, 2 folders deep
    assert {p.name for p in out.iterdir()} == OUT_FILES
    assert all(p.is_file() for p in out.iterdir())
    assert (out / "log").read_text() == log  # everything printed, as printed
    assert "carried: paritydry_probe-0.1-py3-none-any.whl" in log
    env_txt = (out / "env.txt").read_text()
    assert f"from {ROOT / 'src' / 'parity' / '__init__.py'}" in env_txt  # from src/, as there
    summary = (out / "summary.txt").read_text().splitlines()
    assert summary[0].startswith("[SKIP] pytest -m cuda: 0 passed, 0 failed,")
    assert "needs a CUDA GPU" in summary[0]
    mfu = summary[1]
    assert mfu.startswith("[DRY] mfu gpt-train tiny on cpu+bf16") and "per CPU (test entry)" in mfu
    assert summary[2].startswith("note: 2 compares at a time")
    compares = sorted(line.split(":")[0] for line in summary[3:5])
    assert compares == [
        "[PASS] compare mlp-train-tiny-cpu-vs-cpu",
        "[PASS] compare mlp-train-tiny-cpu-vs-cpu_bf16",
    ]
    assert summary[5] == (
        "RESULT: gpu-check 2 passed, 0 failed, 1 skipped (dry run: the CPU stood in for CUDA)"
    )
    verdicts = json.loads((out / "verdicts.json").read_text())
    assert sorted(verdicts) == ["mlp-train-tiny-cpu-vs-cpu", "mlp-train-tiny-cpu-vs-cpu_bf16"]
    assert all(v["exit"] == 0 and v["verdict"]["passed"] for v in verdicts.values())
    assert verdicts["mlp-train-tiny-cpu-vs-cpu_bf16"]["verdict"]["numerics"]["precision"] == "bf16"
    with tarfile.open(out / "logs.tgz") as tar:
        names = tar.getnames()
    assert "mfu.err" in names and "mlp-train-tiny-cpu-vs-cpu.err" in names
    assert "runs/mlp-train-tiny-cpu-vs-cpu_bf16/target/r00/manifest.json" in names
    assert not any(n.endswith(".safetensors") for n in names)
    cases = (out / "pytest-cuda.xml").read_text()
    assert "test_step_timer_agrees_with_cuda_events" in cases
    assert "test_memory_peak_after_sync_matches_the_allocator" in cases


@pytest.mark.slow  # runs scripts/gpu-wheels three times
def test_gpu_wheels_carries_only_what_the_image_lacks(tmp_path: Path) -> None:
    wheels = [sys.executable, str(ROOT / "scripts" / "gpu-wheels"), "--list"]
    env = {**os.environ, **OFFLINE}
    listed = subprocess.run(wheels, capture_output=True, text=True, env=env, check=True)
    # today's image holds every need but SQLAlchemy (the history index's, issue 27)
    assert "to carry: sqlalchemy>=2.0\n" in listed.stdout
    assert "torch>=2.9" in listed.stdout and "pytest-timeout>=2.3" in listed.stdout
    assert "tomli" not in listed.stdout  # Python 3.10 only; the machine has 3.12
    image = tmp_path / "image.txt"
    lines = (ROOT / "scripts" / "gpu-image-packages.txt").read_text().splitlines()
    image.write_text("\n".join(line for line in lines if line not in ("typer", "rich")))
    listed = subprocess.run(
        [*wheels, "--image", str(image), "jsonschema>=4"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert "to carry: typer>=0.12.4 rich>=13 sqlalchemy>=2.0 jsonschema>=4" in listed.stdout
    # named: carried even though the image holds it (gpu-check found its version too old)
    listed = subprocess.run(
        [*wheels, "numpy>=9"], capture_output=True, text=True, env=env, check=True
    )
    assert "to carry: sqlalchemy>=2.0 numpy>=9" in listed.stdout
    assert "numpy>=1.24" not in listed.stdout


@pytest.mark.slow
def test_an_image_package_older_than_parity_needs_stops_the_run_in_one_line(
    tmp_path: Path,
) -> None:
    """The image's own packages are checked against pyproject's floors before any step:
    a dry run given an old numpy (a fake distribution first on the path) says which and
    how to carry a newer one, with exit code 2."""
    fake = tmp_path / "site"
    dist = fake / "numpy-1.0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: numpy\nVersion: 1.0.0\n")
    out = tmp_path / "out"
    env = {
        **os.environ,
        **OFFLINE,
        "GPU_CHECK_DRY": "1",
        "GPU_CHECK_PYTHON": sys.executable,
        "PYTHONPATH": str(fake),
        "OUT": str(out),
        # none carried, whatever a checkout's own .gpu-wheels holds for the lent machine
        "GPU_CHECK_WHEELS": str(tmp_path / "no-wheels"),
    }
    done = subprocess.run(
        [str(ROOT / "scripts" / "gpu-check")], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 2, done.stdout[-2000:]
    summary = (out / "summary.txt").read_text().strip().splitlines()
    assert summary[0].startswith("[FAIL] environment: too old: numpy 1.0.0")
    assert "scripts/gpu-wheels 'numpy>=1.24'" in summary[0]


def test_report_lines_for_failures_and_the_result(tmp_path: Path) -> None:
    gcr = _report_module()
    xml = tmp_path / "cuda.xml"
    xml.write_text(
        '<testsuites><testsuite name="pytest" tests="3">'
        '<testcase classname="t" name="test_timing"><properties>'
        '<property name="timing_ratio" value="1.004"/></properties></testcase>'
        '<testcase classname="t" name="test_memory"><failure message="peak 3 != 4&#10;more"/>'
        "</testcase>"
        '<testcase classname="t" name="test_e2e"><skipped message="needs a CUDA GPU"/></testcase>'
        "</testsuite></testsuites>"
    )
    lines = gcr.pytest_lines(xml, 1)
    assert lines[0] == "[FAIL] pytest -m cuda: 1 passed, 1 failed, 1 skipped (needs a CUDA GPU)"
    assert "[PASS] test_timing: timing_ratio=1.004" in lines
    assert "[FAIL] test_memory: peak 3 != 4" in lines
    assert gcr.pytest_lines(tmp_path / "missing.xml", 4)[0].startswith("[FAIL] pytest -m cuda")
    err = tmp_path / "x.err"
    err.write_text("Traceback\nRuntimeError: CUDA error: out of memory\n")
    hung = gcr.compare_line(tmp_path, "gpt-train-small-cpu-vs-cuda", 124, tmp_path / "none", err)
    assert (
        hung == "[FAIL] compare gpt-train-small-cpu-vs-cuda: stopped at its time budget (exit 124)"
    )
    broke = gcr.compare_line(tmp_path, "cnn-infer-tiny-cpu-vs-cuda", 1, tmp_path / "none", err)
    assert "no verdict (exit 1)" in broke and "out of memory" in broke
    failed = tmp_path / "v.json"
    failed.write_text(
        json.dumps(
            {
                "passed": False,
                "gates": [{"name": "quality", "passed": False, "detail": "loss curve"}],
                "numerics": {"precision": "tf32"},
            }
        )
    )
    line = gcr.compare_line(tmp_path, "cnn-infer-tiny-cpu-vs-cuda", 1, failed, err)
    assert line.startswith("[FAIL] compare cnn-infer-tiny-cpu-vs-cuda: quality: loss curve")
    # the first GPU run's cnn-infer small read 121.5% of the fp32 peak: its convolutions
    # ran in TF32; a figure above the peak fails the compare whatever its gates say
    flops = {"achieved_flops": 8.1e13, "mfu": 1.215, "peak": {"flops": 66.9e12, "dtype": "fp32"}}
    above = tmp_path / "above.json"
    above.write_text(json.dumps({"gates": [], "sides": {"target": {"flops": flops}}}))
    line = gcr.compare_line(tmp_path, "cnn-infer-small-cpu-vs-cuda", 0, above, err)
    assert line.startswith(
        "[FAIL] compare cnn-infer-small-cpu-vs-cuda: MFU above 100% on the target"
    )
    flops["mfu"] = 0.17
    above.write_text(json.dumps({"gates": [], "sides": {"target": {"flops": flops}}}))
    line = gcr.compare_line(tmp_path, "cnn-infer-small-cpu-vs-cuda", 0, above, err)
    assert line.startswith("[PASS] compare cnn-infer-small-cpu-vs-cuda")
    kept = json.loads((tmp_path / "verdicts.json").read_text())
    assert set(kept) == {
        "gpt-train-small-cpu-vs-cuda",
        "cnn-infer-tiny-cpu-vs-cuda",
        "cnn-infer-small-cpu-vs-cuda",
    }
    summary = tmp_path / "summary.txt"
    summary.write_text("[PASS] a\n[SKIP] b: not reached\nnote: x\n")
    assert gcr.result(summary, True)[1] == 0  # a dry run skips what needs CUDA
    assert gcr.result(summary, False) == ("RESULT: gpu-check 1 passed, 0 failed, 1 skipped", 1)
    summary.write_text("[PASS] a\n[FAIL] b\n")
    assert gcr.result(summary, True)[1] == 1
