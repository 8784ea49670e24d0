"""The CPU runs beside a comparison's sides: the fp64 reference and the expected-error
run (each depends on its job alone: made once per key in the cache, copied beside the
sides), and the target's two compliance runs. The cache is as untrusted as a bundle from
another machine: a copy is verified and its key recomputed from what it holds."""

from __future__ import annotations

import logging
import shutil
import time
import uuid
from dataclasses import replace
from pathlib import Path

from parity.bundle import EXPECTED_DIR, REFERENCE_DIR, io_reason, is_bundle, load_bundle
from parity.cache import expected_key, run_key
from parity.errors import BundleError, OutputError
from parity.measure.orchestrate import JobTemplate, Orchestrator, remove
from parity.measure.resumable import belonging, mismatch
from parity.model.bundle import Bundle
from parity.model.job import ExpectedPlan, Job, ReferencePlan, TimingPlan
from parity.model.spec import SideSpec

log = logging.getLogger("parity")


def fp64_reference(orch: Orchestrator, template: JobTemplate, cache: Path) -> Bundle:
    """The fp64 CPU reference bundle of a frozen workload: its whole run in float64, made
    once per fingerprint in the cache, then copied next to the sides (``OUT/reference``)
    so that the comparison's directory carries everything a later ``parity diff`` needs."""
    job = template.job("reference", SideSpec(device="cpu"), ReferencePlan())
    return cached_run(
        orch, job, cache / run_key(template.fingerprint), REFERENCE_DIR, "fp64 reference"
    )


def expected_run(orch: Orchestrator, template: JobTemplate, side: SideSpec, cache: Path) -> Bundle:
    """The expected-error run: the whole run on the CPU at ``side``'s precision (e.g.
    ``cpu+bf16``), cached per fingerprint and precision, copied to ``OUT/expected``."""
    job = template.job("expected", side, ExpectedPlan())
    key = expected_key(template.fingerprint, side)
    return cached_run(orch, job, cache / key, EXPECTED_DIR, f"expected error ({side})")


def cached_run(orch: Orchestrator, job: Job, cached: Path, name: str, label: str) -> Bundle:
    """A CPU run that depends on its job alone: reused from ``cached``, else run and
    cached there, then copied to ``OUT/name`` (a failure stays there, never cached); what
    it took is one of the set-up parts' costs (``Stop.probes``)."""
    began = time.monotonic()
    reused = is_bundle(cached) or is_bundle(orch.out / name)
    try:
        return _cached_run(orch, job, cached, name, label)
    finally:
        orch.probes[f"{label}{' (cached)' if reused else ''}"] = time.monotonic() - began


def _cached_run(orch: Orchestrator, job: Job, cached: Path, name: str, label: str) -> Bundle:
    """``cached_run``'s work. The copy is what is loaded and verified (once): a cache entry
    that does not verify is removed and made again."""
    dest = orch.out / name
    if dest.exists() or dest.is_symlink():  # resuming: the copy may be there already
        try:
            found = load_bundle(dest)
        except BundleError as exc:
            log.warning("parity: %s: copying the %s again", exc, label)
            remove(dest)
        else:
            return belonging(found, job)
    if is_bundle(cached):
        try:
            copy_bundle(cached, dest)
            # verified (no links, every file as written) and its key recomputed from what
            # it holds (role, side, mode, fingerprint) before use
            copied = load_bundle(dest)
            problem = mismatch(copied, job)
            if problem is not None:
                raise BundleError(f"{cached} is not the run its name says: {problem}")
            return copied
        except BundleError as exc:  # edited, or written by another parity: make it again
            log.warning("parity: the cached %s is unusable (%s): remaking it", label, exc)
            remove(dest)
            remove(cached)
    elif cached.exists() or cached.is_symlink():
        remove(cached)
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.parent / f".{cached.name}.{uuid.uuid4().hex[:8]}"
    bundle = orch.run(job, tmp, label=label)
    copy_bundle(tmp, dest)  # a failure is kept beside the sides, never in the cache
    if not bundle.ok:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        try:
            tmp.rename(cached)
        except OSError:  # made by another process meanwhile
            shutil.rmtree(tmp, ignore_errors=True)
    return replace(bundle, path=dest)  # the bytes just verified, under their copy's name


def copy_bundle(src: Path, dest: Path) -> None:
    """Copy a bundle (from the cache) into place through a hidden temporary directory:
    only the files its ``digest.json`` lists, each a regular file with one name read
    without following links (``bundle.read_own``): the cache is as untrusted as a bundle
    from another machine, and a link or a hard link to a host's file planted in it is
    refused (BundleError) whatever its digest says. An I/O error leaves nothing at
    ``dest``."""
    import os

    from parity.bundle import DIGEST, Digest, read_own
    from parity.model.codec import decode, loads

    if src.is_symlink() or not src.is_dir():
        raise BundleError(f"{src} is a link or not a directory: parity follows no links")
    try:
        listed = decode(Digest, loads(read_own(src / DIGEST).decode("utf-8")))
    except (OSError, ValueError) as exc:
        raise BundleError(f"{src / DIGEST} is unreadable ({exc})") from None
    names = {*listed.files, DIGEST}
    extra = sorted(p.name for p in src.iterdir() if p.name not in names)
    if extra:
        raise BundleError(f"{src} holds {extra[0]!r}, which its {DIGEST} does not list")
    tmp = dest.parent / f".{dest.name}.tmp-{uuid.uuid4().hex[:12]}"
    try:
        tmp.mkdir(parents=True)
        for name in sorted(names):
            if "/" in name or name.startswith("."):
                raise BundleError(f"{src / DIGEST} lists {name!r}, not a file of a bundle")
            (tmp / name).write_bytes(read_own(src / name))
        os.replace(tmp, dest)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, FileNotFoundError) and src in Path(exc.filename or "").parents:
            raise BundleError(f"{exc.filename} is missing") from None
        if isinstance(exc, OSError):
            raise OutputError(f"could not copy {src} to {dest}: {io_reason(exc)}") from exc
        raise


def compliance_runs(
    orch: Orchestrator,
    target: SideSpec,
    reseeded: JobTemplate,
    same: JobTemplate,
    *,
    steps: int | None = None,
) -> dict[str, Bundle]:
    """The target's two compliance runs: another seed, and one identical input; each a
    timing process of ``steps`` (None: the workload's)."""
    runs = {
        "reseeded": reseeded.job(
            "target", target, TimingPlan(compliance=True, steps=steps), request=orch.request
        ),
        "same-input": same.job(
            "target",
            target,
            TimingPlan(compliance=True, same_input=True, steps=steps),
            request=orch.request,
        ),
    }
    return {
        name: orch.run(job, orch.out / "target" / name, label=f"target {name}")
        for name, job in runs.items()
    }
