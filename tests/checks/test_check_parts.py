"""The checks' parts without worker processes: the soak gates on synthetic windows, ticking
the verdict's list, and bad input refused before anything is written."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from parity.bundle import Bundle
from parity.checks import run_check
from parity.checks.common import checked_items
from parity.checks.soak import analyse
from parity.errors import OptionError, SpecError, WorkloadError
from parity.model.checks import (
    CheckFigures,
    CheckResult,
    CheckSettings,
    CheckSides,
    CheckWorkload,
    SlopeGate,
)
from parity.model.metrics import SoakFigures, SoakWindow
from parity.model.spec import WorkloadSpec, parse_side
from parity.request import CheckRequest
from tests.fixtures import bundles
from tests.judge.synthetic import side_runs

MIB = 1 << 20


def _soak_bundle(windows: list[SoakWindow], duration: float) -> Bundle:
    man = bundles.manifest(role="soak", spec="cpu", mode="soak")
    metrics = bundles.metrics(
        [0.01] * 5,
        soak=SoakFigures(
            duration_s=duration,
            window_s=duration / len(windows),
            steps=1000,
            first_step_s=0.01,
            step_samples_every=1,
            rss_source="/proc/self/statm",
            windows=tuple(windows),
        ),
    )
    return Bundle(path=Path("soak"), manifest=man, metrics=metrics)


def _windows(
    n: int, duration: float, *, drift_per_h: float = 0.0, mib_per_min: float = 0.0
) -> list[SoakWindow]:
    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        t = (i + 0.5) * duration / n
        lat = 0.01 * (1 + drift_per_h * t / 3600) * float(np.exp(rng.normal(0, 0.02)))
        rss = int(300 * MIB + mib_per_min * MIB * t / 60 + int(rng.integers(0, 64)) * 4096)
        out.append(
            SoakWindow(
                t_s=t,
                end_s=t + duration / n / 2,
                steps=10,
                median_s=lat,
                mean_s=lat,
                max_s=lat,
                ttft_median_s=None,
                host_rss=rss,
                device_allocated=None,
            )
        )
    return out


def _request(**over: object) -> CheckRequest:
    base = CheckRequest.from_kwargs("soak", workload="cnn-infer", device="cpu", duration="1h")
    return replace(base, **over)  # type: ignore[arg-type]


def _slope(gates: list[object], name: str) -> SlopeGate:
    gate = next(g for g in gates if isinstance(g, SlopeGate) and g.name == name)
    assert isinstance(gate, SlopeGate)
    return gate


def test_soak_gates_on_synthetic_windows() -> None:
    flat, figures = analyse(_soak_bundle(_windows(100, 3600), 3600), _request())
    assert all(g.passed for g in flat)
    assert figures.latency_drift is not None and figures.latency_drift.conclusive is True
    leak, figures = analyse(_soak_bundle(_windows(100, 600, mib_per_min=5), 600), _request())
    host = _slope(list(leak), "host memory growth")
    assert host.passed is False and host.figure.slope is not None
    assert 4.5 < host.figure.slope < 5.5
    assert "device_allocated_growth" in figures.not_measured
    slow, _ = analyse(_soak_bundle(_windows(100, 3600, drift_per_h=0.5), 3600), _request())
    drift = _slope(list(slow), "latency drift")
    assert not drift.passed and drift.figure.low is not None and drift.figure.low > 0.1
    short, _ = analyse(_soak_bundle(_windows(5, 10), 10), _request())
    assert [g.passed for g in short] == [False]


def _check(check: str, sides: CheckSides, passed: bool, config: str) -> CheckResult:
    parts = bundles.parts(config=config)
    return CheckResult(
        check=check,  # type: ignore[arg-type]
        item={"rollback": "rollback path", "recovery": "failure recovery"}.get(
            check, "sustained load"
        ),
        passed=passed,
        exit_code=0 if passed else 1,
        reason=None,
        parity_version="0.2.0",
        created_unix=time.time(),
        workload=CheckWorkload(
            spec=WorkloadSpec(name="gpt-train"),
            name="gpt-train",
            size="tiny",
            kind="train",
            fingerprint=parts.digest(),
            parts=parts,
        ),
        sides=sides,
        settings=CheckSettings(),
        gates=(),
        figures=CheckFigures(),
        bundles={},
        evidence=f"{check} evidence",
    )


def test_checked_items_need_a_pass_on_the_verdicts_sides(tmp_path: Path) -> None:
    a = side_runs(tmp_path, "baseline", side="cpu", step_s=0.01, repeats=1).first
    b = side_runs(tmp_path, "target", side="cpu+bf16", step_s=0.01, repeats=1).first
    config = a.manifest.workload.parts.config
    rollback = CheckSides(target=parse_side("cpu+bf16"), baseline=parse_side("cpu"))
    checks = [
        _check("rollback", rollback, True, config),
        _check("recovery", CheckSides(device=parse_side("cpu+bf16")), False, config),  # failed
        _check("soak", CheckSides(device=parse_side("cpu")), True, "other"),  # another side
    ]
    assert checked_items(checks, a, b) == {"rollback path": "rollback evidence"}
    assert checked_items([_check("rollback", rollback, True, "x")], a, b) == {}
    soak = [_check("soak", CheckSides(device=parse_side("cpu+bf16")), True, "any workload")]
    assert checked_items(soak, a, b) == {"sustained load": "soak evidence"}


@pytest.mark.parametrize(
    ("check", "workload", "options", "error", "message"),
    [
        ("soak", "mlp-train", {"duration": "10s"}, OptionError, "soak runs inference"),
        ("soak", "cnn-infer", {"duration": "10x"}, OptionError, "is not a duration"),
        ("soak", "cnn-infer", {"bounds": {"warmup": 0.95}}, OptionError, "--warmup"),
        ("soak", "cnn-infer", {"bounds": {"max_drift": -1}}, OptionError, "--max-drift"),
        ("soak", "cnn-infer", {"side": "tpu9"}, SpecError, "unknown device 'tpu9'"),
        ("rollback", "cnn-infer", {}, OptionError, "rollback and recovery checkpoint"),
        ("rollback", "mlp-train", {"k": 0}, OptionError, "--k must be at least 1"),
        ("rollback", "mlp-train", {"side": "cpu+nproc=2"}, OptionError, "drop nproc"),
        ("recovery", "gpt-generate", {}, OptionError, "checkpoint training"),
        ("recovery", "nope", {}, WorkloadError, "unknown workload 'nope'"),
    ],
)
def test_bad_input_is_refused_and_writes_nothing(
    check: str,
    workload: str,
    options: dict[str, object],
    error: type[Exception],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    with pytest.raises(error, match=message):
        side = options.pop("side", "cpu")
        bounds: Any = options.pop("bounds", {})
        request = CheckRequest.from_kwargs(
            check,  # type: ignore[arg-type]
            workload=workload,
            out=str(out),
            **{"target" if check == "rollback" else "device": side},
            **options,
            **bounds,
        )
        run_check(request)
    assert not out.exists() and not (tmp_path / "parity-runs").exists()


def test_a_full_out_dir_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("keep")
    request = CheckRequest.from_kwargs(
        "soak", workload="cnn-infer", out=str(tmp_path), device="cpu"
    )
    with pytest.raises(OptionError, match="not empty"):
        run_check(request)


def test_a_soak_whose_interval_reaches_past_its_bound_is_inconclusive_never_a_pass() -> None:
    """Issue 52: a short, noisy soak: no gate fails, the drift interval still reaches past
    its bound: INCONCLUSIVE, exit 3."""
    from parity.checks.common import outcome
    from parity.errors import EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_OK

    short, _ = analyse(_soak_bundle(_windows(12, 60), 60), _request())
    drift = _slope(list(short), "latency drift")
    assert drift.passed and drift.figure.conclusive is False  # the interval reaches past
    passed, code, reason = outcome(list(short))
    assert (passed, code) == (False, EXIT_INCONCLUSIVE)
    assert reason is not None and "latency drift" in reason
    flat, _ = analyse(_soak_bundle(_windows(100, 3600), 3600), _request())
    assert outcome(list(flat)) == (True, EXIT_OK, None)
    slow, _ = analyse(_soak_bundle(_windows(100, 3600, drift_per_h=0.5), 3600), _request())
    assert outcome(list(slow))[:2] == (False, EXIT_FAIL)
    assert outcome([])[:2] == (False, EXIT_FAIL)
