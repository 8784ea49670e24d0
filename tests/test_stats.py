"""Tests for parity.stats, driven by the seeded FakeClock and numpy (no torch, no timing).

The coverage of the speed interval and the compliance checks' error rates over a grid of
settings are in tests/judge/test_speed_simulation.py.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from parity.model.codec import encode
from parity.probes.fake import FakeClock
from parity.stats import (
    EQUIVALENCE,
    MIN_PROCESSES,
    Processes,
    RatioCI,
    Summary,
    detect_steady,
    interleaved_order,
    prediction_interval,
    ratio_ci,
    should_stop,
    slope_ci,
    summarize,
    t_quantile,
    t_sf,
)

# --------------------------------------------------------------------------- summary


def _summary(median: float, iqr: float, n: int = 50) -> Summary:
    return Summary(
        n=n, median=median, iqr=iqr, mean=median, stdev=iqr, min=0.0, max=2.0, p10=0.5, p90=1.5
    )


def test_summarize_matches_numpy() -> None:
    x = [0.5, 1.0, 1.5, 2.0, 10.0, 3.0, 2.5]
    s = summarize(x)
    assert s.n == 7
    assert s.median == pytest.approx(float(np.median(x)))
    assert s.iqr == pytest.approx(float(np.percentile(x, 75) - np.percentile(x, 25)))
    assert s.mean == pytest.approx(float(np.mean(x)))
    assert s.stdev == pytest.approx(float(np.std(x, ddof=1)))
    assert (s.min, s.max) == (0.5, 10.0)
    assert s.p10 == pytest.approx(float(np.percentile(x, 10)))
    assert s.p90 == pytest.approx(float(np.percentile(x, 90)))
    d = json.loads(json.dumps(encode(s)))
    assert d["median"] == s.median and d["noise"] == s.noise


def test_summarize_single_sample_has_zero_spread() -> None:
    s = summarize([0.25])
    assert (s.n, s.median, s.iqr, s.stdev) == (1, 0.25, 0.0, 0.0)


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")], [float("inf")]])
def test_summarize_rejects_empty_or_non_finite(bad: list[float]) -> None:
    with pytest.raises(ValueError, match=r"empty|NaN"):
        summarize(bad)


@pytest.mark.parametrize(
    ("iqr", "noise"),
    [(0.0, "ok"), (0.10, "ok"), (0.1001, "noisy"), (0.25, "noisy"), (0.2501, "gross")],
)
def test_noise_classes_at_the_boundaries(iqr: float, noise: str) -> None:
    assert _summary(1.0, iqr).noise == noise


def test_warnings_say_what_and_how_to_fix() -> None:
    assert _summary(1.0, 0.05).warnings() == []
    (noisy,) = _summary(2.0, 0.28).warnings()
    assert noisy == (
        "IQR is 14% of the median (> 10%): the machine was noisy; "
        "rerun on an idle machine or add repeats"
    )
    (gross,) = _summary(1.0, 0.31).warnings()
    assert gross.startswith("IQR is 31% of the median (> 25%): gross interference")
    assert "idle machine" in gross
    few = _summary(1.0, 0.0, n=3).warnings()
    assert len(few) == 1 and "only 3 sample(s)" in few[0]


def test_noise_of_a_zero_median_is_gross_unless_constant() -> None:
    assert _summary(0.0, 0.0).noise == "ok"
    assert _summary(0.0, 0.1).noise == "gross"


# ---------------------------------------------------------------------- steady state

# Tolerance. MSER-5 cuts whole batches of 5, so a start may land one batch early (the last
# ramp steps are lost in the noise): never earlier than planted - 5. MSER is known to
# over-truncate now and then, when the tail is quiet by chance (costs samples, not bias):
# measured over 1000 seeds, 83-84% of starts fall in [planted - 5, planted + 10] and 92-93%
# in [planted - 5, planted + 25], for every warm-up length here; the test asks >= 75% and
# >= 85% over 200 seeds (each rate's standard error there is about 2.5%).
SEEDS = range(200)


@pytest.mark.parametrize("warmup_steps", [0, 5, 20, 40])
def test_detect_steady_finds_planted_warmup(warmup_steps: int) -> None:
    offsets = []
    for seed in SEEDS:
        clock = FakeClock(seed, 1e-3, 0.05, warmup_steps, 3.0)
        st = detect_steady(clock.step_times(200))
        assert st.method == "MSER-5"
        assert st.start <= 100  # the cap: half of the samples
        offsets.append(st.start - warmup_steps)
    off = np.array(offsets)
    assert off.min() >= -5, offsets
    assert np.mean(off <= 10) >= 0.75, offsets
    assert np.mean(off <= 25) >= 0.85, offsets
    assert np.median(off) == 0, offsets


def test_never_settling_curve_is_capped() -> None:
    st = detect_steady(list(np.linspace(2e-3, 1e-3, 200)))
    assert st.capped and st.start == 100
    assert st.message is not None and "steady state not reached within the cap" in st.message
    assert encode(st)["capped"] is True
    # A tighter cap moves the truncation with it.
    assert detect_steady(list(np.linspace(2e-3, 1e-3, 200)), cap_fraction=0.2).start == 40


def test_steady_series_is_not_capped() -> None:
    st = detect_steady(FakeClock(7, 1e-3, 0.05, 0, 1.0).step_times(200))
    assert not st.capped and st.message is None


def test_raw_mser_between_tiny_and_batched() -> None:
    x = [3.0, 2.0] + [1.0 + 0.01 * (i % 3) for i in range(18)]
    st = detect_steady(x)
    assert st.method == "MSER" and st.start == 2


@pytest.mark.parametrize(
    ("x", "start"),
    [
        ([], None),
        ([1.0], 0),
        ([5.0, 1.0], 0),
        ([5.0, 1.0, 1.1], 1),
        ([1.0, 1.2, 1.1, 1.0], 0),
        ([9.0, 1.0, 1.1, 1.0, 1.2, 1.0, 1.0, 1.1, 1.0], 1),
    ],
)
def test_tiny_samples(x: list[float], start: int | None) -> None:
    if start is None:
        with pytest.raises(ValueError, match="empty"):
            detect_steady(x)
        return
    st = detect_steady(x)
    assert st.start == start and not st.capped and st.method.startswith("tiny")


def test_detect_steady_validates_settings() -> None:
    with pytest.raises(ValueError, match="cap_fraction"):
        detect_steady([1.0] * 20, cap_fraction=1.0)
    with pytest.raises(ValueError, match="min_steady"):
        detect_steady([1.0] * 20, min_steady=0)


# --------------------------------------------------------------------------- Student's t

# Two-sided 95% and 99% critical values from any t table (e.g. NIST/SEMATECH e-Handbook
# 1.3.6.7.2), to the table's three decimals.
T_TABLE = [
    (1, 12.706, 63.657),
    (2, 4.303, 9.925),
    (3, 3.182, 5.841),
    (5, 2.571, 4.032),
    (10, 2.228, 3.169),
    (30, 2.042, 2.750),
    (100, 1.984, 2.626),
]


@pytest.mark.parametrize(("df", "t95", "t99"), T_TABLE)
def test_t_quantile_matches_the_table(df: int, t95: float, t99: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(t95, abs=6e-4)
    assert t_quantile(0.995, df) == pytest.approx(t99, abs=6e-4)
    assert t_quantile(0.025, df) == -t_quantile(0.975, df)
    assert t_quantile(0.5, df) == 0.0


@pytest.mark.parametrize("df", [0.6, 1.3, 1.9, 2.7, 4.4, 7.5, 50.0, 1e6])
@pytest.mark.parametrize("p", [0.6, 0.9, 0.975, 0.99875, 0.9999])
def test_t_quantile_inverts_the_tail_for_fractional_df(df: float, p: float) -> None:
    assert t_sf(t_quantile(p, df), df) == pytest.approx(1 - p, rel=1e-8)


def test_t_tail_is_monotone_and_tends_to_the_normal() -> None:
    assert t_sf(0.0, 3.0) == 0.5
    assert t_sf(-2.0, 3.0) == pytest.approx(1 - t_sf(2.0, 3.0))
    tails = [t_sf(t, 2.5) for t in np.linspace(0, 20, 41)]
    assert all(a > b for a, b in itertools.pairwise(tails))
    assert t_quantile(0.975, 1e7) == pytest.approx(1.959964, abs=1e-5)


def test_t_validates() -> None:
    with pytest.raises(ValueError, match="p must be"):
        t_quantile(1.0, 3)
    with pytest.raises(ValueError, match="degrees of freedom"):
        t_quantile(0.9, 0)
    with pytest.raises(ValueError, match="degrees of freedom"):
        t_sf(1.0, -1)


# ------------------------------------------------------------------ one side's processes


def test_processes_from_steps() -> None:
    side = Processes.from_steps([[1.0, 2.0, 3.0], [4.0, 4.0], [2.0]])
    assert side.medians == (2.0, 4.0, 2.0) and side.count == 3
    assert side.centre == pytest.approx(16.0 ** (1 / 3))
    assert side.spread == pytest.approx(float(np.std(np.log([2.0, 4.0, 2.0]), ddof=1)))
    assert side.lone_se == 0.0  # only a lone process carries its own noise
    one = Processes.from_steps([[1.0, 1.2, 0.9, 1.1] * 10])
    assert one.spread is None and one.lone_se > 0 and one.lone_df == 7.0  # 8 sections of 5


@pytest.mark.parametrize(
    ("steps", "match"),
    [
        ([], "baseline has no repeats"),
        ([[1.0], []], "baseline repeat 1 is empty"),
        ([[0.0, 0.0, 1.0]], "baseline's median"),
        ([[1.0, float("nan")]], "NaN"),
    ],
)
def test_processes_validate(steps: list[list[float]], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Processes.from_steps(steps, "baseline")


def test_processes_validate_medians() -> None:
    with pytest.raises(ValueError, match="no processes"):
        Processes(medians=())
    with pytest.raises(ValueError, match="not positive"):
        Processes(medians=(1.0, -1.0))


def _ar1(rng: np.random.Generator, shape: tuple[int, ...], phi: float, sigma: float) -> np.ndarray:
    """AR(1) noise along the last axis with marginal standard deviation ``sigma``."""
    innov = rng.standard_normal(shape) * sigma * np.sqrt(1 - phi * phi)
    e = np.empty(shape)
    e[..., 0] = rng.standard_normal(shape[:-1]) * sigma
    for j in range(1, shape[-1]):
        e[..., j] = phi * e[..., j - 1] + innov[..., j]
    return e


@pytest.mark.parametrize("phi", [0.0, 0.8])
def test_sectioning_sees_correlated_steps(phi: float) -> None:
    # A lone process's own noise: its sectioned standard error matches the real spread of
    # the median over 400 such processes (within 30%), and with correlated steps it is far
    # above what independent steps would give (sd * 1.25 / sqrt(n)).
    rng = np.random.default_rng(11)
    x = np.exp(_ar1(rng, (400, 200), phi, 0.05))
    truth = float(np.log(np.median(x, axis=1)).std())
    ses = [Processes.from_steps([list(row)]).lone_se for row in x]
    assert 0.7 < float(np.sqrt(np.mean(np.square(ses)))) / truth < 1.3
    if phi:
        assert float(np.median(ses)) > 2 * 1.25 * 0.05 / np.sqrt(200)


# ------------------------------------------------------------------ ratio with a CI


def test_ratio_point_estimate_and_properties() -> None:
    ci = ratio_ci(Processes(medians=(2.0, 2.0, 2.0)), Processes(medians=(1.0, 1.0, 1.0)))
    assert (ci.ratio, ci.low, ci.high) == pytest.approx((0.5, 0.5, 0.5), rel=1e-12)
    assert ci.speedup == pytest.approx(2.0, rel=1e-12) and ci.verdict == "faster"
    assert ci.half_width_rel == pytest.approx(0.0, abs=1e-12)
    assert not ci.provisional and ci.note is None
    slower = ratio_ci(Processes(medians=(1.0, 1.0, 1.0)), Processes(medians=(3.0, 3.0, 3.0)))
    assert slower.verdict == "slower"
    d = json.loads(json.dumps(encode(ci)))
    assert ci.speedup == pytest.approx(2.0, rel=1e-12)
    assert d["verdict"] == "faster" and d["provisional"] is False
    assert d["baseline_processes"] == 3 and d["method"] == "Welch t on log per-process medians"


def test_welch_interval_by_hand() -> None:
    a, b = [1.00, 1.02, 0.97], [1.21, 1.17, 1.25, 1.19]
    ci = ratio_ci(Processes(medians=tuple(a)), Processes(medians=tuple(b)))
    la, lb = np.log(a), np.log(b)
    va, vb = la.var(ddof=1) / 3, lb.var(ddof=1) / 4
    df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 3)
    half = t_quantile(0.975, df) * np.sqrt(va + vb)
    d = lb.mean() - la.mean()
    assert ci.df == pytest.approx(df)
    assert ci.ratio == pytest.approx(np.exp(d))
    assert (ci.low, ci.high) == (pytest.approx(np.exp(d - half)), pytest.approx(np.exp(d + half)))
    assert ci.baseline_spread == pytest.approx(la.std(ddof=1))
    assert ci.ratio == pytest.approx(
        Processes(medians=tuple(b)).centre / Processes(medians=tuple(a)).centre
    )


def test_a_provisional_interval_gives_no_verdict_word_however_far_from_one() -> None:
    """Two processes a side, 5x apart and tight: still "undetermined" (issue 28: a
    provisional interval said "indistinguishable" of a 4.8x ratio)."""
    for target in ((5.0, 5.01), (1.0, 1.02), (0.2, 0.201)):
        ci = ratio_ci(Processes(medians=(1.0, 1.01)), Processes(medians=target))
        assert ci.provisional and ci.verdict == "undetermined"
    ci = ratio_ci(Processes(medians=(1.0, 1.01, 0.99)), Processes(medians=(5.0, 5.01, 4.99)))
    assert not ci.provisional and ci.verdict == "slower"


def test_an_interval_too_wide_to_call_the_sides_alike_is_undetermined() -> None:
    """Three processes a side on a loaded machine: an interval that holds 1 but reaches
    past ``EQUIVALENCE`` is "undetermined", with a note saying why; one that excludes 1
    keeps its word however wide, and a tight one around 1 is "indistinguishable"."""
    base = Processes(medians=(1.0, 0.3, 3.0))  # spread far past EQUIVALENCE
    for target, word in (
        ((1.1, 0.4, 2.5), "undetermined"),  # wide, holds 1
        ((1.0, 1.01, 0.99), "undetermined"),  # the baseline's spread alone reaches far
    ):
        ci = ratio_ci(base, Processes(medians=target))
        assert not ci.provisional and ci.low < 1 < ci.high, ci
        assert ci.verdict == word and ci.note is not None
        assert ci.note.startswith("undetermined: the interval") and "quieter" in ci.note
    tight = ratio_ci(Processes(medians=(1.0, 1.01, 0.99)), Processes(medians=(1.02, 1.0, 1.01)))
    assert tight.verdict == "indistinguishable" and tight.note is None
    assert tight.low >= 1 / EQUIVALENCE and tight.high <= EQUIVALENCE
    wide_slower = ratio_ci(Processes(medians=(1.0, 1.3, 0.8)), Processes(medians=(9.0, 4.0, 20.0)))
    assert wide_slower.high / wide_slower.low > 3 and wide_slower.verdict == "slower"
    assert wide_slower.note is None
    # at the edge: an interval just inside the margin is alike, just outside is not
    for edge, word in ((0.999, "indistinguishable"), (1.001, "undetermined")):
        ci = _with_high(EQUIVALENCE * edge)
        assert ci.high == pytest.approx(EQUIVALENCE * edge) and ci.verdict == word, ci


def _with_high(high: float) -> RatioCI:
    """A non-provisional interval centred on 1 whose upper end is ``high``."""
    probe = ratio_ci(Processes(medians=(1.0, 1.1, 0.9)), Processes(medians=(1.0, 1.1, 0.9)))
    scale = math.log(high) / math.log(probe.high)
    ms = tuple(math.exp(scale * math.log(m)) for m in (1.0, 1.1, 0.9))
    return ratio_ci(Processes(medians=ms), Processes(medians=ms))


def test_fewer_than_min_processes_is_provisional() -> None:
    three = Processes(medians=(1.0, 1.01, 0.99))
    two = Processes(medians=(1.2, 1.21))
    ci = ratio_ci(three, two)
    assert MIN_PROCESSES == 3 and ci.provisional
    assert ci.note is not None and "spread not yet estimable" in ci.note
    assert ci.verdict == "undetermined" and "1 more target process(es) would settle" in ci.note
    rng = np.random.default_rng(2)
    lone = Processes.from_steps([list(1.2 * np.exp(rng.normal(0, 0.05, 40)))])
    borrowed = ratio_ci(three, lone)
    assert borrowed.provisional and "other's spread" in borrowed.method and borrowed.df == 2
    both = ratio_ci(Processes.from_steps([list(np.exp(rng.normal(0, 0.05, 40)))]), lone)
    assert both.provisional and "sectioning" in both.method
    assert both.note is not None and both.note.startswith("undetermined: one process per side")
    assert "2 more baseline and 2 more target process(es)" in both.note
    assert both.low < both.ratio < both.high


def test_between_process_spread_widens_the_interval() -> None:
    # The same 2% step noise, with and without processes 5% apart: the interval over
    # processes grows with their spread.
    def half_width(process_noise: float) -> float:
        clock = FakeClock(3, 1e-3, 0.02, 0, 1.0, process_noise_rel=process_noise)
        base = [clock.step_times(200) for _ in range(4)]
        targ = [clock.step_times(200) for _ in range(4)]
        return ratio_ci(Processes.from_steps(base), Processes.from_steps(targ)).half_width_rel

    assert half_width(0.05) > 3 * half_width(0.0)


def test_ratio_ci_validates() -> None:
    side = Processes(medians=(1.0, 1.0))
    with pytest.raises(ValueError, match="confidence"):
        ratio_ci(side, side, confidence=1.0)


# ---------------------------------------------------------------- prediction intervals


def test_prediction_interval_by_hand() -> None:
    targ, base = (1.0, 1.04, 0.98), (2.0, 2.02, 1.96, 2.04)
    pi = prediction_interval(Processes(medians=targ), other=Processes(medians=base))
    assert pi is not None
    lt, lb = np.log(targ), np.log(base)
    ss = ((lt - lt.mean()) ** 2).sum() + ((lb - lb.mean()) ** 2).sum()
    s2 = max(ss / 5, lt.var(ddof=1))
    q = t_quantile(1 - 0.025 / 2, 5) * np.sqrt(s2 * (1 + 1 / 3))
    assert (pi.low, pi.high) == (pytest.approx(np.exp(-q)), pytest.approx(np.exp(q)))
    assert (pi.df, pi.processes, pi.level, pi.sided) == (5.0, 7, 0.975, "two-sided")
    assert pi.contains(1.0) and not pi.contains(pi.high * 1.001) and not pi.contains(pi.low / 1.001)
    assert pi.bounds == f"{pi.low:.3f}-{pi.high:.3f}"
    lower = prediction_interval(
        Processes(medians=targ), other=Processes(medians=base), sided="lower"
    )
    assert lower is not None and lower.high is None and lower.bounds == f"{lower.low:.3f}"
    assert pi.low < lower.low < 1 and lower.contains(100.0) and not lower.contains(0.5)
    assert json.loads(json.dumps(encode(lower)))["sided"] == "lower"


def test_a_quiet_other_side_never_narrows_a_noisy_one() -> None:
    noisy = Processes(medians=(1.0, 1.1, 0.9))
    quiet = Processes(medians=(1.0, 1.0001, 0.9999, 1.0, 1.0))
    alone = prediction_interval(noisy)
    pooled = prediction_interval(noisy, other=quiet)
    assert alone is not None and pooled is not None
    # the same spread (the noisy side's own), with the degrees of freedom of both sides
    assert pooled.high is not None and alone.high is not None
    assert 1 < pooled.high < alone.high
    own = float(np.std(np.log(noisy.medians), ddof=1)) * np.sqrt(1 + 1 / 3)
    assert np.log(pooled.high) == pytest.approx(t_quantile(1 - 0.0125, 6) * own)


def test_no_prediction_without_a_spread() -> None:
    one = Processes(medians=(1.0,))
    assert prediction_interval(one) is None
    assert prediction_interval(one, other=Processes(medians=(2.0,))) is None
    assert prediction_interval(one, other=Processes(medians=(2.0, 2.1))) is not None
    with pytest.raises(ValueError, match="level"):
        prediction_interval(Processes(medians=(1.0, 1.1)), level=0.0)


# ------------------------------------------------------------------ a slope with a CI


def test_slope_interval_covers_the_truth() -> None:
    rng = np.random.default_rng(1)
    x = np.linspace(0, 10, 200)
    fit = slope_ci(x, 2.0 * x + rng.normal(0, 1, x.size))
    assert fit is not None and fit.low < 2.0 < fit.high and abs(fit.slope - 2.0) < 0.2
    flat = slope_ci(x, rng.normal(0, 1, x.size))
    assert flat is not None and flat.low < 0.0 < flat.high and flat.n == 200
    assert slope_ci([1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0]) is None
    assert slope_ci([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]) is None


def test_slope_interval_allows_for_autocorrelation() -> None:
    # AR(1) residuals (phi 0.8, 100 points): at least 90% of 300 intervals cover the
    # true zero slope (the docstring's simulation measured 92-94%).
    rng = np.random.default_rng(5)
    noise = _ar1(rng, (300, 100), 0.8, 1.0)
    x = np.arange(100.0)
    cover = []
    for row in noise:
        fit = slope_ci(x, row)
        assert fit is not None
        cover.append(fit.low <= 0.0 <= fit.high)
    assert np.mean(cover) >= 0.90


# ------------------------------------------------------------------ adaptive stopping


def _ci(half_width_rel: float, *, processes: int = 3) -> RatioCI:
    return RatioCI(
        ratio=0.5,
        low=0.5 - 0.5 * half_width_rel,
        high=0.5 + 0.5 * half_width_rel,
        confidence=0.95,
        method="Welch t on log per-process medians",
        df=4.0,
        baseline_processes=processes,
        target_processes=processes,
        baseline_spread=0.01,
        target_spread=0.01,
        provisional=processes < MIN_PROCESSES,
        verdict="faster",
    )


def test_stop_on_precision() -> None:
    d = should_stop(_ci(0.01), precision=0.02, elapsed_s=10, budget_s=100, repeats=3)
    assert d is not None and d.reason == "precision"
    assert "±1.0%" in d.message and "±2.0%" in d.message
    assert encode(d)["reason"] == "precision"


def test_precision_waits_for_min_repeats() -> None:
    assert should_stop(_ci(0.01), precision=0.02, elapsed_s=5, budget_s=100, repeats=1) is None


def test_never_stops_on_precision_with_a_provisional_interval() -> None:
    narrow = _ci(0.001, processes=2)
    assert should_stop(narrow, precision=0.02, elapsed_s=5, budget_s=100, repeats=2) is None
    d = should_stop(narrow, precision=0.02, elapsed_s=95, budget_s=100, repeats=2)
    assert d is not None and d.reason == "budget" and "provisional" in d.message


def test_keep_going_when_wide_and_within_budget() -> None:
    assert should_stop(_ci(0.05), precision=0.02, elapsed_s=10, budget_s=100, repeats=3) is None


def test_stop_on_budget_when_another_repeat_would_not_fit() -> None:
    # 3 repeats in 70 s: the next (about 23 s) would end past 90 s.
    d = should_stop(_ci(0.05), precision=0.02, elapsed_s=70, budget_s=90, repeats=3)
    assert d is not None and d.reason == "budget" and "raise the budget" in d.message
    assert "provisional" not in d.message
    d1 = should_stop(_ci(0.01), precision=0.02, elapsed_s=95, budget_s=90, repeats=1)
    assert d1 is not None and d1.reason == "budget" and "fewer than the 2 wanted" in d1.message


def test_stop_on_max_repeats() -> None:
    d = should_stop(
        _ci(0.05), precision=0.02, elapsed_s=10, budget_s=1000, repeats=8, max_repeats=8
    )
    assert d is not None and d.reason == "max_repeats" and "(8)" in d.message


def test_past_the_repeat_cap_only_an_interval_wider_than_5_percent_goes_on() -> None:
    """At the cap of 30 the quick built-ins had often spent 13-23 s of the default 30 s,
    some at ±6-8%: rounds go on, up to the wide cap, while the interval is wider than ±5%."""
    cap = dict(precision=0.02, elapsed_s=10, budget_s=1000, max_repeats=120, settle_from=30)
    assert should_stop(_ci(0.07), repeats=30, **cap) is None  # wide at the cap: on
    assert should_stop(_ci(0.07), repeats=29, **cap) is None
    assert should_stop(_ci(0.04), repeats=29, **cap) is None  # within 5% before the cap: on
    d = should_stop(_ci(0.04), repeats=30, **cap)
    assert d is not None and d.reason == "max_repeats" and "(30)" in d.message
    d = should_stop(_ci(0.049), repeats=47, **cap)
    assert d is not None and d.reason == "max_repeats"
    assert "(47; rounds past 30 run only while the interval is wider than ±5%)" in d.message
    d = should_stop(_ci(0.09), repeats=120, **cap)  # the wide cap ends it however wide
    assert d is not None and d.reason == "max_repeats" and "±9.0%" in d.message
    d = should_stop(_ci(0.01), repeats=47, **cap)  # the precision asked still comes first
    assert d is not None and d.reason == "precision"
    assert should_stop(_ci(0.07), repeats=31, **(cap | {"elapsed_s": 999})) is not None  # budget
    with pytest.raises(ValueError, match="settle_from"):
        should_stop(_ci(0.1), repeats=1, **(cap | {"settle_from": 121}))


def test_should_stop_validates() -> None:
    with pytest.raises(ValueError, match="precision"):
        should_stop(_ci(0.1), precision=0, elapsed_s=1, budget_s=10, repeats=1)
    with pytest.raises(ValueError, match="budget_s"):
        should_stop(_ci(0.1), precision=0.1, elapsed_s=1, budget_s=0, repeats=1)
    with pytest.raises(ValueError, match="min_repeats"):
        should_stop(
            _ci(0.1),
            precision=0.1,
            elapsed_s=1,
            budget_s=10,
            repeats=1,
            min_repeats=5,
            max_repeats=4,
        )


# ----------------------------------------------------------------------- interleaving


def test_abba_pattern_and_balance() -> None:
    order = interleaved_order(4)
    assert [s[0] for s in order] == ["baseline", "target", "target", "baseline"] * 2
    assert [s[1] for s in order] == [0, 0, 1, 1, 2, 2, 3, 3]
    for side in ("baseline", "target"):
        assert sorted(i for s, i in order if s == side) == [0, 1, 2, 3]


def test_linear_drift_cancels() -> None:
    for sides in (("A", "B"), ("A", "B", "C")):
        order = interleaved_order(6, sides)
        mean_pos = {s: np.mean([p for p, (t, _) in enumerate(order) if t == s]) for s in sides}
        assert len(set(mean_pos.values())) == 1, mean_pos


def test_seeded_start_is_random_but_balanced() -> None:
    starts = set()
    for seed in range(20):
        order = interleaved_order(5, ("A", "B"), seed=seed)
        assert order == interleaved_order(5, ("A", "B"), seed=seed)
        assert sum(s == "A" for s, _ in order) == 5
        a, b = order[0][0], order[1][0]
        assert [s for s, _ in order] == [a, b, b, a, a, b, b, a, a, b]
        starts.add(a)
    assert starts == {"A", "B"}


def test_interleaved_order_validates() -> None:
    assert interleaved_order(0) == []
    with pytest.raises(ValueError, match="distinct"):
        interleaved_order(2, ("A", "A"))
    with pytest.raises(ValueError, match="repeats"):
        interleaved_order(-1)


def test_a_timing_process_is_sized_by_cochran_s_optimum() -> None:
    """Steady steps ``sqrt(c_p s_w^2 / (c_s s_p^2))`` with ``s_w^2 = (pi/2) cv^2``; at
    least ``MIN_STEADY`` and the warm-up; at most the workload's own steps."""
    from parity.stats import MIN_STEADY, process_steps

    rng = np.random.default_rng(3)
    noisy = list(1e-3 * np.exp(rng.normal(0, 0.10, 400)))  # 1 ms steps, 10% noise
    q1, q3 = np.percentile(np.log(noisy), [25, 75])
    cv = (q3 - q1) / 1.349
    want = math.ceil(math.sqrt(0.5 * math.pi / 2 * cv * cv / (np.median(noisy) * 0.02**2)))
    size = process_steps(noisy, warmup=3, fixed_s=0.5, workload_steps=10_000)
    assert size.steady == want and size.steps == 1 + 3 + want and size.shortened
    assert "Cochran 1977" in size.reason and f"+ {want} steady" in size.reason
    # slow steps (a second each): the floor, so more and shorter processes
    slow = process_steps([1.0, 1.01, 0.99, 1.02] * 5, warmup=2, fixed_s=0.5, workload_steps=30)
    assert (slow.steady, slow.steps) == (MIN_STEADY, 1 + 2 + MIN_STEADY)
    # a long warm-up: at least as many steady steps, so that MSER can pass it again
    long = process_steps([1.0, 1.01] * 10, warmup=14, fixed_s=0.5, workload_steps=100)
    assert long.steady == 14 and long.steps == 29
    # the rule asks more than the workload has: every process runs all of them
    whole = process_steps(noisy, warmup=3, fixed_s=0.5, workload_steps=40)
    assert whole.steps == 40 and not whole.shortened and whole.reason.startswith("all 40")


def test_proportion_upper_bound_is_clopper_pearson() -> None:
    from parity.stats.proportion import upper_bound

    # no successes: the bound has a closed form, 1 - alpha ** (1 / n)
    for n in (1, 10, 299):
        assert upper_bound(0, n) == pytest.approx(1 - 0.05 ** (1 / n), rel=1e-9)
    # every success: nothing bounds it below 1
    assert upper_bound(7, 7) == 1.0
    # at the bound the binomial cdf of the count seen is alpha, summed here term by term
    for k, n in ((90, 100), (3, 20), (295, 299)):
        p = upper_bound(k, n)
        cdf = sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))
        assert cdf == pytest.approx(0.05, rel=1e-6)
    # the two-sided 95% figure tables give for 90 of 100 (0.9510) is the 97.5% one-sided
    assert upper_bound(90, 100, alpha=0.025) == pytest.approx(0.9510, abs=5e-4)
    assert upper_bound(90, 100) < upper_bound(90, 100, alpha=0.01)
    with pytest.raises(ValueError, match="at least one trial"):
        upper_bound(0, 0)
