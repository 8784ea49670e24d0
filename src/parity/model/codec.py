"""One JSON codec for every typed contract: dataclasses to JSON and back, and their schemas.

``encode(obj)`` turns a frozen dataclass (and the lists, tuples, dicts, literals and
unions inside it) into plain JSON data, in field order. ``decode(cls, data)`` is strict:
an unknown key, a missing required key, a wrong type, a value outside a ``Literal`` or a
non-finite number is a ``DecodeError`` that names the key path (``$.speed.interval.low``).
``json_schema(cls)`` derives the JSON Schema from the same type hints, so the schema that
``parity schema`` prints cannot drift from what the code reads and writes.

Field options (``dataclasses.field(metadata=...)``, made by the helpers below):

- ``omit_none()``: the key is left out of the JSON when the value is None (sections that
  only some documents have), and may be absent when decoding;
- ``doc(text)``: a description for the schema.

``Json`` is raw JSON, for true boundaries only (a workload's own config, a user's
kwargs): it is checked to be finite JSON, nothing more.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from parity.errors import SpecError

Json = Union[None, bool, int, float, str, list["Json"], dict[str, "Json"]]  # noqa: UP007
JsonObject = dict[str, Json]
T = TypeVar("T")

OMIT = "parity.omit_none"
DOC = "parity.doc"


class DecodeError(ValueError):
    """A JSON value that does not fit its type; ``path`` is the key path inside the file."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def omit_none(*, doc: str | None = None) -> Any:
    """A field that defaults to None and is left out of the JSON while None."""
    meta: dict[str, object] = {OMIT: True}
    if doc:
        meta[DOC] = doc
    return dataclasses.field(default=None, metadata=meta)


def doc(text: str, default: Any = dataclasses.MISSING, **kwargs: Any) -> Any:
    """A field with a description for the schema (and an optional default)."""
    if default is not dataclasses.MISSING:
        kwargs["default"] = default
    return dataclasses.field(metadata={DOC: text}, **kwargs)


# -- encoding -------------------------------------------------------------------------------


def encode(value: object) -> Json:
    """Plain JSON data for a dataclass, list, tuple, dict or scalar (field order kept)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value} is not a finite number: JSON cannot hold it")
        return value
    hook = getattr(value, "__codec_encode__", None)
    if hook is not None and not isinstance(value, type):
        encoded: Json = hook()
        return encoded
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: JsonObject = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if item is None and f.metadata.get(OMIT):
                continue
            out[f.name] = encode(item)
        return out
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


def dumps(value: object, *, indent: int | None = 2) -> str:
    return json.dumps(encode(value), indent=indent, allow_nan=False)


def _no_constants(name: str) -> float:
    raise ValueError(f"{name} is not a finite number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def loads(text: str) -> Json:
    """Parse JSON strictly: NaN and Infinity, and duplicate keys, are errors."""
    value: Json = json.loads(text, parse_constant=_no_constants, object_pairs_hook=_unique_keys)
    return value


# -- decoding -------------------------------------------------------------------------------


@cache
def _hints(cls: type) -> dict[str, Any]:
    # the recursive ``Json`` alias refers to itself by name: resolve it here, not in the
    # module that uses it
    return typing.get_type_hints(cls, localns={"Json": Json, "JsonObject": JsonObject})


def _fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(cls)


def _describe(value: object) -> str:
    text = json.dumps(value, allow_nan=True) if _jsonable(value) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _jsonable(value: object) -> bool:
    return value is None or isinstance(value, bool | int | float | str | list | dict)


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


_JSON_MEMBERS = {type(None), bool, int, float, str, list, dict}


def _is_json(tp: Any) -> bool:
    """``Json`` itself (type hints rebuild the union, so compare its members)."""
    return _is_union(tp) and {get_origin(m) or m for m in get_args(tp)} == _JSON_MEMBERS


def decode(tp: type[T], data: object, path: str = "$") -> T:
    """``data`` (parsed JSON) as an instance of ``tp``; DecodeError names the key path."""
    value: T = _decode(tp, data, path)
    return value


def _decode(tp: Any, data: object, path: str) -> Any:
    if tp is Any or tp is object or _is_json(tp):
        return _check_json(data, path)
    if _is_union(tp):
        return _decode_union(tp, data, path)
    origin = get_origin(tp)
    if origin is Literal:
        if data in get_args(tp) and type(data) in {type(a) for a in get_args(tp)}:
            return data
        allowed = ", ".join(json.dumps(a) for a in get_args(tp))
        raise DecodeError(path, f"expected one of {allowed}, got {_describe(data)}")
    if origin in (list, tuple):
        if not isinstance(data, list):
            raise DecodeError(path, f"expected a list, got {_describe(data)}")
        args = get_args(tp)
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            if len(data) != len(args):
                raise DecodeError(path, f"expected a list of {len(args)} items")
            pairs = enumerate(zip(args, data, strict=True))
            return tuple(_decode(a, v, f"{path}[{i}]") for i, (a, v) in pairs)
        item = args[0] if args else Any
        items = [_decode(item, v, f"{path}[{i}]") for i, v in enumerate(data)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(data, dict):
            raise DecodeError(path, f"expected an object, got {_describe(data)}")
        _, vt = get_args(tp) or (str, Any)
        return {str(k): _decode(vt, v, f"{path}.{k}") for k, v in data.items()}
    if isinstance(origin, type) and dataclasses.is_dataclass(origin):  # ByRole[SideInfo]
        return _decode_dataclass(origin, data, path, _bindings(origin, get_args(tp)))
    if isinstance(tp, type) and hasattr(tp, "__codec_decode__"):
        return tp.__codec_decode__(data, path)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _decode_dataclass(tp, data, path)
    if tp is bool:
        if isinstance(data, bool):
            return data
        raise DecodeError(path, f"expected true or false, got {_describe(data)}")
    if tp is int:
        if isinstance(data, int) and not isinstance(data, bool):
            return data
        raise DecodeError(path, f"expected a whole number, got {_describe(data)}")
    if tp is float:
        if isinstance(data, int | float) and not isinstance(data, bool):
            if not math.isfinite(data):
                raise DecodeError(path, f"expected a finite number, got {data}")
            return float(data)
        raise DecodeError(path, f"expected a number, got {_describe(data)}")
    if tp is str:
        if isinstance(data, str):
            return data
        raise DecodeError(path, f"expected a string, got {_describe(data)}")
    if tp is type(None):
        if data is None:
            return None
        raise DecodeError(path, f"expected null, got {_describe(data)}")
    raise TypeError(f"{path}: the codec cannot decode type {tp!r}")


def _decode_union(tp: Any, data: object, path: str) -> Any:
    members = get_args(tp)
    if data is None and type(None) in members:
        return None
    rest = [m for m in members if m is not type(None)]
    if len(rest) == 1:
        return _decode(rest[0], data, path)
    tagged = _tagged(tuple(rest))
    if tagged is not None and isinstance(data, dict):
        key, by_tag = tagged
        tag = data.get(key)
        if tag not in by_tag:
            allowed = ", ".join(json.dumps(t) for t in by_tag)
            raise DecodeError(f"{path}.{key}", f"expected one of {allowed}, got {_describe(tag)}")
        return _decode(by_tag[tag], data, path)
    errors = []
    for member in rest:
        try:
            return _decode(member, data, path)
        except DecodeError as exc:
            errors.append(exc)
    raise errors[-1] if errors else DecodeError(path, "no type fits")


@cache
def _tagged(members: tuple[Any, ...]) -> tuple[str, dict[object, type]] | None:
    """A union of dataclasses told apart by one Literal field (``kind``): its name and map."""
    if not all(isinstance(m, type) and dataclasses.is_dataclass(m) for m in members):
        return None
    for key in ("kind", "mode", "check"):
        by_tag: dict[object, type] = {}
        for member in members:
            hint = _hints(member).get(key)
            if hint is None or get_origin(hint) is not Literal:
                break
            for tag in get_args(hint):
                by_tag[tag] = member
        else:
            return key, by_tag
    return None


def _bindings(cls: type, args: tuple[Any, ...]) -> dict[Any, Any]:
    return dict(zip(getattr(cls, "__parameters__", ()), args, strict=False))


def _bind(tp: Any, bindings: dict[Any, Any]) -> Any:
    """A field's type with the dataclass's type variables replaced (``T`` -> ``SideInfo``)."""
    if not bindings:
        return tp
    if isinstance(tp, TypeVar):
        return bindings.get(tp, Any)
    args = get_args(tp)
    if not args:
        return tp
    bound = tuple(_bind(a, bindings) for a in args)
    origin = get_origin(tp)
    if _is_union(tp):
        return Union[bound]  # noqa: UP007
    if origin is Literal:
        return tp
    return origin[bound] if origin is not None else tp


def _decode_dataclass(
    cls: type, data: object, path: str, bindings: dict[Any, Any] | None = None
) -> Any:
    if not isinstance(data, dict):
        raise DecodeError(path, f"expected an object, got {_describe(data)}")
    hints = {k: _bind(v, bindings or {}) for k, v in _hints(cls).items()}
    fields = {f.name: f for f in _fields(cls) if f.init}
    derived = {f.name for f in _fields(cls) if not f.init}
    unknown = [k for k in data if k not in fields and k not in derived]
    if unknown:
        known = ", ".join(fields)
        raise DecodeError(f"{path}.{unknown[0]}", f"is not a known key (known: {known})")
    kwargs: dict[str, Any] = {}
    for name, f in fields.items():
        if name in data:
            kwargs[name] = _decode(hints[name], data[name], f"{path}.{name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise DecodeError(f"{path}.{name}", "is missing")
    try:
        return cls(**kwargs)
    except (ValueError, TypeError, SpecError) as exc:  # __post_init__ validation
        raise DecodeError(path, str(exc)) from None


def _check_json(data: object, path: str) -> Json:
    if data is None or isinstance(data, bool | int | str):
        return data
    if isinstance(data, float):
        if not math.isfinite(data):
            raise DecodeError(path, f"expected a finite number, got {data}")
        return data
    if isinstance(data, list):
        return [_check_json(v, f"{path}[{i}]") for i, v in enumerate(data)]
    if isinstance(data, dict):
        return {str(k): _check_json(v, f"{path}.{k}") for k, v in data.items()}
    raise DecodeError(path, f"expected JSON data, got {type(data).__name__}")


# -- schemas --------------------------------------------------------------------------------

Schema = dict[str, Json]


def json_schema(tp: Any, *, title: str | None = None, description: str | None = None) -> Schema:
    """A JSON Schema (draft 2020-12) for a type, with shared definitions under ``$defs``."""
    defs: dict[str, Json] = {}
    root = _schema(tp, defs)
    out: Schema = dict(root) if isinstance(root, dict) else {}
    if title:
        out["title"] = title
    if description:
        out["description"] = description
    if defs:
        out["$defs"] = defs
    return out


def _schema(tp: Any, defs: dict[str, Json]) -> Schema:
    if tp is Any or tp is object or _is_json(tp):
        return {}
    if _is_union(tp):
        members = get_args(tp)
        return {"anyOf": [_schema(m, defs) for m in members]}
    origin = get_origin(tp)
    if origin is Literal:
        return {"enum": list(get_args(tp))}
    if origin in (list, tuple):
        args = get_args(tp)
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return {"type": "array", "prefixItems": [_schema(a, defs) for a in args]}
        return {"type": "array", "items": _schema(args[0], defs) if args else {}}
    if origin is dict:
        _, vt = get_args(tp) or (str, Any)
        return {"type": "object", "additionalProperties": _schema(vt, defs)}
    if isinstance(tp, type) and hasattr(tp, "__codec_schema__"):
        own: Schema = tp.__codec_schema__()
        return own
    if isinstance(origin, type) and dataclasses.is_dataclass(origin):
        name = origin.__name__ + "_" + "_".join(_type_name(a) for a in get_args(tp))
        if name not in defs:
            defs[name] = {}
            defs[name] = _dataclass_schema(origin, defs, _bindings(origin, get_args(tp)))
        return {"$ref": f"#/$defs/{name}"}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # recursion guard
            defs[name] = _dataclass_schema(tp, defs)
        return {"$ref": f"#/$defs/{name}"}
    simple: dict[Any, Schema] = {
        bool: {"type": "boolean"},
        int: {"type": "integer"},
        float: {"type": "number"},
        str: {"type": "string"},
        type(None): {"type": "null"},
    }
    if tp in simple:
        return dict(simple[tp])
    raise TypeError(f"no schema for type {tp!r}")


def _type_name(tp: Any) -> str:
    """A name for a type argument, for ``$defs`` (``ByRole_float_or_None``)."""
    if _is_union(tp):
        return "_or_".join(_type_name(a) for a in get_args(tp))
    if tp is type(None):
        return "None"
    origin = get_origin(tp)
    if origin is not None:
        return f"{getattr(origin, '__name__', origin)}_" + "_".join(
            _type_name(a) for a in get_args(tp)
        )
    return f"{getattr(tp, '__name__', tp)}"


def _dataclass_schema(
    cls: type, defs: dict[str, Json], bindings: dict[Any, Any] | None = None
) -> Schema:
    hints = {k: _bind(v, bindings or {}) for k, v in _hints(cls).items()}
    props: dict[str, Json] = {}
    required: list[Json] = []
    for f in _fields(cls):
        prop = _schema(hints[f.name], defs)
        if f.metadata.get(DOC):
            prop = {**prop, "description": str(f.metadata[DOC])}
        props[f.name] = prop
        if not f.metadata.get(OMIT):  # written always (a default only eases reading)
            required.append(f.name)
    out: Schema = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        out["required"] = required
    text = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
    if text and not text.startswith(cls.__name__ + "("):
        out["description"] = text
    return out


def replace(obj: T, **changes: Any) -> T:
    """``dataclasses.replace`` with a type that mypy keeps."""
    new: T = dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    return new


Encoder = Callable[[object], Json]
