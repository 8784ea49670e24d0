"""End to end through ``python -m parity``: compare and diff agree, failures are recorded,
a curve, a human report (slow: they start worker processes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from parity.bundle import load_bundle, load_side
from tests.conftest import FIXTURES, differences, run_cli


@pytest.mark.slow
def test_compare_and_diff_give_the_same_verdict(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    cmp = run_cli(
        "compare",
        "--no-report",
        "mlp-train",
        "--baseline",
        "cpu",
        "--target",
        "cpu+bf16",
        "--json",
        "--out",
        str(out),
        "--repeats",
        "2",
    )
    assert cmp.returncode == 0, cmp.stderr
    verdict = json.loads(cmp.stdout)
    assert verdict["passed"] and verdict["sides"]["target"]["side"]["spec"] == "cpu+bf16"
    assert json.loads((out / "verdict.json").read_text()) == verdict
    d = run_cli("diff", str(out / "baseline"), str(out / "target"), "--json")
    assert d.returncode == 0, d.stderr
    assert differences(json.loads(d.stdout), verdict) == []
    assert verdict["speed"]["repeats"] == {"baseline": 2, "target": 2}
    assert verdict["speed"]["stop"]["order"] == [
        "baseline r00",
        "target r00",
        "target r01",
        "baseline r01",
    ]
    assert {c["name"] for c in verdict["speed"]["compliance"]} == {
        "speed.reseeded",
        "speed.same-input",
    }
    assert verdict["quality"]["determinism"]["target"]["checked"]
    reseeded = load_bundle(out / "target" / "reseeded")
    assert reseeded.ok and reseeded.fingerprint != verdict["workload"]["fingerprint"]
    assert load_bundle(out / "target" / "same-input").ok
    for role in ("baseline", "target"):
        b = load_side(out / role).repeats[0]
        assert b.ok
        assert b.metrics is not None and b.manifest.environment is not None
        phases = b.metrics.phases
        assert phases.first_step_s > 0 and (phases.load_s or 0) > 0
        assert (phases.start_import_s or 0) > (phases.worker_import_s or 0) > 0
        assert len(b.metrics.step_samples_s) == 40
        assert b.manifest.environment.torch.version
        assert b.manifest.environment.device.type == "cpu"
    assert not list(out.glob(".*tmp*"))


@pytest.mark.slow
def test_human_report_shows_the_verdict(tmp_path: Path) -> None:
    cmp = run_cli(
        "compare",
        "--no-report",
        "--verbose",
        "gpt-generate",
        "--target",
        "cpu+threads=1",
        "--steps",
        "6",
        "--repeats",
        "1",
        "--no-compliance",
        "--out",
        str(tmp_path / "c"),
        env={"COLUMNS": "120"},
    )
    assert cmp.returncode == 0, cmp.stderr
    for text in (
        "PASS: the target passes every gate",
        "Sides  PASS",
        "target cpu+threads=1",
        "output prefill_logits",
        "tokens agree",
        "target/baseline step time",
        "TTFT",
        "TPOT",
        "achieved FLOP/s",
        "measuring ended",
    ):
        assert text in cmp.stdout


@pytest.mark.slow
def test_a_target_that_aborts_keeps_the_baseline(tmp_path: Path) -> None:
    out = tmp_path / "c"
    cmp = run_cli(
        "compare",
        f"{FIXTURES / 'workloads.py'}:AbortOnReduced",
        "--baseline",
        "cpu",
        "--target",
        "cpu+bf16",
        "--out",
        str(out),
        "--json",
        "--repeats",
        "1",
    )
    assert cmp.returncode == 1, cmp.stderr
    verdict = json.loads(cmp.stdout)
    reason = verdict["sides"]["target"]["reason"]
    assert "SIGABRT" in reason and "phase 'steps'" in reason
    assert "Fatal Python error: Aborted" in verdict["sides"]["target"]["stderr_tail"]
    assert load_side(out / "baseline").repeats[0].ok
    target = load_side(out / "target").repeats[0]
    assert target.status == "failed" and target.manifest.environment is not None
    assert not (out / "target" / "r00" / "metrics.json").exists()
    assert not (out / "target" / "reseeded").exists()  # no compliance runs after a failure


@pytest.mark.slow
def test_a_target_that_raises_or_hangs_is_recorded(tmp_path: Path) -> None:
    fixture = FIXTURES / "workloads.py"
    cmp = run_cli(
        "compare",
        "--no-report",
        f"{fixture}:RaiseOnReduced",
        "--target",
        "cpu+bf16",
        "--out",
        str(tmp_path / "r"),
        "--json",
        "--repeats",
        "1",
    )
    assert cmp.returncode == 1
    reason = json.loads(cmp.stdout)["sides"]["target"]["reason"]
    assert reason.startswith("r00: RuntimeError in phase 'steps' (at ")
    assert reason.endswith("workloads.py:41): planted failure on the target")
    cmp = run_cli(
        "compare",
        "--no-report",
        f"{fixture}:HangOnReduced",
        "--target",
        "cpu+bf16",
        "--out",
        str(tmp_path / "h"),
        "--json",
        "--timeout",
        "15",
        "--repeats",
        "1",
    )
    assert cmp.returncode == 1
    reason = json.loads(cmp.stdout)["sides"]["target"]["reason"]
    assert reason.startswith("r00: timed out after 15 s in phase 'steps'")
    assert load_side(tmp_path / "h" / "baseline").repeats[0].ok


@pytest.mark.slow
def test_run_then_diff_across_bundles_of_different_workloads(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert (
        run_cli("run", "mlp-train", "--device", "cpu", "--out", str(a), "--steps", "5").returncode
        == 0
    )
    assert (
        run_cli("run", "mlp-train", "--device", "cpu", "--out", str(b), "--steps", "6").returncode
        == 0
    )
    d = run_cli("diff", str(a), str(b))
    assert d.returncode == 2
    assert "steps differ" in d.stderr and "--allow-diff steps=" in d.stderr
    d = run_cli("diff", str(a), str(b), "--allow-diff", "steps=one more step", "--json")
    verdict = json.loads(d.stdout)
    assert verdict["fairness"]["allowed"] == {"steps": "one more step"}
    assert d.returncode == 1  # the loss curves have different lengths


@pytest.mark.slow
def test_batch_sizes_give_a_throughput_latency_curve(tmp_path: Path) -> None:
    out = tmp_path / "curve"
    cmp = run_cli(
        "compare",
        "--no-report",
        "cnn-infer",
        "--batch-sizes",
        "1,4",
        "--steps",
        "6",
        "--target",
        "cpu+bf16",
        "--repeats",
        "1",
        "--no-compliance",
        "--out",
        str(out),
        "--json",
    )
    assert cmp.returncode == 0, cmp.stderr
    result = json.loads(cmp.stdout)
    points = result["curve"]["points"]
    assert [p["batch_size"] for p in points] == [1, 4] and len(result["verdicts"]) == 2
    for p in points:
        sides = p["sides"]
        assert sides["baseline"]["latency_s"]["p50"] > 0 and sides["target"]["latency_s"]["p99"] > 0
        assert sides["target"]["throughput"]["samples_per_s"] > 0
    assert (out / "bs1" / "verdict.json").is_file() and (out / "curve.json").is_file()


@pytest.mark.slow
def test_a_target_that_runs_out_of_memory_is_recorded(tmp_path: Path) -> None:
    cmp = run_cli(
        "compare",
        "--no-report",
        f"{FIXTURES / 'workloads.py'}:OomOnReduced",
        "--target",
        "cpu+bf16",
        "--out",
        str(tmp_path / "o"),
        "--json",
        "--repeats",
        "1",
    )
    assert cmp.returncode == 1
    verdict = json.loads(cmp.stdout)
    reason = verdict["sides"]["target"]["reason"]
    assert "phase 'steps'" in reason and "allocate" in reason
    assert verdict["sides"]["baseline"]["status"] == "ok"


@pytest.mark.slow
def test_a_side_that_segfaults_is_recorded_with_the_signal(tmp_path: Path) -> None:
    res = run_cli(
        "run",
        f"{FIXTURES / 'workloads.py'}:SegfaultOnReduced",
        "--device",
        "cpu+bf16",
        "--out",
        str(tmp_path / "b"),
    )
    assert res.returncode == 1
    bundle = load_bundle(tmp_path / "b")
    assert bundle.status == "failed"
    assert "SIGSEGV" in (bundle.manifest.reason or "")
    assert "Segmentation fault" in (bundle.manifest.stderr_tail or "")


@pytest.mark.slow
@pytest.mark.usefixtures("outside_kept_zygotes")
def test_without_a_target_the_zygote_starts_before_torch_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading a request with no target imports torch here (the default target asks it for
    an accelerator); the zygote the sides fork from is launched before that, and used."""
    import subprocess

    import parity.request
    from parity.runner import kept
    from parity.runner.zygote import Zygote

    seen: list[int | None] = []

    def default_target() -> str:
        seen.append(kept._early[1].pid if kept._early is not None else None)
        return "cpu+bf16"

    monkeypatch.setattr(parity.request, "default_target", default_target)
    used: list[int] = []
    ready = Zygote.ready.__func__  # type: ignore[attr-defined]

    def record(cls: type[Zygote], proc: subprocess.Popen[bytes], **kw: float) -> Zygote:
        used.append(proc.pid)
        return ready(cls, proc, **kw)  # type: ignore[no-any-return]

    monkeypatch.setattr(Zygote, "ready", classmethod(record))
    out = tmp_path / "cmp"
    args = ["--steps", "3", "--repeats", "1", "--no-compliance", "--no-report", "--json"]
    res = run_cli("compare", "mlp-train", *args, "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert seen and seen[0] is not None and kept._early is None  # launched, then taken
    assert used == [seen[0]]  # the one zygote the comparison forked from
    forked_by = {
        json.loads((out / r / "r00" / "job.json").read_text())["launch"]
        for r in ("baseline", "target")
    }
    assert forked_by == {"fork"}
    refused = run_cli("compare", "no-such-workload", "--out", str(tmp_path / "x"))
    assert refused.returncode == 2 and kept._early is None  # a name that names nothing: none
