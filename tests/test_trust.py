"""What parity reads back is checked, not trusted (round three), table-driven, no workers:

- ``--resume`` reuses a bundle only where it belongs (its role, repeat and side) and for
  the ``request.json`` it was run for; a second writer is refused while one holds the
  directory;
- caches are content-addressed: the frozen workload's fingerprint is recomputed from its
  tensors, and links of any kind (hard links included) are refused in caches and bundles;
- a report is never written inside a bundle or over a comparison's evidence.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from parity import api
from parity.bundle import DIGEST, Digest, load_bundle, read_doc, seal, sha256_file, write_doc
from parity.errors import BundleError, ResumeError, UsageError
from parity.measure import beside
from parity.model.job import JOB_FILE, Job, TimingPlan
from parity.model.manifest import Manifest
from parity.model.spec import WorkloadSpec
from parity.request import CompareRequest
from tests.fixtures import runs
from tests.fixtures.cli import invoke, snapshot

SIDES = {"baseline": "cpu", "target": "cpu+bf16"}


def _stamp(path: Path, request: str) -> None:
    """The ``job.json`` a comparison's worker leaves, for ``request``, and the bundle sealed."""
    man = read_doc(path / "manifest.json", Manifest)
    job = Job(
        role=man.role,
        side=man.side,
        workload=WorkloadSpec(name=man.workload.description.name),
        frozen=None,
        fingerprint=man.workload.fingerprint,
        parts=man.workload.parts,
        description=man.workload.description,
        plan=TimingPlan(),
        repeat=man.repeat,
        request=request,
    )
    (path / "digest.json").unlink()
    write_doc(path / JOB_FILE, job)
    seal(path)


def comparison(root: Path) -> Path:
    """An interrupted comparison: ``request.json`` and both sides' r00 (r01 still to run)."""
    out = root / "c"
    out.mkdir(parents=True)
    CompareRequest.from_kwargs(
        workload="mlp-train", target=SIDES["target"], repeats=2, compliance=False, out=str(out)
    ).save(out)
    digest = sha256_file(out / "request.json")
    for role, spec in SIDES.items():
        _stamp(runs.write_bundle(out / role / "r00", role=role, spec=spec), digest)
    return out


def shuffled(out: Path) -> str:
    shutil.rmtree(out / "baseline" / "r00")
    shutil.copytree(out / "target" / "r00", out / "baseline" / "r00")
    return "role target"


def renumbered(out: Path) -> str:
    (out / "target" / "r00").rename(out / "target" / "r01")
    return "repeat 0"


def other_side(out: Path) -> str:
    shutil.rmtree(out / "target" / "r00")
    path = runs.write_bundle(out / "target" / "r00", role="target", spec="cpu+fp16")
    _stamp(path, sha256_file(out / "request.json"))
    return "side cpu+fp16"


def edited_request(out: Path) -> str:
    raw = json.loads((out / "request.json").read_text())
    raw["judge"]["min_cosine"] = 0.5  # a looser gate, the bundles unchanged
    (out / "request.json").write_text(json.dumps(raw))
    return "another request.json"


def edited_out(out: Path) -> str:
    raw = json.loads((out / "request.json").read_text())
    raw["out"] = str(out.parent / "elsewhere")
    (out / "request.json").write_text(json.dumps(raw))
    return "another request.json"


RESUME_CASES: list[tuple[str, Callable[[Path], str]]] = [
    ("target r00 at baseline r00", shuffled),
    ("r00 renamed r01", renumbered),
    ("a bundle of another side", other_side),
    ("a gate loosened in request.json", edited_request),
    ("out edited in request.json", edited_out),
]


@pytest.mark.parametrize(("name", "tamper"), RESUME_CASES, ids=[c[0] for c in RESUME_CASES])
def test_resume_refuses_bundles_that_do_not_belong_before_anything_runs(
    tmp_path: Path, name: str, tamper: Callable[[Path], str]
) -> None:
    out = comparison(tmp_path)
    expected = tamper(out)
    before = snapshot(tmp_path)
    with pytest.raises(ResumeError, match="does not belong here") as refused:
        api.resume(out)
    assert expected in str(refused.value) and "\n" not in str(refused.value)
    assert snapshot(tmp_path) == before  # nothing written, nothing removed, no lock left


@pytest.mark.slow  # starts an interpreter
def test_a_comparison_directory_has_one_writer(tmp_path: Path) -> None:
    out = comparison(tmp_path)
    (out / "baseline" / ".r01.tmp-0123456789ab").mkdir()  # the holder's work in progress
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom pathlib import Path\nfrom parity.paths import locked\n"
            f"with locked(Path({str(out)!r})):\n    print('held', flush=True)\n"
            "    time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(UsageError, match=f"locked by parity pid {holder.pid}"):
            api.resume(out)
        assert (out / "baseline" / ".r01.tmp-0123456789ab").is_dir()  # left alone
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    assert not [p for p in tmp_path.rglob(".*.tmp-*") if p.name != ".r01.tmp-0123456789ab"]


# -- caches: content-addressed, no links ------------------------------------------------------


@pytest.fixture(scope="module")
def frozen_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from parity.workloads.frozen import freeze
    from parity.workloads.registry import resolve

    root = tmp_path_factory.mktemp("frozen")
    return freeze(resolve(WorkloadSpec(name="mlp-train", steps=2)), root).path


def _poison(path: Path, name: str, *, rehash: bool, refingerprint: bool = False) -> None:
    """Change one value of a frozen tensor file and (``rehash``) write its new sha256 into
    ``workload.json``; ``refingerprint``: its parts and fingerprint too, consistently."""
    from safetensors.torch import load_file, save_file

    from parity.workloads.frozen import hash_tensors, parts_of

    tensors = load_file(str(path / name))
    first = sorted(tensors)[0]
    changed = tensors[first].clone()
    changed.view(-1)[0] += 1
    save_file({**tensors, first: changed}, str(path / name))
    meta = json.loads((path / "workload.json").read_text())
    if rehash:
        meta["files"][name] = sha256_file(path / name)
    if refingerprint:
        from parity.model.codec import decode, encode
        from parity.workloads.frozen import FrozenMeta

        old = decode(FrozenMeta, meta)
        weights = hash_tensors(load_file(str(path / "weights.safetensors")))
        data = hash_tensors(load_file(str(path / "data.safetensors")))
        parts = parts_of(old.description, weights, data)
        meta = encode(replace(old, parts=parts, fingerprint=parts.digest()))
    (path / "workload.json").write_text(json.dumps(meta))


def _hard_link(path: Path, name: str) -> None:
    host = path.parent / f"host-{name}"
    shutil.copy(path / name, host)
    (path / name).unlink()
    os.link(host, path / name)


CACHE_CASES: list[tuple[str, Callable[[Path], None], str]] = [
    (
        "data edited, sha256 rewritten",
        lambda p: _poison(p, "data.safetensors", rehash=True),
        "fingerprint",
    ),
    (
        "weights edited, sha256 rewritten",
        lambda p: _poison(p, "weights.safetensors", rehash=True),
        "fingerprint",
    ),
    ("data edited", lambda p: _poison(p, "data.safetensors", rehash=False), "sha256"),
    ("data a hard link", lambda p: _hard_link(p, "data.safetensors"), "a link"),
    ("workload.json a hard link", lambda p: _hard_link(p, "workload.json"), "a link"),
]


@pytest.mark.parametrize(
    ("name", "tamper", "message"), CACHE_CASES, ids=[c[0] for c in CACHE_CASES]
)
def test_a_frozen_workload_is_checked_by_its_content(
    tmp_path: Path, frozen_dir: Path, name: str, tamper: Callable[[Path], None], message: str
) -> None:
    from parity.errors import WorkloadError
    from parity.workloads.frozen import freeze, read_frozen
    from parity.workloads.registry import resolve

    clean = read_frozen(frozen_dir).fingerprint
    entry = tmp_path / "frozen" / frozen_dir.name
    shutil.copytree(frozen_dir, entry)
    tamper(entry)
    with pytest.raises(WorkloadError, match=message):
        read_frozen(entry)  # what a worker does before it loads
    warned: list[str] = []
    rebuilt = freeze(
        resolve(WorkloadSpec(name="mlp-train", steps=2)), entry.parent, warn=warned.append
    )
    assert rebuilt.fingerprint == clean and warned  # made again, with a warning


def test_a_consistently_poisoned_frozen_workload_never_runs_under_the_clean_fingerprint(
    tmp_path: Path, frozen_dir: Path
) -> None:
    from parity.workloads.frozen import read_frozen

    clean = read_frozen(frozen_dir).fingerprint
    entry = tmp_path / frozen_dir.name
    shutil.copytree(frozen_dir, entry)
    _poison(entry, "data.safetensors", rehash=True, refingerprint=True)
    assert read_frozen(entry).fingerprint != clean


def _bundle(root: Path) -> Path:
    return runs.write_bundle(root / "b", role="reference", spec="cpu")


def _resealed(path: Path) -> None:
    """The bundle's digest rewritten by hand to fit whatever it holds now (``seal`` would
    remove a link first)."""
    files = {p.name: sha256_file(p) for p in path.iterdir() if p.name != DIGEST}
    write_doc(path / DIGEST, Digest(files=files))


def _linked_log(path: Path) -> None:
    host = path.parent / "host-secrets.json"
    host.write_text('{"a file of the host": 1}\n')
    (path / "ops.json").unlink(missing_ok=True)
    os.link(host, path / "ops.json")
    _resealed(path)  # its digest rewritten to fit


def _linked_manifest(path: Path) -> None:
    os.link(path / "manifest.json", path.parent / "elsewhere.json")


def _symlinked_log(path: Path) -> None:
    (path / "stdout.log").unlink()
    (path / "stdout.log").symlink_to("/etc/hostname")


BUNDLE_LINKS = [
    ("a hard link, digest rewritten", _linked_log),
    ("a hard link elsewhere to its manifest", _linked_manifest),
    ("a symbolic link", _symlinked_log),
]


@pytest.mark.parametrize(("name", "tamper"), BUNDLE_LINKS, ids=[c[0] for c in BUNDLE_LINKS])
def test_links_of_any_kind_are_refused_in_bundles_and_cached_runs(
    tmp_path: Path, name: str, tamper: Callable[[Path], None]
) -> None:
    path = _bundle(tmp_path)
    (path / "stdout.log").write_text("a log\n")
    (path / "digest.json").unlink()
    seal(path)
    load_bundle(path)
    tamper(path)
    with pytest.raises(BundleError, match="a link"):
        load_bundle(path)
    # copied out of the cache: refused before a byte is copied, whatever the digest says
    dest = tmp_path / "copy"
    with pytest.raises(BundleError, match="link"):
        beside.copy_bundle(path, dest)
    assert not dest.exists() and not list(tmp_path.glob(".copy.tmp-*"))


def test_a_planted_hard_link_or_fifo_is_never_sealed_into_a_bundle(tmp_path: Path) -> None:
    path = _bundle(tmp_path)
    host = tmp_path / "host.txt"
    host.write_text("a file of the host: PlantedHostContent\n")
    os.link(host, path / "stderr.log")
    os.mkfifo(path / "stdout.log")
    (path / "digest.json").unlink()
    seal(path)  # would block on the FIFO, or read the host's file, if it read them
    bundle = load_bundle(path)
    assert "stderr.log" not in bundle.digest and "stdout.log" not in bundle.digest
    assert host.read_text().startswith("a file of the host")  # left as it was


def test_a_cached_run_is_reused_only_for_the_key_its_content_gives(tmp_path: Path) -> None:
    from parity.measure.resumable import mismatch

    bundle = load_bundle(runs.write_bundle(tmp_path / "b", role="reference", spec="cpu"))
    m = bundle.manifest
    job = Job(
        role="reference",
        side=m.side,
        workload=WorkloadSpec(name="mlp-train"),
        frozen=None,
        fingerprint=m.workload.fingerprint,
        parts=m.workload.parts,
        description=m.workload.description,
        plan=TimingPlan(),
    )
    assert m.mode == job.mode  # the fixture's bundle is of timed steps
    assert mismatch(bundle, job) is None
    for changed, words in (
        (replace(job, fingerprint="0" * 64), "fingerprint"),
        (replace(job, role="expected"), "role"),
        (replace(job, side=replace(job.side, precision="bf16")), "side"),
    ):
        assert words in (mismatch(bundle, changed) or ""), changed


# -- reports never overwrite evidence ---------------------------------------------------------


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return runs.synthetic_run(tmp_path / "c", repeats=1)


REPORT_CASES = [
    ("json over a bundle's metrics", ["--json", "c/target/r00/metrics.json"], "inside the bundle"),
    ("md into a bundle", ["--md", "c/baseline/r00/notes.md"], "inside the bundle"),
    ("html over the verdict", ["--html", "c/verdict.json"], "evidence"),
    ("json over the request", ["--json", "c/request.json"], "evidence"),
    ("md over side.json", ["--md", "c/baseline/side.json"], "evidence"),
    ("md a directory", ["--md", "c/baseline"], "evidence"),
    ("html a directory", ["--html", "c"], "not a regular file"),
    ("json under a file", ["--json", "c/verdict.json/x.json"], "which is a file"),
    ("md in /proc", ["--md", "/proc/parity-report.md"], "cannot be written"),
]


@pytest.mark.parametrize(
    ("name", "args", "message"), REPORT_CASES, ids=[c[0] for c in REPORT_CASES]
)
def test_a_report_never_overwrites_evidence(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch, name: str, args: list[str], message: str
) -> None:
    monkeypatch.chdir(run_dir.parent)
    (run_dir / "request.json").write_text("{}\n")  # evidence, whatever it holds
    before = snapshot(run_dir.parent)
    result = invoke("report", "c", *args)
    assert result.exit_code == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines
    assert snapshot(run_dir.parent) == before
    load_bundle(run_dir / "target" / "r00")  # still verifies


def test_a_report_beside_the_evidence_is_written(run_dir: Path) -> None:
    result = invoke("report", str(run_dir), "--md", str(run_dir / "summary.md"))
    assert result.exit_code == 0, result.stderr
    assert (run_dir / "summary.md").is_file()
    assert not list(run_dir.glob(".*"))


@pytest.mark.slow
def test_a_hard_link_planted_in_the_cached_reference_is_never_copied(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    env = {"PARITY_CACHE_DIR": str(tmp_path / "cache")}
    args = ("compare", "mlp-train", "--steps", "2", "--target", "cpu+bf16", "--repeats", "2")
    first = run_cli(*args, "--no-compliance", "--out", str(tmp_path / "a"), env=env)
    assert first.returncode == 0, first.stderr
    cached = [p.parent for p in (tmp_path / "cache").rglob("manifest.json")]
    references = [p for p in cached if p.parent.name.startswith("reference-")]
    assert references, cached
    host = tmp_path / "host-file.txt"
    host.write_text("PlantedHostContent of a file parity never wrote\n")
    for ref in references:
        (ref / "stdout.log").unlink(missing_ok=True)
        os.link(host, ref / "stdout.log")
        _resealed(ref)
    again = run_cli(*args, "--no-compliance", "--out", str(tmp_path / "b"), env=env)
    assert again.returncode == 0, again.stderr
    assert "unusable" in again.stderr  # the entry was refused and made again
    for path in (tmp_path / "b").rglob("*"):
        if path.is_file():
            assert b"PlantedHostContent" not in path.read_bytes(), path
    assert host.read_text().startswith("PlantedHostContent")
