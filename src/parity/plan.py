"""Plan files: one TOML file that says what to compare, how to judge it, what it costs.

``parity init`` writes a commented ``parity.toml``; ``parity compare --plan parity.toml``
runs it. Validation happens when the file is read: an unknown key, a wrong type or a
value out of range is a usage error that names the key path and what is allowed.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parity.errors import UsageError
from parity.judge.cost import CostInputs, Price
from parity.spec import SIZES, WorkloadSpec, parse_side

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

OPERATIONAL = (
    "instance_availability",
    "quotas",
    "storage_and_data_movement",
    "monitoring",
    "deployment_tooling",
)

TEMPLATE = """# parity plan: what to compare, how to judge it, what it costs.
# Run it with:  parity compare --plan parity.toml
# Every key is optional unless marked required; remove the leading "# " to set one.

[workload]
name = "gpt-train"          # required: built-in name or path/to/file.py:Factory
size = "tiny"               # tiny | small | base
# batch_size = 8
# seq_len = 64
# steps = 30
seed = 0

[baseline]
side = "cpu"                # required: DEVICE[:INDEX][+OPTION...], e.g. cuda+bf16
# instance = "p4d.24xlarge"
# price_per_hour = 32.77    # on-demand $/h for the whole instance
# accelerators = 8          # accelerators per instance (a side uses one)

[target]
side = "cpu+bf16"           # required, e.g. neuron+bf16
# instance = "trn1.32xlarge"
# price_per_hour = 21.50
# accelerators = 16

[quality]
# target_loss = 5.0         # training: steps and time to this loss (MLPerf style)

[measure]
# repeats = 3               # fresh processes per side; default: adaptive
precision = 0.02            # stop when the speed ratio's interval is within 2%
budget_s = 30               # ... or after this many seconds of measuring
compliance = true           # re-seeded and identical-input checks on the target
timeout_s = 900             # per process

[cost]
# run_steps = 100000        # training: length of a production run (default: as measured)
engineering_hours = 0       # one-off migration effort
engineering_rate = 0        # $ per engineering hour
idle_fraction = 0.0         # share of paid hours the accelerators sit idle, in [0, 1)
retry_fraction = 0.0        # extra work from failed and retried runs
checkpoint_overhead = 0.0   # extra time spent writing checkpoints

[allow_diff]
# seed = "the target team reseeded on purpose"   # accept a differing fingerprint field

[operational]
# Your answers, shown in the verdict as a checklist; leave empty where unknown.
instance_availability = ""
quotas = ""
storage_and_data_movement = ""
monitoring = ""
deployment_tooling = ""
"""


@dataclass(kw_only=True)
class PlanFile:
    """A validated plan file."""

    path: Path
    workload: WorkloadSpec
    baseline: str
    target: str
    target_loss: float | None = None
    measure: dict[str, Any] = field(default_factory=dict)
    cost: CostInputs = field(default_factory=CostInputs)
    allow_diff: list[str] = field(default_factory=list)
    operational: dict[str, str] = field(default_factory=dict)


class _Table:
    """A TOML table with the key path in every error message."""

    def __init__(self, path: Path, name: str, data: Any, allowed: tuple[str, ...]) -> None:
        self.where = f"{path}: {name}"
        if not isinstance(data, dict):
            raise UsageError(f"{self.where} must be a table ([{name}])")
        unknown = sorted(set(data) - set(allowed))
        if unknown:
            raise UsageError(
                f"{self.where}.{unknown[0]} is not a known key: use one of {', '.join(allowed)}"
            )
        self.data = data
        self.name = name

    def get(
        self, key: str, kind: type | tuple[type, ...], default: Any = None, required: bool = False
    ) -> Any:
        if key not in self.data:
            if required:
                raise UsageError(f"{self.where}.{key} is required")
            return default
        value = self.data[key]
        if isinstance(value, bool) and kind in (int, float, (int, float)):
            raise UsageError(f"{self.where}.{key} must be a number, got {value!r}")
        if not isinstance(value, kind):
            names = (
                kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            )
            raise UsageError(f"{self.where}.{key} must be {names}, got {value!r}")
        return value


def load_plan(path: Path) -> PlanFile:
    """Read and validate a plan file; UsageError names the key path and the fix."""
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"plan file {path} does not exist: write one with parity init") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"plan file {path} cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"plan file {path} is not valid TOML: {exc}") from None
    top = _Table(
        path,
        "plan",
        raw,
        (
            "workload",
            "baseline",
            "target",
            "quality",
            "measure",
            "cost",
            "allow_diff",
            "operational",
        ),
    )
    w = _Table(
        path,
        "workload",
        top.get("workload", dict, required=True),
        ("name", "size", "batch_size", "seq_len", "steps", "seed"),
    )
    size = w.get("size", str, "tiny")
    if size not in SIZES:
        raise UsageError(f"{path}: workload.size must be one of {', '.join(SIZES)}, got {size!r}")
    try:
        workload = WorkloadSpec(
            name=w.get("name", str, required=True),
            size=size,
            batch_size=w.get("batch_size", int),
            seq_len=w.get("seq_len", int),
            steps=w.get("steps", int),
            seed=w.get("seed", int, 0),
        )
    except UsageError as exc:
        raise UsageError(f"{path}: workload: {exc}") from None
    sides: dict[str, str] = {}
    prices: dict[str, Price] = {}
    for role in ("baseline", "target"):
        t = _Table(
            path,
            role,
            top.get(role, dict, required=True),
            ("side", "instance", "price_per_hour", "accelerators"),
        )
        side = t.get("side", str, required=True)
        try:
            parse_side(side)
        except UsageError as exc:
            raise UsageError(f"{path}: {role}.side: {exc}") from None
        sides[role] = side
        price = t.get("price_per_hour", (int, float))
        if price is not None:
            try:
                prices[role] = Price(
                    usd_per_hour=float(price),
                    accelerators=t.get("accelerators", int, 1),
                    instance=t.get("instance", str),
                    source=f"plan {path}",
                )
            except UsageError as exc:
                raise UsageError(f"{path}: {role}: {exc}") from None
    q = _Table(path, "quality", top.get("quality", dict, {}), ("target_loss",))
    m = _Table(
        path,
        "measure",
        top.get("measure", dict, {}),
        ("repeats", "precision", "budget_s", "compliance", "timeout_s"),
    )
    measure = {
        k: m.get(k, kinds)
        for k, kinds in (
            ("repeats", int),
            ("precision", (int, float)),
            ("budget_s", (int, float)),
            ("compliance", bool),
            ("timeout_s", (int, float)),
        )
        if k in m.data
    }
    c = _Table(
        path,
        "cost",
        top.get("cost", dict, {}),
        (
            "run_steps",
            "engineering_hours",
            "engineering_rate",
            "idle_fraction",
            "retry_fraction",
            "checkpoint_overhead",
        ),
    )
    try:
        cost = CostInputs(
            prices=prices,
            run_steps=c.get("run_steps", int),
            **{
                k: float(c.get(k, (int, float), 0.0))
                for k in (
                    "engineering_hours",
                    "engineering_rate",
                    "idle_fraction",
                    "retry_fraction",
                    "checkpoint_overhead",
                )
            },
        )
    except UsageError as exc:
        raise UsageError(f"{path}: {exc}") from None
    a = top.get("allow_diff", dict, {})
    allow = [f"{k}={v}" for k, v in a.items()]
    o = _Table(path, "operational", top.get("operational", dict, {}), OPERATIONAL)
    operational = {k: o.get(k, str, "") for k in OPERATIONAL}
    target_loss = q.get("target_loss", (int, float))
    return PlanFile(
        path=path,
        workload=workload,
        baseline=sides["baseline"],
        target=sides["target"],
        target_loss=float(target_loss) if target_loss is not None else None,
        measure=measure,
        cost=cost,
        allow_diff=allow,
        operational=operational,
    )


def write_template(path: Path, *, force: bool = False) -> None:
    if path.exists() and not force:
        raise UsageError(f"{path} already exists: choose another path or pass --force")
    path.write_text(TEMPLATE)
