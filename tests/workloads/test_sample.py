"""``--data FILE[:FIELD]``: each format read, tokenized and fingerprinted the same way in
any process; a changed byte changes the fingerprint."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from parity.errors import WorkloadError
from parity.model.codec import decode
from parity.model.spec import WorkloadSpec
from parity.workloads import resolve
from parity.workloads.frozen import freeze
from parity.workloads.sample import ByteTokens, file_digest, packed, parse_data, rows

LINES = [
    f"note {i}: the quick brown fox, number {i * 7}, jumps over the lazy dog." for i in range(60)
]
#: the sample (gpt-train, 2 steps of 2 x 16 bytes, plus an evaluation batch) is the first
#: ~100 bytes, so the last line is outside it: its digest alone must change the fingerprint
SPEC = {"name": "gpt-train", "steps": 2, "batch_size": 2, "seq_len": 16}


def write_text(path: Path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def write_jsonl(path: Path, lines: list[str]) -> str:
    path.write_text("".join(json.dumps({"id": i, "body": t}) + "\n" for i, t in enumerate(lines)))
    return f"{path}:body"


def write_csv(path: Path, lines: list[str]) -> str:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "text"])
        w.writerows([i, t] for i, t in enumerate(lines))
    return str(path)  # the default column: text


def write_parquet(path: Path, lines: list[str]) -> str:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"id": list(range(len(lines))), "text": lines}), str(path))
    return f"{path}:text"


def write_datasets(path: Path, lines: list[str]) -> str:
    datasets = pytest.importorskip("datasets")
    split = datasets.Dataset.from_dict({"text": lines})
    datasets.DatasetDict({"train": split}).save_to_disk(str(path))
    return f"{path}:train/text"


WRITERS: dict[str, tuple[str, Callable[[Path, list[str]], str]]] = {
    "text": ("notes.txt", write_text),
    "jsonl": ("notes.jsonl", write_jsonl),
    "csv": ("notes.csv", write_csv),
    "parquet": ("notes.parquet", write_parquet),
    "datasets": ("notes-dataset", write_datasets),
}


def spec_of(data: dict[str, object]) -> WorkloadSpec:
    return decode(WorkloadSpec, data)


def fingerprints_in_a_fresh_process(specs: list[dict[str, object]], cache: Path) -> list[str]:
    code = (
        "import json, sys\n"
        "from parity.model.codec import decode\n"
        "from parity.model.spec import WorkloadSpec\n"
        "from parity.workloads import resolve\n"
        "from parity.workloads.frozen import freeze\n"
        "specs = json.loads(sys.argv[1])\n"
        "print(json.dumps([freeze(resolve(decode(WorkloadSpec, s))).fingerprint "
        "for s in specs]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(specs)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PARITY_CACHE_DIR": str(cache)},
    )
    assert done.returncode == 0, done.stderr
    found: list[str] = json.loads(done.stdout)
    return found


@pytest.mark.slow  # two fresh processes per format
def test_each_format_fingerprints_alike_in_two_processes_and_a_byte_changes_it(
    tmp_path: Path,
) -> None:
    specs, changed = [], []
    for fmt, (name, write) in WRITERS.items():
        data = write(tmp_path / name, LINES)
        specs.append({**SPEC, "data": data})
        other = tmp_path / "changed" / name
        other.parent.mkdir(exist_ok=True)
        write(other, [*LINES[:-1], LINES[-1].replace("dog", "dot")])  # one byte, past the sample
        changed.append({**SPEC, "data": data.replace(str(tmp_path), str(other.parent))})
        sources = resolve(spec_of(specs[-1])).describe().sources
        assert sources is not None and sources.data is not None, fmt
    here = [freeze(resolve(spec_of(s))) for s in specs]
    there = fingerprints_in_a_fresh_process(specs, tmp_path / "other-cache")
    assert [f.fingerprint for f in here] == there
    # every format read the same text: the same tokens, only the files' digests differ
    _, first = here[0].load()
    for frozen in here[1:]:
        assert torch.equal(frozen.load()[1]["tokens"], first["tokens"])
    for spec, before in zip(changed, here, strict=True):
        after = freeze(resolve(spec_of(spec)))
        assert before.parts.differing(after.parts) == ("data",), spec["data"]


@pytest.mark.slow
def test_a_tokenizer_sample_fingerprints_alike_in_two_processes(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from tests.fixtures.checkpoints import tiny_bert

    model = tiny_bert(tmp_path / "bert")
    data = write_jsonl(tmp_path / "notes.jsonl", LINES)
    specs: list[dict[str, object]] = [
        {"name": f"hf:{model}", "task": task, "steps": 2, "data": data}
        for task in ("embed", "train")
    ]
    here = [freeze(resolve(spec_of(s))).fingerprint for s in specs]
    assert here == fingerprints_in_a_fresh_process(specs, tmp_path / "other-cache")


def test_packed_windows_are_the_files_bytes_in_order(tmp_path: Path) -> None:
    src = parse_data(write_text(tmp_path / "a.txt", ["abc", "", "de"]))
    windows = packed(src, ByteTokens(), 3, 4)  # "abc\nde\n" is 7 bytes: read twice
    assert bytes(windows.flatten().tolist()) == b"abc\nde\nabc\nd"
    assert windows.shape == (3, 4) and windows.dtype == torch.long


def test_rows_are_one_document_each_padded_with_a_mask(tmp_path: Path) -> None:
    src = parse_data(write_jsonl(tmp_path / "a.jsonl", ["hi", "a longer one"]))
    found = rows(src, ByteTokens(), 3, 5)
    assert found["attention_mask"].tolist() == [[1, 1, 0, 0, 0], [1] * 5, [1, 1, 0, 0, 0]]
    assert bytes(found["input_ids"][1].tolist()) == b"a lon"


@pytest.mark.parametrize(
    ("write", "suffix", "message"),
    [
        (lambda p: p.write_text('{"body": "x"}\n'), ".jsonl", "has no field 'text'"),
        (lambda p: p.write_text('{"text": 3}\n'), ".jsonl", "holds a int, not text"),
        (lambda p: p.write_text("not json\n"), ".jsonl", "line 1 is not JSON"),
        (lambda p: p.write_text("id,body\n1,x\n"), ".csv", "no column 'text': use one of id, body"),
        (lambda p: p.write_text("\n\n"), ".txt", "holds no text"),
    ],
)
def test_bad_data_is_a_one_line_usage_error(
    tmp_path: Path, write: Callable[[Path], object], suffix: str, message: str
) -> None:
    path = tmp_path / f"data{suffix}"
    write(path)
    with pytest.raises(WorkloadError, match=message) as err:
        freeze(resolve(WorkloadSpec(name="gpt-train", steps=1, data=str(path))))
    assert "\n" not in str(err.value)


def test_data_paths_and_fields_are_checked_when_parsed(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="no such file or directory"):
        parse_data(str(tmp_path / "missing.jsonl:text"))
    plain = write_text(tmp_path / "a.txt", ["x"])
    with pytest.raises(WorkloadError, match="a plain text file has no fields"):
        parse_data(f"{plain}:body")
    assert parse_data(f"{plain}").format == "text"


def test_parquet_without_pyarrow_names_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # import now raises ImportError
    with pytest.raises(WorkloadError, match="needs pyarrow: pip install pyarrow"):
        freeze(resolve(WorkloadSpec(name="gpt-train", steps=1, data=str(path))))


def test_digests_are_cached_by_path_size_and_mtime(tmp_path: Path) -> None:
    path = tmp_path / "w.bin"
    path.write_bytes(b"a" * 100)
    first = file_digest(path)
    stat = path.stat()
    path.write_bytes(b"b" * 100)  # same size; the old mtime put back: the cached digest
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert file_digest(path) == first
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # touched: hashed again
    assert file_digest(path) != first
