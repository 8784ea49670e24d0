"""Peak figures per framework device: exact-name lookup, the unit, the user's override."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from parity.devices import specs
from parity.errors import UsageError
from parity.model.metrics import Flops
from parity.probes.flops import mfu


@pytest.fixture(autouse=True)
def _fresh_specs(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("PARITY_SPECS", raising=False)
    specs.load_specs.cache_clear()
    yield
    specs.load_specs.cache_clear()


def test_every_entry_states_its_unit_and_per_unit_peaks_with_a_source() -> None:
    for label, entry in specs.load_specs().items():
        assert entry.label == label
        assert entry.unit and entry.source and entry.source_url, label
        assert entry.date is not None and len(entry.date) == 10, label
        assert entry.units_per_chip >= 1, label
        assert set(entry.peak_flops) == set(entry.chip_peak_flops), label
        for dtype, chip in entry.chip_peak_flops.items():
            # the per-unit figure is the published chip figure spread over its units
            assert entry.peak_flops[dtype] * entry.units_per_chip == pytest.approx(
                chip, rel=1e-9
            ), (label, dtype)


def test_every_price_names_a_listed_device_its_option_and_its_source() -> None:
    devices = specs.load_specs()
    for label, price in specs.load_prices().items():
        assert price.device in devices, label
        assert price.usd_per_hour > 0 and (price.chips or 0) >= 1, label
        assert price.pricing in specs.PRICINGS and price.region, label
        assert price.source and price.source_url and price.date, label
        if not price.confirmed:
            assert price.source.startswith("unconfirmed"), label
    found = specs.price_for("Trainium1")
    assert found is not None and found.entry.instance == "trn1.32xlarge"
    # 16 chips of two NeuronCore-v2: the price per framework device is per core
    assert found.framework_devices == 32 and found.entry.confirmed


def test_a_malformed_user_entry_is_one_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "specs.toml"
    user.write_text('[devices.x]\nnames = "My Chip"\nunit = "GPU"\n')
    monkeypatch.setenv("PARITY_SPECS", str(user))
    with pytest.raises(UsageError, match=r"device spec 'x' in .* is malformed"):
        specs.load_specs()
    user.write_text('[prices.y]\ndevice = "h200-sxm"\nusd_per_hour = "cheap"\n')
    specs.load_prices.cache_clear()
    with pytest.raises(UsageError, match=r"price 'y' in .* is malformed"):
        specs.load_prices()
    specs.load_prices.cache_clear()


@pytest.mark.parametrize(
    ("name", "label", "unit", "per_chip"),
    [
        ("NVIDIA H200", "h200-sxm", "GPU", 1),
        ("NVIDIA H100 80GB HBM3", "h100-sxm", "GPU", 1),
        ("Trainium1", "trainium1", "NeuronCore-v2 (Trainium1 supports LNC=1 only)", 2),
        ("Trainium2", "trainium2", "logical NeuronCore (LNC=2: two physical NeuronCore-v3)", 4),
        ("Trainium3", "trainium3", "logical NeuronCore (LNC=2: two physical NeuronCore-v4)", 4),
    ],
)
def test_framework_unit_by_exact_name(name: str, label: str, unit: str, per_chip: int) -> None:
    assert specs.framework_unit(name) == specs.FrameworkUnit(
        label=label, unit=unit, units_per_chip=per_chip
    )


def test_trainium_peaks_are_per_logical_core_not_per_chip() -> None:
    trn2 = specs.peak_flops("Trainium2", "bf16")
    assert trn2 is not None and trn2.flops == pytest.approx(667e12 / 4)
    assert trn2.unit.startswith("logical NeuronCore")
    trn3 = specs.peak_flops("Trainium3", "fp32")
    assert trn3 is not None and trn3.flops == pytest.approx(183e12 / 4)
    h200 = specs.peak_flops("NVIDIA H200", "bf16")
    assert h200 is not None and h200.flops == pytest.approx(989.4e12) and h200.unit == "GPU"


def test_no_substring_matching() -> None:
    assert specs.framework_unit("NVIDIA H200 NVL") is None
    assert specs.peak_flops("H200", "bf16") is None
    assert specs.peak_flops("NVIDIA H200", "int8") is None


def test_mfu_records_the_unit_it_is_per() -> None:
    peak = specs.peak_flops("Trainium2", "bf16")
    counted = Flops(per_step=166.75e12 * 0.01, method="test")
    figure = mfu(counted, 0.01, peak)  # one hundredth of a second per step
    assert figure.mfu == pytest.approx(1.0) and figure.peak is not None
    assert figure.peak.unit == "logical NeuronCore (LNC=2: two physical NeuronCore-v3)"
    unknown = mfu(Flops(per_step=1000, method="test"), 0.01, None)
    assert unknown.mfu is None and unknown.peak is None
    assert unknown.achieved_flops == pytest.approx(1e5)


def test_user_specs_override_and_must_name_their_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "specs.toml"
    user.write_text(
        '[devices.trainium2]\nnames = ["Trainium2"]\nunit = "physical NeuronCore-v3 (LNC=1)"\n'
        "units_per_chip = 8\npeak_flops = { bf16 = 83.375e12 }\n"
    )
    monkeypatch.setenv("PARITY_SPECS", str(user))
    peak = specs.peak_flops("Trainium2", "bf16")
    assert peak is not None and peak.flops == pytest.approx(83.375e12)
    assert peak.unit == "physical NeuronCore-v3 (LNC=1)"
    user.write_text('[devices.mine]\nnames = ["My Chip"]\npeak_flops = { bf16 = 1e12 }\n')
    specs.load_specs.cache_clear()
    with pytest.raises(UsageError, match="has no `unit`"):
        specs.peak_flops("My Chip", "bf16")


TRN2 = specs.DeviceKey(names=("trn2", "neuron:0"))


@pytest.mark.parametrize(
    ("key", "label"),
    [
        # TorchNeuron: the device name says nothing, the properties name the instance type
        (specs.DeviceKey(names=("trn2", "neuron:0")), "trainium2"),
        (specs.DeviceKey(names=("trn2n", "neuron:0")), "trainium2"),
        (specs.DeviceKey(names=("trn2u", "neuron:0")), "trainium2-ultraserver"),
        (specs.DeviceKey(names=("trn3", "neuron:0")), "trainium3"),
        (specs.DeviceKey(names=("trn3u", "neuron:0")), "trainium3-ultraserver"),
        (specs.DeviceKey(names=("trn2", "neuron:0"), logical_nc_config=1), "trainium2-lnc1"),
        (
            specs.DeviceKey(names=("trn3u", "neuron:3"), logical_nc_config=1),
            "trainium3-ultraserver-lnc1",
        ),
        (specs.DeviceKey(names=("trn2", "neuron:0"), logical_nc_config=2), "trainium2"),
        # CUDA (and ROCm, whose name comes through torch.cuda the same way)
        (specs.DeviceKey(names=("NVIDIA H100 80GB HBM3",)), "h100-sxm"),
        (specs.DeviceKey(names=("NVIDIA H200",)), "h200-sxm"),
        # a PrivateUse1 device the table does not know: nothing, not a guess
        (specs.DeviceKey(names=("parity fake accelerator",)), None),
        (specs.DeviceKey(names=("neuron:0",)), None),
        (specs.DeviceKey(names=("AMD Instinct MI300X",)), None),
    ],
)
def test_one_rule_finds_every_device_by_its_names_and_logical_core_setting(
    key: specs.DeviceKey, label: str | None
) -> None:
    entry = specs.lookup(key)
    assert (entry.label if entry is not None else None) == label


def test_an_lnc_the_table_has_no_entry_for_gives_no_figure() -> None:
    assert specs.lookup(specs.DeviceKey(names=("trn2",), logical_nc_config=4)) is None
    assert specs.peak_flops(specs.DeviceKey(names=("trn2",), logical_nc_config=4), "bf16") is None


def test_per_core_peaks_and_memory_follow_the_logical_core_setting() -> None:
    lnc2 = specs.peak_flops(TRN2, "bf16")
    lnc1 = specs.peak_flops(specs.DeviceKey(names=TRN2.names, logical_nc_config=1), "bf16")
    assert lnc2 is not None and lnc1 is not None
    assert lnc2.flops == pytest.approx(667e12 / 4) and lnc1.flops == pytest.approx(667e12 / 8)
    assert "LNC=2" in lnc2.unit and "LNC=1" in lnc1.unit
    assert specs.device_memory(TRN2) is not None
    assert specs.device_memory(TRN2)[0] == 24 * 2**30  # type: ignore[index]
    trn3 = specs.device_memory(specs.DeviceKey(names=("trn3",), logical_nc_config=1))
    assert trn3 is not None and trn3[0] == 18 * 2**30


def test_a_trn2_price_is_shared_by_its_logical_cores_and_says_it_is_unconfirmed() -> None:
    found = specs.price_for(TRN2)
    assert found is not None and not found.entry.confirmed
    per_core = found.entry.usd_per_hour / found.framework_devices
    assert found.framework_devices == (found.entry.chips or 0) * 4
    lnc1 = specs.price_for(specs.DeviceKey(names=TRN2.names, logical_nc_config=1))
    assert lnc1 is not None
    # at LNC=1 the same instance holds twice the framework devices, each half the price
    assert lnc1.entry.usd_per_hour / lnc1.framework_devices == pytest.approx(per_core / 2)
    text = found.source_text()
    assert text.startswith("specs.toml on-demand, trn2.3xlarge, us-east-1, read 2026-")
    assert text.endswith("UNCONFIRMED (a third-party figure)")
    assert specs.price_for(specs.DeviceKey(names=("trn3",))) is None  # none could be read
    h100 = specs.price_for("NVIDIA H100 80GB HBM3")
    assert h100 is not None and h100.entry.pricing == "on-demand" and h100.entry.confirmed


def test_a_price_with_neither_chips_nor_accelerators_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "specs.toml"
    user.write_text('[prices.z]\ndevice = "h200-sxm"\nusd_per_hour = 3.0\n')
    monkeypatch.setenv("PARITY_SPECS", str(user))
    specs.load_prices.cache_clear()
    with pytest.raises(UsageError, match="must give `chips`"):
        specs.load_prices()
    user.write_text(
        '[prices.z]\ndevice = "h200-sxm"\nusd_per_hour = 3.0\nchips = 8\npricing = "spot"\n'
    )
    specs.load_prices.cache_clear()
    with pytest.raises(UsageError, match="pricing 'spot' is unknown"):
        specs.load_prices()
    specs.load_prices.cache_clear()
