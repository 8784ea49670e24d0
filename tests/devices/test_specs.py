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


def test_every_price_names_a_listed_device_and_its_source() -> None:
    devices = specs.load_specs()
    for label, price in specs.load_prices().items():
        assert price.device in devices, label
        assert price.usd_per_hour > 0 and price.accelerators >= 1, label
        assert price.source and price.date, label
    found = specs.price_for("Trainium1")
    assert found is not None and found.instance == "trn1.32xlarge"


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
