"""``InputPipeline``: figures derived from raw samples, the input-bound rule, pooling and
the strict codec."""

from __future__ import annotations

from dataclasses import replace

import pytest

from parity.model.codec import decode, encode
from parity.model.metrics import INPUT_BOUND_SHARE, InputPipeline


def pipeline(
    wait: float, copy: float | None, compute: float, prefetched: float | None = None, n: int = 8
) -> InputPipeline:
    """``n`` steps with a little spread around the given figures (seconds)."""
    jitter = [1 + 0.01 * (i % 3) for i in range(n)]
    step = [(wait + (copy or 0) + compute) * j for j in jitter]
    return InputPipeline(
        source="loader" if copy is not None else "script",
        method="test",
        wait_samples_s=tuple(wait * j for j in jitter),
        copy_samples_s=None if copy is None else tuple(copy * j for j in jitter),
        step_samples_s=tuple(step),
        prefetched_samples_s=None if prefetched is None else tuple(prefetched * j for j in jitter),
    )


def test_a_loader_that_sleeps_makes_the_side_input_bound() -> None:
    p = pipeline(wait=0.030, copy=0.001, compute=0.005, prefetched=0.005)
    assert p.input_bound and p.input_share == pytest.approx(31 / 36)
    assert p.wait_s == pytest.approx(0.0303) and p.steps == 8
    assert p.prefetch_saving is not None and p.prefetch_saving > 0.8 and p.beyond_noise
    assert p.reason.startswith("input-bound: 86% of the steady step is waiting for and copying")


def test_prefetched_inputs_are_not_input_bound() -> None:
    p = pipeline(wait=0.0001, copy=0.0, compute=0.010, prefetched=0.010)
    assert not p.input_bound and p.input_share < 0.02
    assert p.prefetch_saving == pytest.approx(0.0099, abs=1e-3)
    assert p.reason.startswith("not input-bound: 1% of the steady step")


def test_a_step_slowed_by_its_loader_without_waiting_is_input_bound() -> None:
    # loader workers competing for the host's cores: no wait, but a slower step
    p = pipeline(wait=0.0, copy=0.0, compute=0.010, prefetched=0.006)
    assert p.input_share == 0 and p.input_bound
    assert p.reason.startswith("input-bound: the step with inputs prefetched on the device")
    # the same saving inside the noise is not enough
    noisy = InputPipeline(
        source="loader",
        method="test",
        wait_samples_s=(0.0,) * 4,
        copy_samples_s=(0.0,) * 4,
        step_samples_s=(0.006, 0.012, 0.013, 0.020),
        prefetched_samples_s=(0.004, 0.006, 0.013, 0.014),
    )
    assert noisy.prefetch_saving is not None and noisy.prefetch_saving > INPUT_BOUND_SHARE
    assert noisy.beyond_noise is False and not noisy.input_bound


def bracketed(prefetched: tuple[float, ...], after: tuple[float, ...] | None) -> InputPipeline:
    """Five loader-fed steps of about 13 ms, then the prefetched pass and the steps after it."""
    return InputPipeline(
        source="loader",
        method="test",
        wait_samples_s=(0.0002,) * 5,
        copy_samples_s=(0.0,) * 5,
        step_samples_s=(0.013, 0.012, 0.014, 0.013, 0.012),
        prefetched_samples_s=prefetched,
        after_samples_s=after,
    )


def test_a_machine_that_got_faster_after_the_steps_is_not_a_loader_slowing_them() -> None:
    # the steps ran while another job loaded the machine; the prefetched pass and the
    # loader-fed steps after it ran once it had ended: the pass saves nothing against them
    drifted = bracketed((0.0100, 0.0101, 0.0099), (0.0101, 0.0102, 0.0100))
    assert drifted.prefetch_saving is not None and drifted.prefetch_saving < 0.05
    assert drifted.beyond_noise is False and not drifted.input_bound
    assert drifted.after_s == pytest.approx(0.0101)
    # without the bracket the same steps read as a loader slowing the step
    plain = bracketed((0.0100, 0.0101, 0.0099), None)
    assert plain.input_bound and plain.after_s is None
    # a loader that does slow the step slows the steps after the pass as much
    slowed = bracketed((0.0080, 0.0081, 0.0079), (0.0125, 0.0131, 0.0128))
    assert slowed.input_bound and slowed.beyond_noise
    assert slowed.prefetch_saving == pytest.approx(1 - 0.0080 / 0.0128)  # the smaller
    # the codec keeps the bracket; pooling concatenates it
    assert decode(InputPipeline, encode(slowed)) == slowed
    pooled = InputPipeline.pooled((slowed, drifted))
    assert pooled is not None and pooled.after_samples_s is not None
    assert len(pooled.after_samples_s) == 6


def test_script_mode_decides_on_the_wait_alone() -> None:
    p = pipeline(wait=0.004, copy=None, compute=0.006)
    assert p.copy_s is None and p.prefetched_s is None and p.prefetch_saving is None
    assert p.input_bound and "waiting for inputs" in p.reason


def test_pooling_concatenates_repeats_and_keeps_only_parts_every_repeat_has() -> None:
    a = pipeline(wait=0.030, copy=0.001, compute=0.005, prefetched=0.005, n=4)
    b = pipeline(wait=0.030, copy=0.001, compute=0.005, prefetched=None, n=6)
    pooled = InputPipeline.pooled((a, b))
    assert pooled is not None and pooled.steps == 10 and pooled.prefetched_samples_s is None
    assert pooled.input_bound and InputPipeline.pooled(()) is None


def test_samples_that_do_not_line_up_are_refused() -> None:
    with pytest.raises(ValueError, match="one wait, copy and step per steady step"):
        InputPipeline(
            source="loader",
            method="x",
            wait_samples_s=(0.1,),
            copy_samples_s=(0.1, 0.2),
            step_samples_s=(0.3,),
        )


def test_round_trip_keeps_derived_figures() -> None:
    p = pipeline(wait=0.02, copy=0.001, compute=0.01, prefetched=0.01)
    data = encode(p)
    assert isinstance(data, dict) and data["input_bound"] is True and "reason" in data
    assert decode(InputPipeline, data) == p


def test_a_loader_that_does_nothing_beside_the_step_is_judged_on_its_wait_and_copy() -> None:
    # a saving beyond noise, bracketed, but the loader has no workers: nothing of it ran
    # during the step, so the faster pass is cache and machine, not the loader
    kept = replace(bracketed((0.0080, 0.0081, 0.0079), (0.0125, 0.0131, 0.0128)), background=False)
    assert kept.beyond_noise and not kept.input_bound
    assert kept.reason.startswith("not input-bound")
    assert replace(kept, background=True).input_bound
    assert replace(kept, background=None).input_bound  # unknown: the saving decides
    pooled = InputPipeline.pooled((kept, kept))
    assert pooled is not None and pooled.background is False
