"""Plan files: one TOML file that says what to compare, how to judge it, what it costs.

``parity init`` writes a commented ``parity.toml``; ``parity compare --plan parity.toml``
runs it. Reading checks the file's shape (an unknown key or table is a ``PlanError``
naming the key path); its values are read by the option table (``parity.request.options``), the
plan key of each (``measure.repeats``) named in its errors.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

from parity.errors import PlanError, UsageError
from parity.model.inputs import Price
from parity.request.options import TABLE, Given
from parity.request.readers import COST_KNOBS

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
name = "gpt-train"          # required: built-in name, hf:PATH or path/to/file.py:Factory
size = "tiny"               # tiny | small | base
# batch_size = 8
# seq_len = 64
# steps = 30
seed = 0
# task = "embed"            # hf:PATH: train | generate | infer | embed | classify
# data = "notes.jsonl:text" # a frozen sample of your data: FILE[:FIELD]
# generate_loop = "hf"      # generation: parity (its own loop) | hf (the model's generate())

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
# min_cosine = 0.99         # embeddings: smallest per-row cosine similarity with the baseline
# min_top1 = 0.99           # logits: smallest top-1 agreement with the baseline (near-ties aside)

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

[stack]
# Expected package versions, as pip writes them: a side whose installed version falls
# outside its pin (or that lacks the package) is reported as drift, prominently; the
# verdict also names every package that differs between the sides.
# torch = "==2.13.*"
# torch-neuronx = ">=2.13,<2.15"
# numpy = "~=2.1"

# [mlflow]                  # log each comparison as an MLflow run (needs parity[mlflow])
# tracking_uri = "http://127.0.0.1:5000"   # "" or left out: MLflow's default
# experiment = "parity"

[production]
# The shape the workload stands in for: the verdict says how far the measured workload is
# from it and projects peak memory at this size on each side.
# parameters = "1.3B"
# seq_len = 2048
# batch_size = 8
# precision = "bf16"
# optimizer = "adamw"       # adamw, adam, sgd, sgd-momentum, lion, adagrad, rmsprop, adafactor
# max_new_tokens = 256      # generation
# data_pipeline = "webdataset shards, 8 loader workers"

[slo]
# Latency limits, a gate on the target: METRIC_pNN = "TIME" (ttft, tpot, itl, e2e, latency)
# ttft_p99 = "200ms"
# tpot_p50 = "30ms"
# e2e_p99 = "2s"

[tuning]
# intended = "the target runs its vendor's recommended settings on purpose"

[operational]
# Your answers, shown in the verdict as a checklist; leave empty where unknown.
instance_availability = ""
quotas = ""
storage_and_data_movement = ""
monitoring = ""
deployment_tooling = ""
"""


class _Table:
    """A TOML table with the key path in every error message."""

    def __init__(self, path: Path, name: str, data: object, allowed: tuple[str, ...]) -> None:
        self.where = f"{path}: {name}"
        if not isinstance(data, dict):
            raise PlanError(f"{self.where} must be a table ([{name}])")
        unknown = sorted(set(data) - set(allowed))
        if unknown:
            raise PlanError(
                f"{self.where}.{unknown[0]} is not a known key: use one of {', '.join(allowed)}"
            )
        self.data: dict[str, object] = data

    def get(self, key: str, kind: type | tuple[type, ...], required: bool = False) -> Any:
        if key not in self.data:
            if required:
                raise PlanError(f"{self.where}.{key} is required")
            return None
        value = self.data[key]
        numeric = kind in (int, float, (int, float))
        if (isinstance(value, bool) and numeric) or not isinstance(value, kind):
            names = (
                kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            )
            raise PlanError(f"{self.where}.{key} must be {names}, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise PlanError(f"{self.where}.{key} must be a finite number, got {value}")
        return value


NUMBER = (int, float)
TOP = (
    "workload",
    "baseline",
    "target",
    "quality",
    "measure",
    "cost",
    "allow_diff",
    "operational",
    "mlflow",
    "stack",
    "production",
    "slo",
    "tuning",
    "place",
)
#: the tables whose keys are options of the table (``parity.request.options``, ``plan=``)
SIMPLE = ("workload", "quality", "measure")


def _keys(table: str) -> dict[str, str]:
    """A simple table's keys -> the options they set."""
    return {
        o.plan.split(".", 1)[1]: o.key
        for o in TABLE.values()
        if o.plan is not None and o.plan.split(".", 1)[0] == table
    }


def _read(path: Path) -> dict[str, Any]:
    try:
        if path.exists() and not path.is_file():  # a FIFO would block the read forever
            raise PlanError(
                f"plan file {path} is not a regular file (a directory, a FIFO, a device): "
                "pass a plan file, e.g. one written by parity init"
            )
        data: dict[str, Any] = tomllib.loads(path.read_text())
        return data
    except FileNotFoundError:
        raise PlanError(f"plan file {path} does not exist: write one with parity init") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanError(f"plan file {path} cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"plan file {path} is not valid TOML: {exc}") from None
    except RecursionError:
        raise PlanError(
            f"plan file {path} is nested too deeply: write a plan as parity init does"
        ) from None


def _price(t: _Table, path: Path) -> Price | None:
    usd = t.get("price_per_hour", NUMBER)
    if usd is None:
        extra = [k for k in ("instance", "accelerators") if k in t.data]
        if extra:
            raise PlanError(f"{t.where}.{extra[0]} is set without price_per_hour: set both")
        return None
    given = t.get("accelerators", int)
    accelerators = 1 if given is None else given
    try:
        return Price(
            usd_per_hour=float(usd),
            accelerators=accelerators,
            instance=t.get("instance", str),
            source=f"plan {path}",
        )
    except ValueError as exc:
        raise PlanError(f"{t.where}: {exc}") from None


def load_plan(path: Path) -> Given:
    """Read a plan file into the options it gives; PlanError names the key path and the
    fix. Its shape is checked here, its values by the option table."""
    top = _Table(path, "plan", _read(path), TOP)
    raw: dict[str, object] = {}
    for name in SIMPLE:
        keys = _keys(name)
        # every table is optional: a plan of a part (``[production]`` alone) takes the
        # workload and the sides from beside it, as the command line would without a plan
        t = _Table(path, name, top.get(name, dict) or {}, tuple(keys))
        if name == "workload" and name in top.data:
            t.get("name", str, required=True)
        raw.update({keys[k]: v for k, v in t.data.items()})
    prices: dict[str, Price] = {}
    for role in ("baseline", "target"):
        if role not in top.data:
            continue
        t = _Table(path, role, top.get(role, dict), SIDE_KEYS)
        raw[role] = t.get("side", str, required=True)
        price = _price(t, path)
        if price is not None:
            prices[role] = price
    raw["prices"] = prices
    raw["cost"] = _Table(path, "cost", top.get("cost", dict) or {}, COST_KNOBS).data
    for name, key in (
        ("allow_diff", "allow_diff"),
        ("operational", "operational"),
        ("stack", "pins"),
    ):
        given = top.get(name, dict) or {}
        t = _Table(path, name, given, OPERATIONAL if name == "operational" else tuple(given))
        raw[key] = {k: t.get(k, str) for k in t.data}
    raw.update(_fair_tables(top, path))
    placed = top.get("place", dict) or {}
    pl = _Table(path, "place", placed, ("baseline", "target"))
    if pl.data:
        raw["place"] = {k: pl.get(k, str) for k in pl.data}
    mlflow = top.get("mlflow", dict)
    if mlflow is not None:  # a [mlflow] table (even empty) logs the comparison
        f = _Table(path, "mlflow", mlflow, ("tracking_uri", "experiment"))
        raw["mlflow"] = f.get("tracking_uri", str) or ""
        raw["mlflow_experiment"] = f.get("experiment", str)
    try:
        return Given.read("compare", raw, "plan")
    except UsageError as exc:
        raise PlanError(f"{path}: {exc}") from None


SIDE_KEYS = ("side", "instance", "price_per_hour", "accelerators")


def _fair_tables(top: _Table, path: Path) -> dict[str, object]:
    """``[production]`` (the production shape), ``[slo]`` (latency limits) and
    ``[tuning]`` (``intended``: why a tuning asymmetry is meant)."""
    from parity.request.fair_options import PRODUCTION_KEYS

    shape = _Table(path, "production", top.get("production", dict) or {}, PRODUCTION_KEYS)
    given = top.get("slo", dict) or {}
    limits = _Table(path, "slo", given, tuple(given))
    tuning = _Table(path, "tuning", top.get("tuning", dict) or {}, ("intended",))
    return {
        "production": {k: shape.get(k, (str, int, float)) for k in shape.data} or None,
        "slo": {k: limits.get(k, (str, int, float)) for k in limits.data} or None,
        "tuning_intended": tuning.get("intended", str),
    }


def write_template(path: Path, *, force: bool = False) -> None:
    """``parity init``: the commented template at ``path``; PlanError when it cannot be
    written (an existing file without ``force``, a missing directory, no permission)."""
    try:
        if path.exists() and not force:
            raise PlanError(f"{path} already exists: choose another path or pass --force")
        path.write_text(TEMPLATE)
    except OSError as exc:
        raise PlanError(
            f"cannot write the plan {path} ({exc.strerror or exc}): choose another path"
        ) from None
