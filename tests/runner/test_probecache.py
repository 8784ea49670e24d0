"""The probe cache (``parity.runner.probecache``): a side's numerics probe and op scan
kept by content, keyed by the fingerprint, the side and the worker's environment."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from parity.bundle import CAPTURE, CAPTURE_TENSORS, OPS
from parity.model.job import Job, TimingPlan
from parity.model.spec import SideSpec, WorkloadSpec
from parity.model.workload import FingerprintParts, QualitySpec, WorkloadDescription
from parity.runner import probecache
from tests.fixtures.bundles import environment


def frozen_job(name: str) -> Job:
    """A job as a comparison's first repeat has one (nothing frozen: the cache keys on the
    fingerprint, not on the bytes)."""
    parts = FingerprintParts(
        config="c", weights="w", data="d", batch_size=8, seq_len=None, steps=4, seed=0, quality="q"
    )
    return Job(
        role="baseline",
        side=SideSpec(device="cpu"),
        workload=WorkloadSpec(name=name),
        frozen="/nonexistent",
        fingerprint="f" * 64,
        parts=parts,
        description=WorkloadDescription(
            name=name, kind="train", size="tiny", quality=QualitySpec(kind="train", checks=())
        ),
        plan=TimingPlan(capture=True),
    )


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def written(out: Path) -> Path:
    out.mkdir(parents=True)
    (out / CAPTURE).write_text('{"probe": 1}')
    (out / CAPTURE_TENSORS).write_bytes(b"tensors")
    (out / OPS).write_text('{"ops": 2}')
    return out


def test_a_stored_probe_is_copied_into_the_next_bundle(cache: Path, tmp_path: Path) -> None:
    job = frozen_job("mlp-train")
    env = environment()
    entry = probecache.entry_dir(job, env, "numerics probe")
    assert not probecache.has_cached(job.fingerprint, str(job.side), "numerics probe")
    probecache.store(entry, written(tmp_path / "first"), "numerics probe")
    assert probecache.has_cached(job.fingerprint, str(job.side), "numerics probe")
    assert not probecache.has_cached(job.fingerprint, str(job.side), "scan")
    later = tmp_path / "later"
    later.mkdir()
    assert probecache.reuse(entry, later)
    assert sorted(p.name for p in later.iterdir()) == sorted([CAPTURE, CAPTURE_TENSORS])
    assert (later / CAPTURE).read_text() == '{"probe": 1}'


def test_the_key_changes_with_the_side_and_the_environment(cache: Path) -> None:
    job = frozen_job("mlp-train")
    env = environment()
    key = probecache.entry_key(job, env)
    assert probecache.entry_key(job, env) == key
    bf16 = replace(job, side=SideSpec(device="cpu", precision="bf16"))
    assert probecache.entry_key(bf16, env) != key
    assert probecache.entry_key(job, environment(torch_version="2.14.0")) != key
    faulty = replace(env, env={"PARITY_FAKE_UNSUPPORTED": "aten::mm"})
    assert probecache.entry_key(job, faulty) != key
    assert probecache.entry_key(replace(job, repeat=3), env) == key  # not what it depends on


@pytest.mark.parametrize("tamper", ["edited", "extra file", "link"])
def test_an_entry_that_does_not_verify_is_removed_and_the_probe_runs(
    cache: Path, tmp_path: Path, tamper: str
) -> None:
    job = frozen_job("mlp-train")
    entry = probecache.entry_dir(job, environment(), "scan")
    probecache.store(entry, written(tmp_path / "first"), "scan")
    if tamper == "edited":
        (entry / OPS).write_text('{"ops": 3}')
    elif tamper == "extra file":
        (entry / "other.json").write_text("{}")
    else:
        (entry / OPS).unlink()
        (entry / OPS).symlink_to(tmp_path / "first" / OPS)
    later = tmp_path / "later"
    later.mkdir()
    assert not probecache.reuse(entry, later)
    assert not entry.exists() and not any(later.iterdir())


def test_a_kept_document_is_recalled_and_one_that_does_not_verify_is_removed(
    cache: Path,
) -> None:
    job = frozen_job("mlp-train")
    entry = probecache.entry_dir(job, environment(), "flops")
    assert probecache.recall(entry, probecache.FLOPS) is None
    probecache.keep(entry, "flops", probecache.FLOPS, '{"per_step": 1.0}')
    assert probecache.recall(entry, probecache.FLOPS) == '{"per_step": 1.0}'
    assert probecache.recall(entry, "other.json") is None and not entry.exists()
    probecache.keep(entry, "flops", probecache.FLOPS, '{"per_step": 1.0}')
    (entry / probecache.FLOPS).write_text('{"per_step": 2.0}')
    assert probecache.recall(entry, probecache.FLOPS) is None and not entry.exists()


def test_no_entry_means_the_probe_runs(cache: Path, tmp_path: Path) -> None:
    entry = probecache.entry_dir(frozen_job("mlp-train"), environment(), "scan")
    assert not probecache.reuse(entry, tmp_path)


@pytest.mark.slow
def test_a_second_comparison_copies_each_side_s_probes(cache: Path, tmp_path: Path) -> None:
    """Real workers: the same comparison twice; the second's first repeats copy the op scan
    and the numerics probe (the verdict says so) and hold the same census."""
    from parity import api
    from parity.request import CompareRequest

    def compare(out: Path) -> dict[str, float]:
        request = CompareRequest.from_kwargs(
            workload="mlp-train", target="cpu+bf16", repeats=1, compliance=False, out=str(out)
        )
        api.compare(request)
        return dict(json.loads((out / "verdict.json").read_text())["speed"]["stop"]["probes"])

    first = compare(tmp_path / "a")
    # each side's count of a step's FLOPs is kept too: the baseline's planted with another
    # figure, the second comparison's baseline reports that one, and the target counts
    # the same as before
    counts = sorted(cache.glob(f"{probecache.PROBES_DIR}/*/flops-*/{probecache.FLOPS}"))
    assert len(counts) == 2
    planted = next(c for c in counts if c.parent.parent.name.endswith("-cpu"))
    entry, text = planted.parent, json.loads(planted.read_text())
    assert text["per_step"] > 0
    shutil.rmtree(entry)
    probecache.keep(entry, "flops", probecache.FLOPS, json.dumps({**text, "per_step": 12345.0}))
    second = compare(tmp_path / "b")
    assert "baseline op scan" in first and "target numerics probe" in first
    assert {"baseline op scan (cached)", "target numerics probe (cached)"} <= set(second)
    flops = {
        (d, role): json.loads((tmp_path / d / role / "r00" / "metrics.json").read_text())["flops"][
            "per_step"
        ]
        for d in ("a", "b")
        for role in ("baseline", "target")
    }
    assert flops["b", "baseline"] == 12345.0 and flops["a", "baseline"] == text["per_step"]
    assert flops["b", "target"] == flops["a", "target"]
    for role in ("baseline", "target"):
        ops = [(tmp_path / d / role / "r00" / OPS).read_text() for d in ("a", "b")]
        assert ops[0] == ops[1]
