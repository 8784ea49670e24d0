"""The codec: round trips, strict decoding with key paths, and schemas from the types."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Literal

import jsonschema
import pytest

from parity.model.codec import (
    DecodeError,
    Json,
    decode,
    encode,
    json_schema,
    loads,
    omit_none,
)
from parity.model.spec import SideSpec, WorkloadSpec, parse_side
from parity.model.verdict import ByRole


@dataclass(frozen=True, kw_only=True, slots=True)
class Inner:
    x: float
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class A:
    kind: Literal["a"] = "a"
    n: int


@dataclass(frozen=True, kw_only=True, slots=True)
class B:
    kind: Literal["b"] = "b"
    s: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Outer:
    name: str
    inner: Inner
    items: list[Inner] = field(default_factory=list)
    by_name: dict[str, int] = field(default_factory=dict)
    maybe: float | None = None
    hidden: str | None = omit_none()
    either: A | B | None = None
    raw: Json = None
    pair: ByRole[int] | None = None
    side: SideSpec | None = None
    derived: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "derived", len(self.items))


def sample() -> Outer:
    return Outer(
        name="x",
        inner=Inner(x=1.5, tags=("a", "b")),
        items=[Inner(x=2.0)],
        by_name={"k": 3},
        either=B(s="hi"),
        raw={"free": [1, "two", None]},
        pair=ByRole(baseline=1, target=2),
        side=parse_side("cpu+bf16+threads=2"),
    )


def test_round_trip_keeps_every_field_and_the_order() -> None:
    obj = sample()
    data = encode(obj)
    assert isinstance(data, dict)
    assert list(data)[:3] == ["name", "inner", "items"]
    assert "hidden" not in data  # omitted while None
    assert data["maybe"] is None  # written as null otherwise
    assert data["derived"] == 1
    assert data["side"]["spec"] == "cpu+bf16+threads=2"  # type: ignore[index,call-overload]
    back = decode(Outer, json.loads(json.dumps(data)))
    assert back == obj


@pytest.mark.parametrize(
    ("mutate", "path", "words"),
    [
        (lambda d: d.update(extra=1), "$.extra", "not a known key"),
        (lambda d: d.pop("name"), "$.name", "missing"),
        (lambda d: d["inner"].update(x="1"), "$.inner.x", "expected a number"),
        (lambda d: d["inner"].update(x=True), "$.inner.x", "expected a number"),
        (lambda d: d["inner"].update(x=math.nan), "$.inner.x", "finite"),
        (lambda d: d["items"][0].update(tags=[1]), "$.items[0].tags[0]", "expected a string"),
        (lambda d: d["by_name"].update(k=1.5), "$.by_name.k", "whole number"),
        (lambda d: d.update(either={"kind": "c"}), "$.either.kind", "expected one of"),
        (lambda d: d.update(either={"kind": "a", "n": "x"}), "$.either.n", "whole number"),
        (lambda d: d.update(raw={"x": math.inf}), "$.raw.x", "finite"),
        (lambda d: d.update(pair={"baseline": 1}), "$.pair.target", "missing"),
        (lambda d: d.update(side={"spec": "cpu+bf16"}), "$.side.device", "missing"),
        (lambda d: d.update(side="cpu+bf16"), "$.side", "expected an object"),
        (
            lambda d: d.update(side={"device": "cpu", "precision": "bf17"}),
            "$.side.precision",
            "expected one of",
        ),
        (lambda d: d.update(side={"device": "cpu", "fsdp": True}), "$.side", "add nproc"),
    ],
)
def test_decoding_is_strict_and_names_the_key_path(mutate, path: str, words: str) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(json.dumps(encode(sample())))
    mutate(data)
    with pytest.raises(DecodeError) as info:
        decode(Outer, data)
    assert info.value.path == path
    assert words in str(info.value)


def test_validation_in_post_init_is_a_decode_error() -> None:
    @dataclass(frozen=True, kw_only=True)
    class Positive:
        n: int

        def __post_init__(self) -> None:
            if self.n < 1:
                raise ValueError("n must be at least 1")

    with pytest.raises(DecodeError, match=r"\$: n must be at least 1"):
        decode(Positive, {"n": 0})


def test_loads_refuses_nan_and_duplicate_keys() -> None:
    with pytest.raises(ValueError, match="finite"):
        loads('{"a": NaN}')
    with pytest.raises(ValueError, match="duplicate key 'a'"):
        loads('{"a": 1, "a": 2}')
    assert loads('{"a": [1.5, null]}') == {"a": [1.5, None]}


def test_encoding_refuses_non_finite_numbers() -> None:
    with pytest.raises(ValueError, match="finite"):
        encode(Inner(x=math.inf))


def test_the_schema_accepts_what_is_encoded_and_refuses_what_decoding_refuses() -> None:
    schema = json_schema(Outer)
    jsonschema.Draft202012Validator.check_schema(schema)
    good = encode(sample())
    jsonschema.validate(good, schema)
    bad = dict(good)  # type: ignore[arg-type]
    bad["extra"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    assert "hidden" not in schema["$defs"]["Outer"]["required"]  # type: ignore[index,call-overload,operator]


def test_specs_round_trip() -> None:
    spec = WorkloadSpec(name="gpt-train", size="small", steps=5, overrides=(("n_layers", "2"),))
    assert decode(WorkloadSpec, encode(spec)) == spec
    side = parse_side("cuda:1+bf16+compile=inductor")
    assert decode(SideSpec, encode(side)) == side
    # the string is written for readers; the fields are decoded, never the string parsed
    data = encode(parse_side("cpu+fp16"))
    assert isinstance(data, dict) and data["spec"] == "cpu+fp16"
    assert decode(SideSpec, {**data, "spec": "anything"}) == parse_side("cpu+fp16")


def test_dataclasses_without_hooks_fail_loudly_for_unknown_types() -> None:
    @dataclass
    class Odd:
        x: complex

    with pytest.raises(TypeError, match="cannot decode"):
        decode(Odd, {"x": 1})
    assert dataclasses.is_dataclass(Odd)


def test_generic_instantiations_get_their_own_schemas() -> None:
    @dataclass(frozen=True, kw_only=True)
    class Two:
        a: ByRole[int]
        b: ByRole[str | None]

    schema = json_schema(Two)
    defs = schema["$defs"]
    assert isinstance(defs, dict) and {"ByRole_int", "ByRole_str_or_None"} <= set(defs)
    jsonschema.validate(
        {"a": {"baseline": 1, "target": 2}, "b": {"baseline": None, "target": "x"}}, schema
    )
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            {"a": {"baseline": "x", "target": 2}, "b": {"baseline": None, "target": "x"}}, schema
        )
