"""A comparison is read once: each bundle file read and hashed at most once per
``parity compare`` (and per ``diff``, ``report`` or ``reindex``), its verdict written
once and never read back. The reads are counted, not assumed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import parity
import parity.bundle
from parity.bundle import DIGEST, INPUTS, VERDICT, load_bundle
from parity.comparison import Comparison
from parity.model.verdict import JudgeInputs
from parity.report.run import write_reports
from parity.sinks import judge_inputs
from parity.store import Store
from tests.fixtures.runs import synthetic_run
from tests.judge.synthetic import side_dir


class Counts:
    """What was hashed (``parity.bundle.read_hashed``) and read (``Path.read_bytes``,
    ``Path.read_text``, ``Path.open``), per resolved path, while counting."""

    def __init__(self) -> None:
        self.hashed: Counter[Path] = Counter()
        self.read: Counter[Path] = Counter()
        self.inside = 0  # in read_bytes or read_text, whose own open is not another read

    def clear(self) -> None:
        self.hashed.clear()
        self.read.clear()

    def under(self, root: Path, counter: Counter[Path]) -> Counter[Path]:
        root = root.resolve()
        return Counter({p: n for p, n in counter.items() if p.is_relative_to(root)})


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counts]:
    found = Counts()
    real_hashed = parity.bundle.read_hashed
    real_bytes, real_text, real_open = Path.read_bytes, Path.read_text, Path.open

    def read_hashed(path: Path) -> tuple[bytes, str]:
        found.hashed[path.resolve()] += 1
        return real_hashed(path)

    def read_bytes(self: Path) -> bytes:
        found.read[self.resolve()] += 1
        found.inside += 1
        try:
            return real_bytes(self)
        finally:
            found.inside -= 1

    def read_text(self: Path, *args: object, **kwargs: object) -> str:
        found.read[self.resolve()] += 1
        found.inside += 1
        try:
            return real_text(self, *args, **kwargs)  # type: ignore[arg-type]
        finally:
            found.inside -= 1

    def open_(self: Path, mode: str = "r", *args: object, **kwargs: object) -> object:
        if "r" in mode and not found.inside:
            found.read[self.resolve()] += 1
        return real_open(self, mode, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(parity.bundle, "read_hashed", read_hashed)
    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    monkeypatch.setattr(Path, "read_text", read_text)
    monkeypatch.setattr(Path, "open", open_)
    yield found


def final(path: Path) -> Path:
    """Where a file hashed in a bundle's temporary directory (``.r00.tmp-1a2b``, sealed
    before its rename) ends up."""
    name = path.parent.name
    if name.startswith(".") and ".tmp-" in name:
        return path.parent.parent / name[1:].split(".tmp-")[0] / path.name
    return path


def bundle_files(root: Path) -> set[Path]:
    """Every file of every bundle under ``root`` but its digest (which lists the others)."""
    return {
        p.resolve()
        for digest in root.rglob(DIGEST)
        for p in digest.parent.iterdir()
        if p.is_file() and p.name != DIGEST
    }


def test_loading_hashes_each_file_once_and_a_finished_bundle_is_not_read_back(
    tmp_path: Path, counts: Counts
) -> None:
    side = side_dir(tmp_path, "baseline", side="cpu", step_s=0.01, repeats=1)
    written = bundle_files(side)
    assert counts.hashed.keys() == written  # sealing hashed each once, as it wrote them
    assert set(counts.hashed.values()) == {1}
    counts.clear()
    bundle = load_bundle(side / "r00")
    assert counts.hashed.keys() == written and set(counts.hashed.values()) == {1}
    assert set(counts.under(side, counts.read).values()) == {1}  # digest.json included
    assert bundle.output_tensors() and bundle.metrics is not None


def test_diff_report_and_reindex_read_each_file_once(tmp_path: Path, counts: Counts) -> None:
    out = synthetic_run(tmp_path / "cmp")
    counts.clear()
    found = Comparison.of_sides(out / "baseline", out / "target")
    found.judged(judge_inputs(found, JudgeInputs(), roots=[out]))
    assert counts.hashed.keys() == bundle_files(out) and set(counts.hashed.values()) == {1}
    assert max(counts.under(out, counts.read).values()) == 1

    def reindex() -> None:
        with Store.open(tmp_path / "index.sqlite") as store:
            assert store.reindex([out]).comparisons == 1

    for step in (lambda: write_reports(out, md=tmp_path / "r.md"), reindex):
        counts.clear()
        step()
        assert counts.hashed.keys() == bundle_files(out) and set(counts.hashed.values()) == {1}
        assert counts.read[(out / VERDICT).resolve()] == 1
        assert max(counts.under(out, counts.read).values()) == 1


@pytest.mark.slow
def test_a_compare_hashes_each_bundle_file_at_most_once(tmp_path: Path, counts: Counts) -> None:
    """A real ``parity compare`` (two rounds, the compliance runs, the fp64 reference and
    the expected-error run, the report and the index): no bundle file is hashed or read
    twice, and the verdict is written, never read back."""
    out = tmp_path / "c"
    result = parity.compare(
        "mlp-train", target="cpu+bf16", repeats=2, steps=6, out=out, progress=False
    )
    assert isinstance(result, parity.ComparisonResult)
    assert result.verdict.sides.target.repeats_ok == 2
    assert result.report is not None and result.report.is_file()
    hashed: Counter[Path] = Counter()
    for path, n in counts.hashed.items():
        hashed[final(path)] += n
    assert hashed and max(hashed.values()) == 1, hashed.most_common(3)
    sides = bundle_files(out / "baseline") | bundle_files(out / "target")
    assert len(sides) >= 2 * 2 * 4 + 2 * 4  # repeats and compliance runs, 4+ files each
    assert sides <= hashed.keys()  # each one hashed, when its run was sealed
    # under their final names (a run's temporary directory is tailed for its events while
    # it runs, and its logs read to redact them before the seal), files are read once
    read = Counter({p: n for p, n in counts.under(out, counts.read).items() if final(p) == p})
    assert max(read.values(), default=0) <= 1, read.most_common(3)
    assert not read.keys() & sides  # a finished run is decoded from what its seal read
    for name in (VERDICT, INPUTS):
        assert (out / name).is_file() and read[(out / name).resolve()] == 0


def test_a_damaged_side_costs_a_report_its_plots_and_reindex_names_it(tmp_path: Path) -> None:
    out = synthetic_run(tmp_path / "cmp")
    metrics = out / "target" / "r01" / "metrics.json"
    metrics.write_text(metrics.read_text().replace("0", "1", 1))
    loaded = Comparison.load(out)
    assert loaded.baseline is not None and loaded.target is None and loaded.verdict is not None
    assert "target bundles could not be read" in loaded.problems[0]
    with Store.open(tmp_path / "index.sqlite") as store:
        result = store.reindex([out])
    assert result.comparisons == 0 and "metrics.json differs from what parity wrote" in str(
        result.problems
    )
