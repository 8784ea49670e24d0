from __future__ import annotations

import pytest

from parity.devices.names import check_device_name
from parity.errors import SpecError
from parity.model.codec import decode, encode
from parity.model.spec import SideSpec, WorkloadSpec, parse_side


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cpu", SideSpec(device="cpu")),
        ("cuda:1", SideSpec(device="cuda", index=1)),
        (
            "neuron+bf16+compile=neuron",
            SideSpec(device="neuron", precision="bf16", compile=True, compile_backend="neuron"),
        ),
        ("cpu+compile", SideSpec(device="cpu", compile=True)),
        ("cpu+threads=1", SideSpec(device="cpu", threads=1)),
        ("cpu+fp16+deterministic", SideSpec(device="cpu", precision="fp16", deterministic=True)),
        ("cpu+emulate=matmul-bf16", SideSpec(device="cpu", emulate="matmul-bf16")),
        (" cpu+fp32 ", SideSpec(device="cpu")),
    ],
)
def test_parse_valid(text: str, expected: SideSpec) -> None:
    assert parse_side(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "cpu",
        "cuda:1+bf16",
        "neuron+bf16+compile=neuron",
        "cpu+threads=2+deterministic+emulate=matmul-tf32",
    ],
)
def test_round_trip(text: str) -> None:
    spec = parse_side(text)
    assert str(spec) == text
    assert decode(SideSpec, encode(spec)) == spec


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty side spec"),
        ("CUDA", "malformed device"),
        ("cuda:x", "malformed device"),
        ("cpu+bf32", "unknown option 'bf32'"),
        ("cpu+threads=0", "threads=0 must be at least 1"),
        ("cpu+threads=two", "threads needs a whole number"),
        ("cpu+bf16+fp16", "given twice"),
        ("cpu+emulate", "emulate needs a profile"),
        ("cpu+emulate=int4", "emulate=int4 is unknown"),
        ("cpu+deterministic=yes", "unknown option"),
        ("cpu++bf16", "unknown option ''"),
    ],
)
def test_parse_errors_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message.replace("(", r"\(")) as info:
        parse_side(text)
    assert "\n" not in str(info.value)


def test_unknown_device_lists_valid_ones() -> None:
    assert parse_side("tpuv9").device == "tpuv9"  # parsed as written; the request checks it
    with pytest.raises(SpecError) as info:
        check_device_name("tpuv9", "tpuv9")
    for name in ("cpu", "cuda", "neuron"):
        assert name in str(info.value)
    with pytest.raises(SpecError, match="unknown device 'gpu'"):
        check_device_name("gpu", "gpu")


def test_config_differences() -> None:
    a, b = parse_side("cpu"), parse_side("cpu+bf16+threads=1")
    assert a.config_differences(b) == [("precision", "fp32", "bf16"), ("threads", "default", "1")]


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        ({"size": "huge"}, "size 'huge' is unknown"),
        ({"steps": 0}, "--steps must be at least 1"),
        ({"batch_size": -1}, "--batch-size must be at least 1"),
        ({"seed": -3}, "--seed must be 0 or more"),
    ],
)
def test_workload_spec_errors(knobs: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        WorkloadSpec(name="mlp-train", **knobs)  # type: ignore[arg-type]


def test_autocast_and_compile_mode_options_round_trip_and_refuse_what_cannot_run() -> None:
    side = parse_side("cpu+bf16+autocast=cuda")
    assert side.autocast == "cuda" and str(side) == "cpu+bf16+autocast=cuda"
    assert parse_side(str(side)) == side and side.fields()["autocast"] == "cuda"
    assert "autocast" not in parse_side("cpu+bf16").fields()
    mode = parse_side("neuron+compile+compile-mode=max-autotune")
    assert mode.compile_mode == "max-autotune" and parse_side(str(mode)) == mode
    for bad, says in (
        ("cuda+bf16+autocast=cuda", "needs device cpu and a reduced precision"),
        ("cpu+autocast=cuda", "needs device cpu and a reduced precision"),
        ("cpu+bf16+autocast=cpu", "autocast=cpu is unknown"),
        ("cpu+bf16+autocast", "autocast needs a policy"),
        ("cuda+compile-mode=max-autotune", r"needs \+compile"),
        ("cuda+compile+compile-mode=fastest", r"needs \+compile and one of"),
    ):
        with pytest.raises(SpecError, match=says):
            parse_side(bad)


def test_a_side_spec_is_parsed_once_per_command() -> None:
    """The command line's early refusal and the option table read one typed side; a bad
    spec is refused each time it is given (errors are not kept)."""
    from parity.cli import early_refusal
    from parity.request.options import Given

    parse_side.cache_clear()
    assert early_refusal(["compare", "mlp-train", "--target", "cpu:0+bf16"]) is None
    given = Given.read("compare", {"target": "cpu:0+bf16"}, "cli")
    assert parse_side.cache_info().misses == 1
    assert given.values["target"] is parse_side("cpu:0+bf16")
    for _ in range(2):
        refused = early_refusal(["compare", "--target", "cpu+bf17"])
        assert refused is not None and "bf17" in refused
