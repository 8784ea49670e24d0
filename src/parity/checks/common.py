"""What the three checks share: inputs, running parts, ``check.json``, and ticking the
verdict's "not yet proven" list.

A check directory (``--out``) holds one bundle per part (a fresh worker process each,
through ``parity.runner.launch.run_job``), a ``checkpoint/`` where one was saved, and
``check.json``, written last::

    check         rollback | recovery | soak
    item          the verdict's unproven item it proves when it passes
    passed, exit_code, reason
    workload      spec, name, size, fingerprint and its parts
    sides         {target, baseline} (rollback) or {device}
    settings      k, m, duration, bounds ...
    gates         [{name, passed, detail, ...}]
    figures       the numbers behind the gates
    bundles       part -> bundle directory (relative)
    evidence      one line, shown in a verdict that this check ticks

A verdict ticks an item from the ``check.json`` files under ``OUT/checks/*/`` of a
comparison (``parity compare --checks DIR,...`` copies them there; ``parity diff`` reads
them beside the sides, or from its own ``--checks``), when the check passed and ran on
the verdict's sides: the target (and for rollback the baseline) side specs must be equal,
and rollback and recovery must have trained the same workload architecture (the
fingerprint's ``config`` part; the step count differs by design). Soak runs inference or
generation, so any workload of the target's side counts.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from parity import __version__
from parity.bundle import Bundle, load_bundle, write_json
from parity.errors import UsageError
from parity.runner.job import Job
from parity.runner.launch import EventHandler, run_job
from parity.spec import SideSpec, WorkloadSpec, parse_side
from parity.workloads import resolve
from parity.workloads.base import Workload
from parity.workloads.frozen import Frozen

CHECK_FILE = "check.json"
CHECKS_DIR = "checks"
CHECKPOINT_DIR = "checkpoint"
ITEMS = {"rollback": "rollback path", "recovery": "failure recovery", "soak": "sustained load"}
ProgressFn = Callable[[str, dict[str, Any]], None]

_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)([hms])")
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0}


def parse_duration(text: str) -> float:
    """``30s``, ``10m``, ``1h``, ``1h30m``, ``1.5h`` or plain seconds, in seconds."""
    t = text.strip().lower()
    try:
        seconds = float(t)
    except ValueError:
        pos, seconds = 0, 0.0
        for match in _DURATION.finditer(t):
            if match.start() != pos:
                break
            seconds += float(match[1]) * _UNIT_S[match[2]]
            pos = match.end()
        if pos != len(t) or not t:
            raise UsageError(
                f"--duration {text!r} is not a duration: use e.g. 30s, 10m, 1h or 1h30m"
            ) from None
    if not (seconds > 0 and np.isfinite(seconds)):
        raise UsageError(f"--duration {text!r} must be more than zero, e.g. 30s")
    return seconds


def fmt_duration(seconds: float) -> str:
    for unit, size in (("h", 3600.0), ("m", 60.0)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def check_side(text: str, option: str) -> SideSpec:
    side = parse_side(text)
    if side.nproc is not None:
        raise UsageError(
            f"{option} {text!r} runs {side.nproc} processes: the checks run one process per "
            "part; drop nproc"
        )
    return side


def prepare(wspec: WorkloadSpec) -> tuple[Workload, WorkloadSpec]:
    """Resolve a workload; a user file's path made absolute for the workers."""
    path, sep, attr = wspec.name.rpartition(":")
    if sep and path.endswith(".py"):
        wspec = replace(wspec, name=f"{Path(path).resolve()}:{attr}")
    return resolve(wspec), wspec


def fresh_out(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(
            f"output directory {out} already exists and is not empty: choose a new --out"
        )


def default_out(check: str, workload: Workload) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = workload.name.replace(":", "_").replace("/", "_")
    return Path("parity-runs") / f"{stamp}-{name}-{check}"


@dataclass(kw_only=True)
class Part:
    """One fresh worker process of a check."""

    name: str
    side: SideSpec
    settings: dict[str, Any]
    on_event: EventHandler | None = None


def resumed_part(side: SideSpec, checkpoint: Path) -> Part:
    """The part that loads a checkpoint in a fresh process and trains on."""
    return Part(
        name="resumed", side=side, settings={"mode": "train_ckpt", "resume_from": str(checkpoint)}
    )


def make_job(part: Part, wspec: WorkloadSpec, frozen: Frozen) -> Job:
    return Job(
        role=part.name,
        side=str(part.side),
        workload=wspec.to_dict(),
        frozen=str(frozen.path),
        fingerprint=frozen.fingerprint,
        parts=frozen.parts,
        description=frozen.description,
        settings=dict(part.settings),
    )


def run_parts(
    parts: list[Part],
    out: Path,
    wspec: WorkloadSpec,
    frozen: Frozen,
    *,
    timeout_s: float,
    progress: ProgressFn | None = None,
    concurrent: bool = False,
) -> dict[str, Bundle]:
    """Run independent parts (one fresh process each), at the same time if ``concurrent``."""

    def one(part: Part) -> Bundle:
        def on_event(event: dict[str, Any]) -> None:
            if part.on_event is not None:
                part.on_event(event)
            if progress is not None:
                progress(part.name, event)

        run_job(
            make_job(part, wspec, frozen), out / part.name, timeout_s=timeout_s, on_event=on_event
        )
        return load_bundle(out / part.name)

    if concurrent and len(parts) > 1:
        with ThreadPoolExecutor(len(parts)) as pool:
            bundles = list(pool.map(one, parts))
    else:
        bundles = [one(p) for p in parts]
    return {p.name: b for p, b in zip(parts, bundles, strict=True)}


def all_cpu(*sides: SideSpec) -> bool:
    """Parts on the CPU may run at the same time (no device memory to share)."""
    return all(s.device == "cpu" for s in sides)


@dataclass
class CheckResult:
    """A check's outcome; ``data`` is what ``check.json`` holds."""

    out: Path
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return bool(self.data.get("passed"))

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


def finish(
    check: str,
    out: Path,
    *,
    workload: Workload,
    wspec: WorkloadSpec,
    frozen: Frozen,
    sides: dict[str, str],
    settings: dict[str, Any],
    gates: list[dict[str, Any]],
    figures: dict[str, Any],
    bundles: dict[str, Bundle],
    evidence: str,
) -> CheckResult:
    """Write ``check.json`` (last, atomically) and return the result."""
    passed = bool(gates) and all(g["passed"] for g in gates)
    failing = [g for g in gates if not g["passed"]]
    data = {
        "check": check,
        "item": ITEMS[check],
        "passed": passed,
        "exit_code": 0 if passed else 1,
        "reason": None
        if passed
        else "; ".join(f"{g['name']}: {g.get('detail', 'failed')}" for g in failing),
        "parity_version": __version__,
        "created_unix": time.time(),
        "workload": {
            "spec": wspec.to_dict(),
            "name": workload.name,
            "size": wspec.size,
            "kind": workload.kind,
            "fingerprint": frozen.fingerprint,
            "parts": frozen.parts,
        },
        "sides": sides,
        "settings": settings,
        "gates": gates,
        "figures": figures,
        "bundles": {
            name: {"path": b.path.name, "status": b.status, "reason": b.manifest.get("reason")}
            for name, b in bundles.items()
        },
        "evidence": evidence,
    }
    write_json(out / CHECK_FILE, data)
    return CheckResult(out=out, data=data)


def parts_ran(bundles: dict[str, Bundle], expected_failed: tuple[str, ...] = ()) -> dict[str, Any]:
    bad = [
        f"{name} failed: {b.manifest.get('reason')}"
        for name, b in bundles.items()
        if not b.ok and name not in expected_failed
    ]
    return {"name": "every part ran", "passed": not bad, "detail": "; ".join(bad) or "ok"}


# -- the verdict's unproven list -------------------------------------------------------------


def read_check(path: Path) -> dict[str, Any]:
    """A ``check.json`` (or a directory holding one); UsageError names what is wrong."""
    file = path / CHECK_FILE if path.is_dir() else path
    try:
        data = json.loads(file.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(
            f"{file} is not a readable check result ({type(exc).__name__}): pass a directory "
            "written by parity check"
        ) from None
    if (
        not isinstance(data, dict)
        or data.get("check") not in ITEMS
        or not isinstance(data.get("passed"), bool)
        or not isinstance(data.get("sides"), dict)
    ):
        raise UsageError(f"{file} is not a parity check result: rerun parity check")
    return data


def read_checks(paths: list[Path]) -> list[dict[str, Any]]:
    return [read_check(p) for p in paths]


def parse_check_dirs(text: str | None) -> list[Path]:
    """``--checks DIR1,DIR2`` into paths (each must hold a check.json)."""
    paths = [Path(p.strip()) for p in (text or "").split(",") if p.strip()]
    read_checks(paths)  # validate before anything is written
    return paths


def store_checks(out: Path, paths: list[Path]) -> None:
    """Copy each ``check.json`` into ``OUT/checks/<check>[-N]/`` of a comparison."""
    for path in paths:
        data = read_check(path)
        name, n = str(data["check"]), 1
        dest = out / CHECKS_DIR / name
        while dest.exists():
            n += 1
            dest = out / CHECKS_DIR / f"{name}-{n}"
        dest.mkdir(parents=True)
        src = path / CHECK_FILE if path.is_dir() else path
        shutil.copyfile(src, dest / CHECK_FILE)


def stored_checks(*roots: Path) -> list[Path]:
    """The ``check.json`` files under ``ROOT/checks/*/`` of each root (a comparison dir)."""
    found: list[Path] = []
    for root in roots:
        base = root / CHECKS_DIR
        if base.is_dir():
            found += sorted(p for p in base.glob(f"*/{CHECK_FILE}") if p not in found)
    return found


def checked_items(checks: list[dict[str, Any]], baseline: Bundle, target: Bundle) -> dict[str, str]:
    """The unproven items these checks prove for a verdict on ``baseline``/``target``."""
    config = (target.manifest.get("workload", {}).get("parts") or {}).get("config")
    out: dict[str, list[str]] = {}
    for c in checks:
        if not c.get("passed"):
            continue
        sides = c.get("sides") or {}
        trained = ((c.get("workload") or {}).get("parts") or {}).get("config")
        if c["check"] == "rollback":
            ok = sides.get("target") == target.side and sides.get("baseline") == baseline.side
            ok = ok and trained == config
        elif c["check"] == "recovery":
            ok = sides.get("device") == target.side and trained == config
        else:
            ok = sides.get("device") == target.side
        if not ok:
            continue
        lines = out.setdefault(ITEMS[c["check"]], [])
        if str(c.get("evidence")) not in lines:  # the same result given twice counts once
            lines.append(str(c.get("evidence")))
    return {item: "; ".join(lines) for item, lines in out.items()}


def checked_for(
    baseline: Bundle, target: Bundle, *, roots: list[Path], extra: list[Path] | None = None
) -> dict[str, str]:
    """Items proven by the checks stored under the roots and any given explicitly."""
    return checked_items(read_checks(stored_checks(*roots) + list(extra or [])), baseline, target)
