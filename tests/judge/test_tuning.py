"""Tuning asymmetry, judged on typed side specs and resolved settings (no processes)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from parity.judge.tuning import judge_tuning
from parity.model.manifest import FlagValue, Resolved
from parity.model.roles import ByRole
from parity.model.spec import Precision, parse_side
from parity.report import words


def resolved(precision: Precision = "fp32", **changes: object) -> Resolved:
    values: dict[str, object] = dict(
        precision=precision,
        autocast_device_type=None if precision == "fp32" else "cpu",
        autocast_dtype=None if precision == "fp32" else "torch.bfloat16",
        matmul=precision,
        conv=precision,
        compile_backend=None,
        threads=2,
        deterministic=False,
    )
    values.update(changes)
    return Resolved(**values)  # type: ignore[arg-type]


NO_FLAGS: ByRole[Mapping[str, FlagValue]] = ByRole(baseline={}, target={})


def test_a_tuned_baseline_against_a_plain_target_is_labelled_and_names_compile_and_bf16() -> None:
    a, b = parse_side("cpu+compile+bf16"), parse_side("cpu")
    t = judge_tuning(
        ByRole(baseline=a, target=b),
        ByRole(baseline=resolved("bf16", compile_backend="inductor"), target=resolved()),
        NO_FLAGS,
        batch=8,
        intended=None,
    )
    assert t.asymmetric
    settings = {o.setting: o for o in t.optimisations}
    assert set(settings) == {"torch.compile", "reduced precision (autocast)"}
    assert all(
        o.side == "baseline" and "flatters the baseline" in words.bias(o) for o in settings.values()
    )
    assert t.label is not None
    label = words.says(t.label)
    assert label.startswith("baseline tuned, target first-run")
    assert "torch.compile" in label and "reduced precision" in label
    assert label.endswith("the ratio is not a hardware result")


def test_the_reverse_names_the_target_as_tuned() -> None:
    a, b = parse_side("cpu"), parse_side("cpu+compile+bf16")
    t = judge_tuning(
        ByRole(baseline=a, target=b),
        ByRole(baseline=resolved(), target=resolved("bf16", compile_backend="inductor")),
        NO_FLAGS,
        batch=8,
        intended=None,
    )
    assert t.label is not None and words.says(t.label).startswith(
        "target tuned, baseline first-run"
    )
    assert {o.side for o in t.optimisations} == {"target"}
    assert all("flatters the target" in words.bias(o) for o in t.optimisations)


def test_an_intended_asymmetry_is_listed_without_the_label() -> None:
    a, b = parse_side("cpu+bf16"), parse_side("cpu")
    t = judge_tuning(
        ByRole(baseline=a, target=b),
        ByRole(baseline=resolved("bf16"), target=resolved()),
        NO_FLAGS,
        batch=8,
        intended="vendor defaults on purpose",
    )
    assert t.asymmetric and t.label is None and t.intended == "vendor defaults on purpose"


def test_like_with_like_has_no_label() -> None:
    a = b = parse_side("cpu+bf16")
    t = judge_tuning(
        ByRole(baseline=a, target=b),
        ByRole(baseline=resolved("bf16"), target=resolved("bf16")),
        NO_FLAGS,
        batch=8,
        intended=None,
    )
    assert not t.asymmetric and t.label is None and t.optimisations == ()


def test_tf32_threads_processes_batch_per_device_and_device_flags() -> None:
    a, b = parse_side("cuda+nproc=2"), parse_side("cuda+threads=1")
    t = judge_tuning(
        ByRole(baseline=a, target=b),
        ByRole(baseline=resolved(matmul="tf32", threads=8), target=resolved(threads=1)),
        ByRole(baseline={"cudnn_benchmark": True}, target={"cudnn_benchmark": False}),
        batch=8,
        intended=None,
    )
    rows = {o.setting: o for o in t.optimisations}
    assert rows["matmul format (TF32)"].side == "baseline"
    assert rows["threads"].side == "baseline"
    assert rows["processes (nproc)"].side == "baseline"
    # the target's single process sees the whole batch: 8 per device against 4
    assert (rows["batch per device"].baseline, rows["batch per device"].target) == ("4", "8")
    assert rows["batch per device"].side == "target"
    assert rows["cuDNN autotuning (cudnn.benchmark)"].side == "baseline"
    assert t.label is not None and words.says(t.label).startswith("the sides are tuned differently")


def test_two_compile_backends_differ_with_neither_ahead() -> None:
    a, b = parse_side("cuda+compile"), parse_side("neuron+compile")
    t = judge_tuning(
        ByRole(baseline=a, target=b),
        ByRole(
            baseline=resolved(compile_backend="inductor"),
            target=resolved(compile_backend="neuron"),
        ),
        NO_FLAGS,
        batch=8,
        intended=None,
    )
    (row,) = t.optimisations
    assert row.setting == "compile backend" and row.side is None


def test_a_compile_mode_the_backend_ignored_is_not_credited() -> None:
    """``neuron+compile+compile-mode=max-autotune`` runs the default mode (the neuron
    backend ignores modes): against ``cuda+compile`` it is like with like; a CUDA side
    that did run max-autotune is the tuned one."""
    neuron = parse_side("neuron+compile+compile-mode=max-autotune")
    cuda = parse_side("cuda+compile")
    ignored = resolved(compile_backend="neuron", compile_mode="default")
    ignored = replace(ignored, compile_mode_ignored="max-autotune")
    t = judge_tuning(
        ByRole(baseline=cuda, target=neuron),
        ByRole(baseline=resolved(compile_backend="inductor"), target=ignored),
        NO_FLAGS,
        batch=8,
        intended=None,
    )
    assert "torch.compile mode" not in {o.setting for o in t.optimisations}
    tuned = judge_tuning(
        ByRole(baseline=parse_side("cuda+compile+compile-mode=max-autotune"), target=neuron),
        ByRole(
            baseline=resolved(compile_backend="inductor", compile_mode="max-autotune"),
            target=ignored,
        ),
        NO_FLAGS,
        batch=8,
        intended=None,
    )
    (row,) = [o for o in tuned.optimisations if o.setting == "torch.compile mode"]
    assert (row.baseline, row.target, row.side) == ("max-autotune", "default", "baseline")


def test_a_deterministic_neuron_side_names_the_fusion_it_lost() -> None:
    from parity.devices.neuron import ADAPTIVE_EAGER_OFF

    det = replace(resolved(), deterministic=True, determinism=(ADAPTIVE_EAGER_OFF,))
    t = judge_tuning(
        ByRole(baseline=parse_side("cuda"), target=parse_side("neuron+deterministic")),
        ByRole(baseline=resolved(), target=det),
        NO_FLAGS,
        batch=8,
        intended=None,
    )
    (row,) = t.optimisations
    assert "Adaptive Eager op fusion" in words.setting(row.setting) and row.side == "baseline"
    assert t.label is not None and "Adaptive Eager op fusion" in words.says(t.label)
