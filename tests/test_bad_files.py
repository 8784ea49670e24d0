"""Bad files, table-driven: a stored ``request.json`` (``--resume``), bundles (``diff``,
``report``) and output directories, each answered with exit code 2 and one line naming
the problem and the fix, and nothing written.

The ``request.json`` cases run with the API stubbed (the request is read and checked
before the API is called); the others need the real API (``REAL_API``), which refuses
them before anything runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from parity.bundle import write_json
from parity.request import CompareRequest
from tests.fixtures.cli import refuses
from tests.judge.synthetic import side_dir
from tests.test_bad_input import C, Setup, T, dirs, files, nothing


def stored_request(edit: Callable[[dict[str, object]], object] | str) -> Setup:
    """``run/request.json`` of a valid comparison, edited (or replaced by raw text)."""

    def setup(root: Path) -> None:
        (root / "run").mkdir()
        if isinstance(edit, str):
            (root / "run" / "request.json").write_text(edit)
            return
        CompareRequest.from_kwargs(workload="mlp-train", target="cpu+bf16").save(root / "run")
        data = json.loads((root / "run" / "request.json").read_text())
        edit(data)
        write_json(root / "run" / "request.json", data)

    return setup


def at(path: str, value: object) -> Callable[[dict[str, object]], None]:
    def edit(data: dict[str, object]) -> None:
        *parents, last = path.split(".")
        node: object = data
        for key in parents:
            assert isinstance(node, dict)
            node = node[key]
        assert isinstance(node, dict)
        node[last] = value

    return edit


FILE_CASES: list[tuple[str, list[str], Setup, str]] = [
    ("resume empty dir", ["compare", "--resume", "run"], dirs("run"), "holds no request.json"),
    ("resume nowhere", ["compare", "--resume", "nowhere"], nothing, "holds no request.json"),
    ("resume a file", ["compare", "--resume", "f"], files(f="x"), "holds no request.json"),
    ("request not json", ["compare", "--resume", "run"], stored_request("{nope"), "not a valid"),
    (
        "request truncated",
        ["compare", "--resume", "run"],
        stored_request('{"workload": {'),
        "valid",
    ),
    ("request a list", ["compare", "--resume", "run"], stored_request("[]"), "not a valid request"),
    ("request null", ["compare", "--resume", "run"], stored_request("null"), "not a valid request"),
    ("request empty", ["compare", "--resume", "run"], stored_request("{}"), "not a valid request"),
    ("request nan", ["compare", "--resume", "run"], stored_request('{"x": NaN}'), "not a valid"),
    ("request deep", ["compare", "--resume", "run"], stored_request("[" * 100_000), "too deeply"),
    (
        "request duplicate key",
        ["compare", "--resume", "run"],
        stored_request('{"a":1,"a":2}'),
        "duplicate",
    ),
    (
        "request unknown key",
        ["compare", "--resume", "run"],
        stored_request(at("colour", 1)),
        "colour",
    ),
    (
        "request wrong type",
        ["compare", "--resume", "run"],
        stored_request(at("workload.steps", "x")),
        "steps",
    ),
    (
        "request bad side",
        ["compare", "--resume", "run"],
        stored_request(at("target.device", "tpu9")),
        "unknown device 'tpu9'",
    ),
    (
        "request side as a string",
        ["compare", "--resume", "run"],
        stored_request(at("target", "cpu+bf16")),
        "$.target: expected an object",
    ),
    (
        "request huge steps",
        ["compare", "--resume", "run"],
        stored_request(at("workload.steps", 10**9)),
        "--steps must be at most",
    ),
    (
        "request zero timeout",
        ["compare", "--resume", "run"],
        stored_request(at("measure.timeout_s", 0)),
        "timeout",
    ),
    (
        "request bad precision",
        ["compare", "--resume", "run"],
        stored_request(at("measure.precision", 5)),
        "precision",
    ),
    (
        "request bad literal",
        ["compare", "--resume", "run"],
        stored_request(at("target.precision", "fp8")),
        "precision",
    ),
    (
        "request bad size",
        ["compare", "--resume", "run"],
        stored_request(at("workload.size", "huge")),
        "huge",
    ),
    (
        "request negative batch",
        ["compare", "--resume", "run"],
        stored_request(at("batch_sizes", [-1])),
        "--batch-sizes",
    ),
    (
        "resume with other options",
        ["compare", "--resume", "run", "--steps", "7"],
        stored_request(at("out", None)),
        "drop the other options",
    ),
]

#: cases the real API refuses before anything runs (bundles, output directories)
REAL_API = {"output not empty", "diff missing", "diff not a bundle", "corrupt manifest"}
REAL_API |= {"truncated metrics", "newer schema", "bad status", "pickle in a bundle"}
REAL_API |= {"garbage safetensors", "stray file in a side", "mismatched workloads"}
REAL_API |= {"report of nothing", "reference of another workload", "data missing", "data unused"}


def good_sides(root: Path) -> None:
    side_dir(root, "a", side="cpu", step_s=0.01, repeats=1)
    side_dir(root, "b", side="cpu+bf16", step_s=0.01, repeats=1)


def damaged(edit: Callable[[Path], object]) -> Setup:
    def setup(root: Path) -> None:
        good_sides(root)
        edit(root / "b" / "r00")

    return setup


def manifest_edit(key: str, value: object) -> Callable[[Path], None]:
    def edit(bundle: Path) -> None:
        data = json.loads((bundle / "manifest.json").read_text())
        data[key] = value
        write_json(bundle / "manifest.json", data)

    return edit


def other_seed(root: Path) -> None:
    side_dir(root, "a", side="cpu", step_s=0.01, repeats=1)
    side_dir(root, "b", side="cpu", step_s=0.01, repeats=1, parts={"seed": 7})


FILE_CASES += [
    ("output not empty", [*C, T, "cpu", "--out", "full"], files(full__x="x"), "not empty"),
    ("diff missing", ["diff", "nowhere", "b"], good_sides, "does not exist"),
    (
        "diff not a bundle",
        ["diff", "plain", "b"],
        lambda r: (good_sides(r), (r / "plain").mkdir()),
        "neither a parity bundle",
    ),
    (
        "corrupt manifest",
        ["diff", "a", "b"],
        damaged(lambda b: (b / "manifest.json").write_text('{"schema')),
        "not valid JSON",
    ),
    (
        "truncated metrics",
        ["diff", "a", "b"],
        damaged(lambda b: (b / "metrics.json").write_text('{"x": [0.')),
        "metrics.json differs from what parity wrote",
    ),
    (
        "newer schema",
        ["diff", "a", "b"],
        damaged(manifest_edit("schema_version", 99)),
        "upgrade parity",
    ),
    ("bad status", ["diff", "a", "b"], damaged(manifest_edit("status", "great")), "was edited"),
    (
        "pickle in a bundle",
        ["diff", "a", "b"],
        damaged(lambda b: (b / "model.pt").write_bytes(b"\x80\x04K\x01.")),
        "pickle",
    ),
    (
        "garbage safetensors",
        ["diff", "a", "b"],
        damaged(lambda b: (b / "numerics.safetensors").write_bytes(b"nonsense")),
        "safetensors",
    ),
    (
        "stray file in a side",
        ["diff", "a", "b"],
        lambda r: (good_sides(r), (r / "b" / "notes.txt").write_text("x")),
        "did not write",
    ),
    ("mismatched workloads", ["diff", "a", "b"], other_seed, "--allow-diff seed="),
    ("report of nothing", ["report", "nowhere"], nothing, "nowhere"),
    (
        "data missing",
        ["compare", "gpt-train", T, "cpu", "--data", "no.txt"],
        nothing,
        "no such file",
    ),
    ("data unused", [*C, T, "cpu", "--data", "x.txt"], files(**{"x.txt": "x"}), "takes no --data"),
    (
        "reference of another workload",
        ["diff", "a", "b", "--reference", "a/r00"],
        other_seed,
        "--allow-diff",
    ),
]


@pytest.mark.parametrize(
    ("name", "args", "setup", "message"), FILE_CASES, ids=[c[0] for c in FILE_CASES]
)
def test_a_bad_file_is_one_line_exit_2_and_writes_nothing(
    name: str,
    args: list[str],
    setup: Setup,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    refuses(args, message, setup, tmp_path, monkeypatch, stub=name not in REAL_API)
