"""The ``neuron`` adapter against TorchNeuron's API as released, and the one rule that
names a device in the spec table, for TorchNeuron, CUDA, ROCm and any PrivateUse1 device
(stub device modules shaped as each backend's: no accelerator here)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from parity.devices import get_device, specs
from parity.devices.base import Device
from parity.devices.neuron import ADAPTIVE_EAGER_OFF, FLAG_VARS, NeuronDevice
from parity.judge import decision
from parity.model.metrics import MemoryCounters
from parity.probes.environment import relevant_env
from tests.judge.synthetic import side_runs


@dataclass
class Props:
    name: str
    total_memory: int = 0


def stub(monkeypatch: pytest.MonkeyPatch, device: Device, **calls: Any) -> None:
    """Give ``device`` a device module of these calls (as ``torch.<type>`` would be)."""
    module = SimpleNamespace(**calls)
    monkeypatch.setattr(device, "module", lambda: module)


@pytest.fixture(autouse=True)
def _fresh_specs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PARITY_SPECS", raising=False)
    monkeypatch.delenv("NEURON_LOGICAL_NC_CONFIG", raising=False)
    specs.load_specs.cache_clear()
    specs.load_prices.cache_clear()


@pytest.mark.parametrize(
    ("kind", "device_name", "properties", "label", "unit"),
    [
        # TorchNeuron: "neuron:0" names nothing; the properties name the instance type
        ("neuron", "neuron:0", "trn2", "trainium2", "logical NeuronCore (LNC=2"),
        ("neuron", "neuron:3", "trn2u", "trainium2-ultraserver", "logical NeuronCore (LNC=2"),
        ("neuron", "neuron:0", "trn3", "trainium3", "logical NeuronCore (LNC=2"),
        # CUDA: the device name is the model, the properties say the same
        ("cuda", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", "h100-sxm", "GPU"),
        ("cuda", "NVIDIA H200", "NVIDIA H200", "h200-sxm", "GPU"),
        # ROCm (through torch.cuda) and a plugin's PrivateUse1 device the table lacks
        ("cuda", "AMD Instinct MI300X", "AMD Instinct MI300X", None, None),
        ("parityfake", "parity fake accelerator", "parity fake accelerator", None, None),
    ],
)
def test_one_rule_resolves_peaks_memory_and_prices_for_every_backend(
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    device_name: str,
    properties: str,
    label: str | None,
    unit: str | None,
) -> None:
    device = get_device(kind) if kind != "parityfake" else Device(kind)
    stub(
        monkeypatch,
        device,
        get_device_name=lambda i: device_name,
        get_device_properties=lambda i: Props(name=properties),
    )
    key = device.spec_key()
    assert key.names[-1] == device_name
    entry = specs.lookup(key)
    assert (entry.label if entry else None) == label
    peak = specs.peak_flops(key, "bf16")
    assert peak.unit.startswith(unit) if peak and unit else peak is None and unit is None
    if label is not None:
        assert specs.device_memory(key) is not None
    info = device.environment()
    assert info.name == device_name
    assert info.model == (properties if properties != device_name else None)
    assert specs.DeviceKey.of(info) == key  # the judge finds what the worker found


def test_the_lnc_setting_picks_the_per_core_peak(monkeypatch: pytest.MonkeyPatch) -> None:
    device = get_device("neuron")
    stub(
        monkeypatch,
        device,
        get_device_name=lambda i: "neuron:0",
        get_device_properties=lambda i: Props(name="trn2"),
    )
    lnc2 = specs.peak_flops(device.spec_key(), "bf16")
    monkeypatch.setenv("NEURON_LOGICAL_NC_CONFIG", "1")
    key = device.spec_key()
    assert key.logical_nc_config == 1 and device.environment().logical_nc_config == 1
    lnc1 = specs.peak_flops(key, "bf16")
    assert lnc2 is not None and lnc1 is not None
    assert lnc1.flops == pytest.approx(lnc2.flops / 2) and "LNC=1" in lnc1.unit
    monkeypatch.setenv("NEURON_LOGICAL_NC_CONFIG", "two")  # not a number: the default's entry
    assert device.spec_key().logical_nc_config is None


def test_settings_are_read_as_the_process_has_them_and_unset_is_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for var in FLAG_VARS.values():
        monkeypatch.delenv(var, raising=False)
    device = NeuronDevice("neuron")
    flags = device.flags()
    assert set(flags) == set(FLAG_VARS) and all(v is None for v in flags.values())
    # what TorchNeuron's import does to the environment is what the flags record
    monkeypatch.setenv("NEURON_LAUNCH_BLOCKING", "1")
    monkeypatch.setenv("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", "0")
    monkeypatch.setenv("COLLECTIVE_BUCKETSIZE_IN_MB", "512")
    flags = device.flags()
    assert flags["launch_blocking"] == "1"
    assert flags["compile_disable_fallback_execution"] == "0"
    assert flags["eager_fallback_only_for_unimplemented_ops"] is None
    assert flags["collective_bucketsize_mb"] == "512"
    env = relevant_env(
        {"COLLECTIVE_MIN_BUCKETS": "4", "COLLECTIVE_BUCKETSIZE_IN_MB": "512", "HOME": "/x"},
        device.environment_variables(),
    )
    assert env == {"COLLECTIVE_MIN_BUCKETS": "4", "COLLECTIVE_BUCKETSIZE_IN_MB": "512"}


def test_the_native_stack_is_recorded_not_the_xla_era_one() -> None:
    found = NeuronDevice("neuron").package_versions()
    for name in (
        "torch-neuronx",
        "neuronx-cc",
        "nki",
        "aws-neuronx-runtime-lib",
        "aws-neuronx-dkms",
    ):
        assert name in found
    assert "libneuronxla" not in found and "neuronx-distributed" not in found


def test_deterministic_says_it_turns_adaptive_eager_off() -> None:
    said = NeuronDevice("neuron").enable_determinism()
    assert said == [ADAPTIVE_EAGER_OFF] and "Adaptive Eager" in said[0]


@pytest.mark.parametrize(
    ("allocated", "reserved", "want"),
    [
        (100, 200, ("reported", "reported", "caching")),
        (100, 0, ("reported", "zero", "runtime")),  # the source copy: reserved always 0
        (100, None, ("reported", "absent", "allocated only")),
        (None, None, ("absent", "absent", "none")),
        (0, 0, ("reported", "reported", "caching")),  # nothing in use: zero is a figure
    ],
)
def test_memory_counters_say_what_was_reported_and_what_it_means(
    allocated: int | None, reserved: int | None, want: tuple[str, str, str]
) -> None:
    found = MemoryCounters.of(allocated, reserved)
    assert (found.allocated, found.reserved, found.meaning) == want


def test_a_reserved_counter_held_at_zero_is_not_recorded_as_a_figure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    device = NeuronDevice("neuron")
    stub(
        monkeypatch,
        device,
        synchronize=lambda: None,
        max_memory_allocated=lambda: 4096,
        max_memory_reserved=lambda: 0,
    )
    peaks = device.memory_peaks()
    assert peaks.allocated == 4096 and peaks.reserved is None
    assert peaks.counters is not None and peaks.counters.meaning == "runtime"


def test_a_launch_blocking_difference_is_a_configuration_change(tmp_path: Path) -> None:
    a = side_runs(tmp_path, "baseline", side="neuron", step_s=0.01, repeats=1).first
    b = side_runs(tmp_path, "target", side="neuron", step_s=0.01, repeats=1).first

    def blocking(bundle: Any, value: str | None) -> Any:
        env = bundle.manifest.environment
        device = replace(env.device, flags={**env.device.flags, "launch_blocking": value})
        manifest = replace(bundle.manifest, environment=replace(env, device=device))
        return replace(bundle, manifest=manifest)

    assert decision.flag_differences(blocking(a, "1"), blocking(b, "1")) == ()
    (row,) = decision.flag_differences(blocking(a, "0"), blocking(b, "1"))
    assert row.setting.startswith("NEURON_LAUNCH_BLOCKING") and (row.baseline, row.target) == (
        "0",
        "1",
    )
    assert row.setting in decision.MAY_DIFFER


def test_a_compile_mode_is_recorded_as_ignored_on_neuron() -> None:
    from parity.model.spec import parse_side
    from parity.runner.session import apply_settings

    on_neuron = apply_settings(
        parse_side("neuron+compile+compile-mode=max-autotune"), NeuronDevice("neuron"), None
    )
    assert (on_neuron.compile_mode, on_neuron.compile_mode_ignored) == ("default", "max-autotune")
    on_cpu = apply_settings(
        parse_side("cpu+compile+compile-mode=max-autotune"), get_device("cpu"), None
    )
    assert (on_cpu.compile_mode, on_cpu.compile_mode_ignored) == ("max-autotune", None)
