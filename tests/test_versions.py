"""Package names and version pins: PEP 503 names, and PEP 440 pins checked against
``packaging`` itself (which the dev environment has; parity does not depend on it)."""

from __future__ import annotations

import itertools

import pytest

from parity.errors import OptionError
from parity.versions import Version, normalise, parse_pin, split_requirement

VERSIONS = [
    "0.9",
    "1",
    "1.0",
    "1.0.0",
    "1.0.0.0",
    "v1.0",
    "1.0+cpu",
    "1.0+local.7",
    "1.0+local.abc",
    "1.0.post1",
    "1.0-1",
    "1.0rc1",
    "1.0.c1",
    "1.0a",
    "1.0.preview2",
    "1.0.dev0",
    "1.0a1.dev2",
    "1.0.post1.dev3",
    "1.1",
    "1.1.0+cu128",
    "1!1.0",
    "2.9",
    "2.13.0",
    "2.13.0+cpu",
    "2.13.1",
    "2.14.0rc1",
    "2.14.0",
    "3.0",
    "unknown",
]
PINS = [
    "==1.0",
    "==1",
    "==1.0.0.0",
    "==1.0.*",
    "==1!1.*",
    "==1.0+cpu",
    "!=1.0",
    "!=1.*",
    ">=1.0",
    ">=1.0rc1",
    "<=1.0",
    "<=1.0.post1",
    "<1.0",
    "<1.1",
    "<1.0.post1",
    "<1.0rc2",
    ">1",
    ">1.0",
    ">1.0rc1",
    ">1.0.post0",
    ">1.0.dev0",
    "~=1.0",
    "~=2.13.0",
    "~=1!1.0",
    ">=2.9,<2.14",
    "==2.13.*",
    ">=0.9,!=1.0.*",
    "===1.0",
    "===unknown",
]


def test_names_are_normalised_as_pep_503_says() -> None:
    assert normalise("Typing_Extensions") == "typing-extensions"
    assert normalise("torch.neuronx") == normalise("torch__neuronx") == "torch-neuronx"


def test_versions_order_as_pep_440_orders_them() -> None:
    ordered = ["1.0.dev0", "1.0a1.dev2", "1.0a1", "1.0rc1", "1.0", "1.0+cpu", "1.0.post1", "1.1"]
    keys = [Version.parse(v).key() for v in ordered]  # type: ignore[union-attr]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert Version.parse("1.0") == Version.parse("v1.0") and Version.parse("unknown") is None


def test_pins_admit_what_packaging_admits() -> None:
    packaging = pytest.importorskip("packaging")
    from packaging.specifiers import SpecifierSet

    if int(packaging.__version__.split(".")[0]) < 26:
        pytest.skip("packaging 26 reads <V and >V as parity does")
    wrong = []
    for spec, version in itertools.product(PINS, VERSIONS):
        want = SpecifierSet(spec).contains(version, prereleases=True)
        if parse_pin("x", spec).admits(version) != want:
            wrong.append(f"{spec} {version}: packaging says {want}")
    assert wrong == []


def test_a_bare_version_is_an_exact_pin_and_names_are_normalised() -> None:
    pin = parse_pin("Torch", "2.13.0")
    assert pin.package == "torch" and pin.text == "==2.13.0"
    assert pin.admits("2.13.0+cpu") and not pin.admits("2.13.1")
    assert parse_pin("numpy", ">=1.24, <3").text == ">=1.24,<3"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "is not a version pin"),
        ("latest", "is not a version pin"),
        ("==two", "is not a PEP 440 version"),
        (">=2.*", "wildcard goes only with == or !="),
        ("==2.0rc1.*", "wildcard follows release numbers only"),
        (">=2.0+cpu", "local label"),
        ("~=2", "two release numbers"),
        (">=1.0,", "is not a version pin"),
    ],
)
def test_bad_pins_name_the_package_and_the_fix(spec: str, message: str) -> None:
    with pytest.raises(OptionError, match=rf"pin torch: .*{message}"):
        parse_pin("torch", spec)


def test_bad_names_and_requirements() -> None:
    with pytest.raises(OptionError, match="is not a package name"):
        parse_pin("-torch", "==1")
    assert split_requirement("torch==2.13.*") == ("torch", "==2.13.*")
    assert split_requirement(" numpy >=1.24,<3") == ("numpy", ">=1.24,<3")
    with pytest.raises(OptionError, match="names no version"):
        split_requirement("torch")
