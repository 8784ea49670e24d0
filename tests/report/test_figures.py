"""Speed, latency, memory, phases and cost as the view shows them."""

from __future__ import annotations

from dataclasses import replace

from parity.model.codec import Json
from parity.model.findings import Finding
from parity.model.side import Interference, Stop
from parity.model.verdict import ByRole, ComplianceCheck
from parity.report.figures import cost, memory, phases, speed
from parity.report.parts import Sentence, Table
from tests.report.cases import golden


def test_speed_with_failed_compliance_is_unreliable() -> None:
    v = golden("passes")
    assert v.speed is not None
    seen = Finding(code="speed.run-failed", severity="blocks", figures={"reason": "12% off"})
    check = ComplianceCheck(name="speed.reseeded", passed=False, finding=seen, ratio=1.12)
    failed: dict[str, Json] = {"failed": ["speed.reseeded"]}
    said = Finding(code="speed.unreliable", severity="blocks", figures=failed)
    s = replace(
        v.speed,
        reliable=False,
        unreliable_because=("speed.reseeded",),
        compliance=(check,),
        findings=(said,),
    )
    made = speed(replace(v, speed=s))
    texts = [p.text for p in made.parts if isinstance(p, Sentence)]
    assert (
        "the speed claim is unreliable: re-seeded run within process variation failed; "
        "rerun on an idle machine"
    ) in texts
    table = next(p for p in made.parts if isinstance(p, Table))
    assert table.rows[0].cells == (
        "re-seeded run within process variation",
        "FAIL",
        "1.120",
        "the run failed: 12% off",
    )


def test_cost_without_prices_is_one_sentence() -> None:
    v = golden("passes")
    assert v.cost is not None
    unpriced = Finding(code="cost.unpriced", severity="context", figures={"missing": ["target"]})
    made = cost(replace(v, cost=replace(v.cost, available=False, reason=unpriced)))
    assert made is not None and [p.text for p in made.parts if isinstance(p, Sentence)] == [
        "no cost verdict: no price for the target; pass "
        "--price target=DOLLARS_PER_HOUR[:ACCELERATORS] or add it to the plan"
    ]
    assert cost(replace(v, cost=None)) is None


def test_memory_and_phases_rows() -> None:
    v = golden("passes")
    mem, ph = memory(v), phases(v)
    assert mem is not None and ph is not None
    mem_rows = [r.cells[0] for r in mem.parts[0].rows]  # type: ignore[union-attr]
    assert mem_rows == [
        "load: host peak RSS",
        "steps: host peak RSS",
        "steps: device peak allocated",
    ]
    steady = ph.parts[0].rows[-1].cells  # type: ignore[union-attr]
    assert steady[0] == "steady state" and steady[1].endswith("(39 steps)")
    assert memory(replace(v, memory=None)) is None


def test_what_the_budget_paid_for_and_a_busy_machine_are_said() -> None:
    v = golden("passes")
    assert v.speed is not None
    busy = Interference(share=0.4, other_cpu_s=40.0, cores=2, wall_s=50.0)
    stop = Stop(reason="budget", message="m", spent_s=50.0, setup_s=2.5, interference=busy)
    texts = [p.text for p in speed(replace(v, speed=replace(v.speed, stop=stop))).parts]
    assert (
        "measuring took 50.0 s after 2.5 s of set-up (the fp64 reference, the rounds, the "
        "compliance runs and the expected-error run)" in texts
    )
    assert (
        "other processes used 40% of the machine's 2 cores while it measured (about 20 s of "
        "the 50 s): the interval is wider for it; rerun on a quiet machine" in texts
    )
    quiet = replace(stop, interference=replace(busy, share=0.02))
    texts = [p.text for p in speed(replace(v, speed=replace(v.speed, stop=quiet))).parts]
    assert not any("other processes" in t for t in texts)


def test_the_plan_s_notes_the_set_up_parts_and_the_timing_steps_are_said() -> None:
    from parity.model.side import TimingSteps
    from parity.model.verdict import ByRole

    v = golden("passes")
    assert v.speed is not None
    stop = Stop(
        reason="budget",
        message="m",
        notes=("the compliance runs were dropped: planted",),
        probes={"fp64 reference (cached)": 0.04, "target op scan": 1.25},
    )
    short = TimingSteps(steps=16, warmup=5, steady=10, workload_steps=30, reason="the rule")
    whole = TimingSteps(steps=30, warmup=0, steady=29, workload_steps=30, reason="asks 40")
    speed_ = replace(v.speed, stop=stop, timing=ByRole(baseline=whole, target=short))
    texts = [p.text for p in speed(replace(v, speed=speed_)).parts if isinstance(p, Sentence)]
    assert "the compliance runs were dropped: planted" in texts
    assert "set-up parts took: fp64 reference (cached) 0.0 s, target op scan 1.2 s" in texts
    assert (
        "steps per process, target: the first, its quality run, ran the workload's 30; its "
        "timing processes 16 each (the rule)" in texts
    )
    assert (
        "steps per process, baseline: the first, its quality run, ran the workload's 30; its "
        "timing processes all of them too (asks 40)" in texts
    )


def test_the_generation_loop_is_named_once_or_per_side_when_they_differ() -> None:
    from parity.model.metrics import Generation, Percentiles
    from parity.model.verdict import ByRole
    from parity.report.figures import latency

    v = golden("passes")
    p = Percentiles(p50=0.01, p90=0.01, p99=0.01, mean=0.01, n=3)

    def gen(loop: str | None) -> Generation:
        said = {"loop": f"{loop}: what it times"} if loop else {}
        return Generation(
            ttft_s=p, tpot_s=p, itl_s=p, e2e_s=p, output_tokens_per_s=p, output_tokens=4,
            requests_per_step=2, definitions={"ttft": "t", **said},
            loop=loop,  # type: ignore[arg-type]
        )  # fmt: skip

    def said(a: str | None, b: str | None) -> list[str]:
        sides = ByRole(
            baseline=replace(v.sides.baseline, generation=gen(a)),
            target=replace(v.sides.target, generation=gen(b)),
        )
        return [s.text for s in latency(sides) if isinstance(s, Sentence)]

    assert said("hf", "hf")[:2] == ["generation loop: hf: what it times", "TTFT: t"]
    assert said("parity", "hf")[0] == (
        "generation loops differ: baseline parity: what it times; target hf: what it times"
    )
    assert not any("loop" in s.lower() for s in said(None, None))


def test_an_undetermined_speed_says_so_in_every_view_and_never_a_verdict_word() -> None:
    """Two processes a side, the target 5x slower: every view says "undetermined", the
    figures and what would settle it, and none says faster, slower or indistinguishable."""
    from parity.model.codec import encode
    from parity.report.markdown import render_markdown
    from parity.report.terminal import render_terminal
    from tests.report.cases import printed

    v = golden("undetermined")
    terminal = printed(lambda c: render_terminal(v, c, verbose=True), 100, terminal=False)
    texts = {
        "terminal": terminal,
        "screen": printed(lambda c: render_terminal(v, c), 100, terminal=False),
        "markdown": render_markdown(v),
        "json": str(encode(v.speed)),
        "section (HTML's too)": " ".join(p.text for p in speed(v).parts if isinstance(p, Sentence)),
    }
    for where, text in texts.items():
        flat = " ".join(text.split())
        assert "undetermined" in flat, where
        assert "would settle it" in flat, where
        for word in ("faster", "slower", "indistinguishable"):
            assert word not in flat, (where, word)
    assert "5.045 [4.503, 5.652]" in " ".join(texts["terminal"].split())


def test_indistinguishable_states_the_difference_its_interval_still_allows() -> None:
    """The word alone hides how wide the interval is: a GPU run read "indistinguishable"
    over [0.995, 1.496] while a longer run read 1.233 [1.158, 1.314], "slower"."""
    v = golden("passes")
    assert v.speed is not None
    wide = replace(v.speed.interval, low=0.995, high=1.496)
    same = replace(v.speed, ratio=1.22, interval=wide, verdict="indistinguishable")
    line = next(p.text for p in speed(replace(v, speed=same)).parts if isinstance(p, Sentence))
    assert line.endswith(
        "indistinguishable (the target's step time within -0.5% to +49.6% of the baseline's; "
        "a smaller difference needs a narrower interval)"
    ), line
    decided = next(p.text for p in speed(v).parts if isinstance(p, Sentence))
    assert decided.endswith(": faster"), decided  # a decided word needs no bounds


def test_a_paired_interval_says_what_pairing_the_rounds_left_out() -> None:
    v = golden("passes")
    assert v.speed is not None
    paired = replace(
        v.speed.interval,
        method="paired t on log per-process medians, round by round",
        spread=ByRole(baseline=0.121, target=0.130),
        rounds_spread=0.108,
    )
    lines = [
        p.text
        for p in speed(replace(v, speed=replace(v.speed, interval=paired))).parts
        if isinstance(p, Sentence)
    ]
    said = next(t for t in lines if "interval: paired t" in t)
    assert (
        "the rounds' log ratios spread 0.108 against 0.178 for two independent processes' "
        "(the sides' 0.121 and 0.130)"
    ) in said
    assert "correlate" not in said  # no autocorrelation given: nothing widened
    widened = replace(paired, rounds_autocorrelation=0.25)
    lines = [
        p.text
        for p in speed(replace(v, speed=replace(v.speed, interval=widened))).parts
        if isinstance(p, Sentence)
    ]
    assert any(
        "neighbouring rounds' ratios correlate 0.25" in t and "as if 60% as many" in t
        for t in lines
    )
    plain = [p.text for p in speed(v).parts if isinstance(p, Sentence)]
    assert not any("rounds' log ratios" in t for t in plain)
