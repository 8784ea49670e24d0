"""Script mode, the parent's half: an unmodified Python training script, once per side.

``parity compare --baseline cpu --target cpu+bf16 -- python train.py --device {device}``
runs the script in a fresh process per side, under the same launcher, timeout and bundle
machinery as any workload (``runner.launch.run_job``; the job's ``mode`` is ``script``,
so the child is ``python -m parity.runner.script_wrapper`` instead of the worker). In
the command, ``{device}`` becomes the side's device string (``cpu``, ``cuda:1``),
``{side}`` the whole side spec and ``{precision}`` its precision; the child also sets
``PARITY_DEVICE``, ``PARITY_SIDE`` and ``PARITY_PRECISION``.

What the wrapper instruments, and what script mode cannot see, is in
``docs/script-mode.md``. In short: step times, the loss curve and memory peaks are
measured; the weights and data are not fingerprinted, so the verdict says the contract
is unverified; there is no fp64 reference and no per-layer capture.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from parity.bundle import Bundle, load_bundle
from parity.errors import UsageError
from parity.runner.job import Job
from parity.runner.launch import run_job
from parity.runner.measure import Plan, measure
from parity.spec import SideSpec, parse_side
from parity.workloads.frozen import canonical

if TYPE_CHECKING:
    from parity.api import CompareResult
    from parity.judge.cost import CostInputs

MODE = "script"
WRAPPER = "parity.runner.script_wrapper"
UNVERIFIED = "script mode: weights and data not fingerprinted"
PLACEHOLDERS: dict[str, Callable[[SideSpec], str]] = {
    "{device}": lambda s: s.device_string,
    "{side}": str,
    "{precision}": lambda s: s.precision,
}
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?(\.exe)?$")
#: interpreter flags that change nothing parity measures; anything else is refused
_PYTHON_FLAGS = ("-u", "-B", "-O", "-OO", "-s", "-E")
ProgressFn = Callable[[str, dict[str, Any]], None]


def split_argv(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """parity's own arguments, and the script command after the first ``--``."""
    args = list(argv)
    if "--" not in args:
        return args, []
    i = args.index("--")
    return args[:i], args[i + 1 :]


@dataclass(frozen=True, kw_only=True, slots=True)
class ScriptCommand:
    """A script command as the user wrote it after ``--`` (placeholders unexpanded)."""

    argv: tuple[str, ...]
    #: the script's resolved path, or the module name with ``module``
    target: str
    module: bool
    args: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"script:{self.target if self.module else Path(self.target).name}"

    def expand(self, side: SideSpec) -> list[str]:
        """The script's arguments with the side's values in the placeholders."""
        out = []
        for arg in self.args:
            for key, value in PLACEHOLDERS.items():
                arg = arg.replace(key, value(side))
            out.append(arg)
        return out

    def source_sha256(self) -> str | None:
        if self.module:
            return None
        return hashlib.sha256(Path(self.target).read_bytes()).hexdigest()


def parse_command(argv: Sequence[str]) -> ScriptCommand:
    """``python [-u] train.py ARGS``, ``python -m pkg.train ARGS`` or ``train.py ARGS``."""
    words = list(argv)
    if not words:
        raise UsageError(
            "nothing after --: write the script's command, e.g. "
            "-- python train.py --device {device}"
        )
    if _PYTHON.match(Path(words[0]).name):
        words = words[1:]
        while words and words[0].startswith("-") and words[0] != "-m":
            if words[0] not in _PYTHON_FLAGS:
                raise UsageError(
                    f"script mode runs the script under parity's own interpreter: drop the "
                    f"interpreter option {words[0]} (allowed: {', '.join(_PYTHON_FLAGS)})"
                )
            words = words[1:]
        if words[:1] == ["-m"]:
            if len(words) < 2:
                raise UsageError("-m needs a module name: -- python -m pkg.train ARGS")
            return ScriptCommand(
                argv=tuple(argv), target=words[1], module=True, args=tuple(words[2:])
            )
    if not words or not words[0].endswith(".py"):
        got = words[0] if words else argv[0]
        raise UsageError(
            f"script mode runs a Python script, not {got!r}: write -- python SCRIPT.py ARGS "
            "or -- python -m MODULE ARGS"
        )
    path = Path(words[0]).expanduser()
    if not path.is_file():
        raise UsageError(f"script {words[0]} does not exist: check the path")
    return ScriptCommand(
        argv=tuple(argv), target=str(path.resolve()), module=False, args=tuple(words[1:])
    )


def check_side(side: SideSpec) -> None:
    """Options script mode can apply from outside; the others are usage errors."""
    if side.compile:
        raise UsageError(
            f"side {side}: script mode cannot compile a script's model from outside; drop "
            "+compile (a script that compiles itself can read {side} or PARITY_SIDE)"
        )
    if getattr(side, "nproc", None) not in (None, 1) or getattr(side, "fsdp", False):
        raise UsageError(f"side {side}: script mode runs one process per side; drop nproc and fsdp")


def description(cmd: ScriptCommand) -> dict[str, Any]:
    """What defines a script run: its command and the script's bytes, nothing more."""
    return {
        "name": cmd.name,
        "kind": "train",
        "size": "script",
        "config": {
            "command": list(cmd.argv),
            "target": cmd.target,
            "module": cmd.module,
            "script_sha256": cmd.source_sha256(),
        },
        # batch size, sequence length, steps and seed are the script's own: unknown here
        "quality": {"kind": "train", "checks": ["loss_curve"]},
        "script_mode": True,
        "contract": UNVERIFIED,
    }


def fingerprint_parts(desc: dict[str, Any]) -> dict[str, Any]:
    """Fingerprint parts of a script run: weights and data are null (never seen)."""
    return {
        "config": hashlib.sha256(
            canonical({"name": desc["name"], "kind": desc["kind"], "config": desc["config"]})
        ).hexdigest(),
        "weights": None,
        "data": None,
        "batch_size": None,
        "seq_len": None,
        "steps": None,
        "seed": None,
        "quality": hashlib.sha256(canonical(desc["quality"])).hexdigest(),
    }


def make_job(cmd: ScriptCommand, role: str, side: SideSpec, repeat: int = 0) -> Job:
    desc = description(cmd)
    parts = fingerprint_parts(desc)
    return Job(
        role=role,
        side=str(side),
        workload={"name": cmd.name, "size": "script", "script": list(cmd.argv)},
        frozen="",
        fingerprint=hashlib.sha256(canonical(parts)).hexdigest(),
        parts=parts,
        description=desc,
        repeat=repeat,
        settings={
            "mode": MODE,
            "script_mode": True,
            "target": cmd.target,
            "module": cmd.module,
            "args": cmd.expand(side),
            "cwd": os.getcwd(),
        },
    )


def _out_dir(out: Path | None, cmd: ScriptCommand, suffix: str = "") -> Path:
    if out is not None:
        return out
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = cmd.name.replace(":", "_").replace("/", "_")
    return Path("parity-runs") / f"{stamp}-{name}{suffix}"


def _fresh_dir(path: Path) -> None:
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise UsageError(
            f"output directory {path} already exists and is not empty: choose a new --out"
        )


def run_script(
    command: Sequence[str],
    side: str,
    out: Path,
    *,
    timeout_s: float = 900.0,
    progress: ProgressFn | None = None,
) -> Bundle:
    """Run a script once on one side; return its bundle (status ok or failed)."""
    from parity.store import index_quietly

    spec = parse_side(side)
    check_side(spec)
    cmd = parse_command(command)
    _fresh_dir(out)
    if out.is_dir():
        out.rmdir()
    run_job(
        make_job(cmd, "run", spec),
        out,
        timeout_s=timeout_s,
        on_event=partial(progress, "run") if progress else None,
    )
    index_quietly(out)
    return load_bundle(out)


def compare_script(
    command: Sequence[str],
    baseline: str,
    target: str,
    *,
    out: Path | None = None,
    allow_diff: list[str] | None = None,
    plan: Plan | None = None,
    progress: ProgressFn | None = None,
    target_loss: float | None = None,
    cost: CostInputs | None = None,
    operational: dict[str, str] | None = None,
) -> CompareResult:
    """Run a script on both sides in fresh processes and judge the bundles.

    One process per side unless ``plan.repeats`` asks for more (a script is run whole
    each time); no compliance runs and no fp64 reference: script mode has neither.
    """
    from parity.api import JudgeInputs, conclude, parse_allow
    from parity.judge.cost import CostInputs

    sides = {"baseline": parse_side(baseline), "target": parse_side(target)}
    for side in sides.values():
        check_side(side)
    parse_allow(allow_diff)  # validated before anything is written
    cmd = parse_command(command)
    plan = replace(plan or Plan(), repeats=(plan.repeats if plan else None) or 1, compliance=False)
    out = _out_dir(out, cmd)
    _fresh_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    measure(
        lambda role, k: make_job(cmd, role, sides[role], repeat=k),
        out,
        plan,
        lambda label: partial(progress, label) if progress else None,
        {},
    )
    inputs = JudgeInputs(
        allow_diff=list(allow_diff or []),
        target_loss=target_loss,
        cost=cost or CostInputs(),
        operational=operational or {},
    )
    return conclude(out, inputs, reference=None)
