"""Script mode, the parent's half: an unmodified Python training script, once per side.

``parity compare --baseline cpu --target cpu+bf16 -- python train.py --device {device}``
runs the script in a fresh process per side, under the same orchestrator, launcher,
timeout and bundle machinery as any workload (the job's mode is ``script``). In the
command, ``{device}`` becomes the side's device string (``cpu``, ``cuda:1``), ``{side}``
the whole side spec and ``{precision}`` its precision; the worker also sets
``PARITY_DEVICE``, ``PARITY_SIDE`` and ``PARITY_PRECISION``.

What the worker instruments, and what script mode cannot see, is in
``docs/script-mode.md``. In short: step times, the loss curve and memory peaks are
measured; the weights and data are not fingerprinted, so the verdict says the contract
is unverified; there is no fp64 reference and no per-layer capture. Nothing here imports
torch or the script.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from parity.errors import OptionError
from parity.model.codec import JsonObject
from parity.model.job import ScriptPlan
from parity.model.spec import SideSpec, WorkloadSpec
from parity.model.workload import (
    FingerprintParts,
    QualitySpec,
    WorkloadDescription,
    sha256_json,
)
from parity.safety.redact import redactor
from parity.workloads.repository import repository

UNVERIFIED = "script mode: weights and data not fingerprinted"
PLACEHOLDERS: dict[str, Callable[[SideSpec], str]] = {
    "{device}": lambda s: s.device_string,
    "{side}": str,
    "{precision}": lambda s: s.precision,
}
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?(\.exe)?$")
#: interpreter flags that change nothing parity measures; anything else is refused
_PYTHON_FLAGS = ("-u", "-B", "-O", "-OO", "-s", "-E")


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

    @property
    def recorded(self) -> tuple[str, ...]:
        """The command as parity records it (spec, description, request, bundles): the
        value of every secret-looking flag masked, credentials in arguments redacted. Only
        the worker's plan (``plan()``) holds the real arguments."""
        return redactor().argv(self.argv)

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

    def plan(self, side: SideSpec) -> ScriptPlan:
        """What the worker runs for a side: the target and the expanded arguments."""
        return ScriptPlan(
            target=self.target, module=self.module, args=tuple(self.expand(side)), cwd=os.getcwd()
        )


def parse_command(argv: Sequence[str]) -> ScriptCommand:
    """``python [-u] train.py ARGS``, ``python -m pkg.train ARGS`` or ``train.py ARGS``."""
    words = list(argv)
    if not words:
        raise OptionError(
            "nothing after --: write the script's command, e.g. "
            "-- python train.py --device {device}"
        )
    if _PYTHON.match(Path(words[0]).name):
        words = words[1:]
        while words and words[0].startswith("-") and words[0] != "-m":
            if words[0] not in _PYTHON_FLAGS:
                raise OptionError(
                    f"script mode runs the script under parity's own interpreter: drop the "
                    f"interpreter option {words[0]} (allowed: {', '.join(_PYTHON_FLAGS)})"
                )
            words = words[1:]
        if words[:1] == ["-m"]:
            if len(words) < 2:
                raise OptionError("-m needs a module name: -- python -m pkg.train ARGS")
            return ScriptCommand(
                argv=tuple(argv), target=words[1], module=True, args=tuple(words[2:])
            )
    if not words or not words[0].endswith(".py"):
        got = words[0] if words else argv[0]
        raise OptionError(
            f"script mode runs a Python script, not {got!r}: write -- python SCRIPT.py ARGS "
            "or -- python -m MODULE ARGS"
        )
    path = Path(words[0]).expanduser()
    if not path.is_file():
        raise OptionError(f"script {words[0]} does not exist: check the path")
    return ScriptCommand(
        argv=tuple(argv), target=str(path.resolve()), module=False, args=tuple(words[1:])
    )


def check_side(side: SideSpec) -> None:
    """Options script mode can apply from outside; the others are usage errors."""
    if side.compile:
        raise OptionError(
            f"side {side}: script mode cannot compile a script's model from outside; drop "
            "+compile (a script that compiles itself can read {side} or PARITY_SIDE)"
        )
    if getattr(side, "nproc", None) not in (None, 1) or getattr(side, "fsdp", False):
        raise OptionError(
            f"side {side}: script mode runs one process per side; drop nproc and fsdp"
        )


def describe(cmd: ScriptCommand) -> tuple[FingerprintParts, WorkloadDescription]:
    """What defines a script run: its command (as recorded, secrets masked) and the
    script's bytes, nothing more (the git state of its repository is recorded beside
    them, not fingerprinted)."""
    config: JsonObject = {
        "command": list(cmd.recorded),
        "target": cmd.target,
        "module": cmd.module,
        "script_sha256": cmd.source_sha256(),
    }
    quality = QualitySpec(kind="train", checks=("loss_curve",))
    desc = WorkloadDescription(
        name=cmd.name,
        kind="train",
        size="script",
        config=config,
        # batch size, sequence length, steps and seed are the script's own: unknown here
        quality=quality,
        contract=UNVERIFIED,
        # a module runs from the current directory: its repository is that one's
        repository=repository(os.getcwd() if cmd.module else cmd.target),
    )
    parts = FingerprintParts(
        config=sha256_json({"name": desc.name, "kind": desc.kind, "config": config}),
        weights=None,
        data=None,
        batch_size=None,
        seq_len=None,
        steps=None,
        seed=None,
        quality=sha256_json({"kind": quality.kind, "checks": list(quality.checks)}),
    )
    return parts, desc


def script_spec(cmd: ScriptCommand) -> WorkloadSpec:
    """The workload spec a script run records: its name, size ``script`` and command (as
    recorded: secrets masked)."""
    return WorkloadSpec(name=cmd.name, size="script", script=cmd.recorded)
