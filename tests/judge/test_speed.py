"""The verdict's speed section from in-memory bundles: the ratio over processes, the
provisional note, and the compliance checks against process-to-process variation."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from parity.bundle import Bundle, SideRuns
from parity.judge.speed import judge_speed
from parity.model.placement import Placement
from parity.model.side import Interference, MeasurePlan, MeasureRecord, Stop
from parity.model.spec import parse_side
from parity.model.verdict import ByRole, ComplianceCheck, Speed, ThreadPlacements
from parity.report import words
from tests.fixtures import bundles

STEP_S = 0.01


def _bundle(median_s: float, rng: np.random.Generator, *, ok: bool = True) -> Bundle:
    steps = median_s * np.exp(rng.normal(0, 0.03, 60))
    steps *= median_s / float(np.median(steps))  # the median exactly as asked
    man = bundles.manifest(
        role="target", spec="cpu", status="ok" if ok else "failed", reason="it crashed"
    )
    metrics = bundles.metrics([median_s * 20, *steps.tolist()]) if ok else None
    return Bundle(path=Path("unused"), manifest=man, metrics=metrics)


def _side(
    medians: list[float], seed: int, compliance: dict[str, float | None] | None = None
) -> SideRuns:
    rng = np.random.default_rng(seed)
    runs = {
        name: _bundle(STEP_S * (m if m is not None else 1.0), rng, ok=m is not None)
        for name, m in (compliance or {}).items()
    }
    return SideRuns(
        path=Path("unused"),
        repeats=tuple(_bundle(STEP_S * m, rng) for m in medians),
        compliance=runs,
    )


# four processes per side, 2% apart
SPREAD = [1.0, 1.02, 0.98, 1.01]


def _speed(target_compliance: dict[str, float | None], medians: list[float] = SPREAD) -> Speed:
    speed = judge_speed(_side(medians, 1), _side([0.7 * m for m in medians], 2, target_compliance))
    assert speed is not None
    return speed


def test_ratio_interval_and_side_figures() -> None:
    speed = _speed({})
    assert speed.ratio == pytest.approx(0.7)
    assert speed.target_median_s / speed.baseline_median_s == pytest.approx(speed.ratio)
    assert speed.verdict == "faster" and speed.note is None
    iv = speed.interval
    assert iv.low < 0.7 < iv.high and iv.provisional is False
    assert iv.method == "Welch t on log per-process medians" and iv.df > 0
    assert iv.spread.baseline == pytest.approx(np.std(np.log(SPREAD), ddof=1))
    assert speed.repeats == ByRole(baseline=4, target=4)


def test_two_processes_per_side_are_provisional() -> None:
    speed = _speed({}, medians=[1.0, 1.02])
    assert speed.interval.provisional is True and speed.verdict == "undetermined"
    assert "spread not yet estimable" in speed.note


def test_runs_within_process_variation_pass() -> None:
    speed = _speed({"reseeded": 0.7 * 1.01, "same-input": 0.7 * 1.3})
    assert speed.reliable and speed.unreliable_because == ()
    reseeded, same = speed.compliance
    assert reseeded.passed and same.passed  # the identical-input check is one-sided
    assert "within the" in _detail(reseeded) and "not below the" in _detail(same)
    assert reseeded.low < 1 < reseeded.high and same.high is None
    assert reseeded.level == 0.98


def test_value_dependent_and_caching_targets_are_caught() -> None:
    speed = _speed({"reseeded": 0.7 * 1.25, "same-input": 0.7 * 0.6})
    reseeded, same = speed.compliance
    assert not reseeded.passed and not same.passed and not speed.reliable
    assert speed.unreliable_because == (reseeded.name, same.name)
    unreliable = [f for f in speed.findings if f.code == "speed.unreliable"]
    assert [(f.severity, f.figures["failed"]) for f in unreliable] == [
        ("blocks", [reseeded.name, same.name])
    ]
    assert reseeded.ratio == pytest.approx(1.25, rel=0.02)
    assert _detail(reseeded).startswith("the re-seeded run's median step was 1.2")
    assert "outside the" in _detail(reseeded)
    assert "that process-to-process variation explains (98% prediction interval" in (
        _detail(reseeded)
    )
    assert "below the" in _detail(
        same
    ) and "lower prediction bound from the 8 processes of both sides" in (_detail(same))
    for check in (reseeded, same):  # what was seen, no guessed cause
        assert "cache" not in _detail(check) and "depends" not in _detail(check)


def test_a_failed_run_fails_and_one_process_per_side_is_not_judged() -> None:
    failed = _speed({"reseeded": None}).compliance[0]
    assert failed.passed is False and "it crashed" in _detail(failed)
    lone = _speed({"reseeded": 0.7 * 1.5}, medians=[1.0])
    check = lone.compliance[0]
    assert check.passed is None and "not judged" in _detail(check)
    assert lone.reliable and lone.interval.provisional
    assert lone.note.startswith("undetermined: one process per side")


def _measured(side: SideRuns, share: float) -> SideRuns:
    """``side`` as a comparison leaves it, other processes having taken ``share`` of the
    machine's two cores while it measured."""
    busy = Interference(share=share, other_cpu_s=share * 2 * 40.0, cores=2, wall_s=40.0)
    stop = Stop(reason="budget", message="time budget spent", interference=busy)
    return replace(side, info=MeasureRecord(stop=stop, plan=MeasurePlan()))


def _threads(side: SideRuns, spec: str, threads: int, node: str | None = None) -> SideRuns:
    """``side``'s runs made on the side ``spec`` with ``threads`` intra-op threads (on the
    cluster node ``node``: else on this machine)."""

    def made(b: Bundle) -> Bundle:
        resolved, env = b.manifest.resolved, b.manifest.environment
        assert resolved is not None and env is not None
        placement = (
            Placement(node_id=node, hostname=node, resource="side-a", cluster="c:6379")
            if node is not None
            else None
        )
        man = replace(
            b.manifest,
            side=parse_side(spec),
            resolved=replace(resolved, threads=threads),
            environment=replace(env, placement=placement),
        )
        return replace(b, manifest=man)

    return replace(side, repeats=tuple(made(b) for b in side.repeats))


def _said(speed: Speed | None, code: str) -> str | None:
    """The words of the speed section's finding ``code``, its steadiness's included (None:
    no such finding)."""
    assert speed is not None
    found = [f for f in speed.all_findings() if f.code == code]
    return words.says(found[0]) if found else None


def _detail(check: ComplianceCheck) -> str:
    """What a check on the speed claim saw, in words."""
    return words.says(check.finding)


def _check(speed: Speed, name: str) -> ComplianceCheck:
    """The speed claim's check ``name`` (a code), the machine's included."""
    return next(c for c in speed.checks() if c.name == name)


def _placements(speed: Speed | None) -> ThreadPlacements | None:
    assert speed is not None
    return speed.steadiness.placements if speed.steadiness is not None else None


def _in_order(medians: dict[str, list[float]], seed: int) -> tuple[SideRuns, SideRuns]:
    """Both sides with their processes named ``r00``... and the ABBA run order in the
    baseline's ``side.json``, as a comparison on this machine leaves them."""
    from parity.bundle import repeat_name
    from parity.stats import interleaved_order

    sides = []
    for role, ms in medians.items():
        side = _side(ms, seed)
        named = tuple(
            replace(b, path=Path(role) / repeat_name(k)) for k, b in enumerate(side.repeats)
        )
        sides.append(replace(side, repeats=named))
    rounds = len(medians["baseline"])
    order = tuple(
        f"{role} {repeat_name(k)}" for role, k in interleaved_order(rounds, ("baseline", "target"))
    )
    stop = Stop(reason="max_repeats", message="at the cap", order=order)
    return replace(sides[0], info=MeasureRecord(stop=stop, plan=MeasurePlan())), sides[1]


def _rounds(
    medians: dict[str, list[float]], stop: dict[str, Stop | None], host: dict[str, str | None]
) -> tuple[SideRuns, SideRuns]:
    """Both sides with each process's round in its manifest, each side's ``side.json``
    recording ``stop[role]`` and its runs placed on ``host[role]`` (None: this machine)."""
    sides = []
    for role, ms in medians.items():
        side = _side(ms, 3)
        placed = host[role]
        if placed is not None:
            side = _threads(side, "cpu", 1, node=placed)
        repeats = tuple(
            replace(b, manifest=replace(b.manifest, repeat=k)) for k, b in enumerate(side.repeats)
        )
        info = MeasureRecord(stop=s, plan=MeasurePlan()) if (s := stop[role]) else None
        sides.append(replace(side, repeats=repeats, info=info))
    return sides[0], sides[1]


def test_the_sides_of_one_comparison_are_paired_round_by_round() -> None:
    """A pace that drifts over the run (as this machine's does, over seconds) moves both
    processes of a round alike: pairing them leaves the ratio's own noise, where the
    independent-sides interval counts the drift twice."""
    from parity.stats import PAIRED_FROM

    rng = np.random.default_rng(11)
    n = 12
    pace = np.exp(np.cumsum(rng.normal(0, 0.10, n)))  # a random walk: rounds 10% apart
    medians = {
        "baseline": list(pace * np.exp(rng.normal(0, 0.02, n))),
        "target": list(1.3 * pace * np.exp(rng.normal(0, 0.02, n))),
    }
    order = tuple(f"{r} r{k:02d}" for k in range(n) for r in ("baseline", "target"))
    one = Stop(reason="max_repeats", message="at the cap", order=order)
    here: dict[str, str | None] = {"baseline": None, "target": None}

    paired = judge_speed(*_rounds(medians, {"baseline": one, "target": one}, here))
    assert paired is not None
    iv = paired.interval
    assert iv.method.startswith("paired t on log per-process medians, round by round")
    assert iv.df is not None and iv.df <= n - 1 and iv.rounds_spread is not None
    assert iv.rounds_autocorrelation is not None
    d = np.log(np.array(medians["target"]) / np.array(medians["baseline"]))
    assert iv.rounds_spread == pytest.approx(np.std(d, ddof=1), rel=1e-6)
    assert iv.low < 1.3 < iv.high and iv.half_width_rel < 0.05

    # the same processes from two comparisons, or one side without a record: independent
    other = replace(one, elapsed_s=12.5)
    for stops in ({"baseline": one, "target": other}, {"baseline": one, "target": None}):
        apart = judge_speed(*_rounds(medians, stops, here))
        assert apart is not None and apart.interval.method == "Welch t on log per-process medians"
        assert apart.ratio == pytest.approx(paired.ratio)
        assert apart.interval.rounds_spread is None
        assert apart.interval.half_width_rel > 1.5 * iv.half_width_rel
    # the sides on two hosts share no pace
    hosts: dict[str, str | None] = {"baseline": "node-a", "target": "node-b"}
    two = judge_speed(*_rounds(medians, {"baseline": one, "target": one}, hosts))
    assert two is not None and two.interval.rounds_spread is None
    # fewer rounds than pairing pays for: independent, even in one comparison
    few = {role: ms[: PAIRED_FROM - 1] for role, ms in medians.items()}
    short = judge_speed(*_rounds(few, {"baseline": one, "target": one}, here))
    assert short is not None and short.interval.rounds_spread is None


def _handoffs(side: SideRuns, figures: list[float | None]) -> SideRuns:
    """A side whose processes recorded these thread handoff figures (ns)."""
    runs = tuple(
        replace(b, metrics=replace(b.metrics, thread_handoff_ns=h))
        for b, h in zip(side.repeats, figures, strict=True)
        if b.metrics is not None
    )
    return replace(side, repeats=runs)


def _waited(medians: list[float], waits: list[float], seed: int) -> SideRuns:
    side = _side(medians, seed)
    runs = tuple(
        replace(b, metrics=replace(b.metrics, waited_share=w))
        for b, w in zip(side.repeats, waits, strict=True)
        if b.metrics is not None
    )
    return replace(side, repeats=runs)
