"""The fairness checks' words: the workload's shape against production, what is not yet
proven and how to check it, fit at production size.
"""

from __future__ import annotations

from fractions import Fraction

from parity.model.codec import Json
from parity.model.fair import (
    PIPELINE,
    SHAPE_FACTOR,
    SIZES,
    Fit,
    MemoryPart,
    Representativeness,
    ShapeRow,
    SideFit,
)
from parity.model.verdict import UnprovenItem
from parity.report.words.base import (
    HOWS,
    METHODS,
    WORDS,
    Figures,
    Words,
    _int,
    _num,
    _str,
    bytes_text,
    how_to_check,
    says,
)


def _fraction(name: str, fraction: float) -> str:
    """``parameters 0.31% of production``, ``batch_size 1/32 of production``, ``2x``."""
    if fraction == 1:
        return f"{name} as in production"
    if fraction > 1:
        return f"{name} {fraction:.3g}x production"
    ratio = Fraction(fraction).limit_denominator(64)
    if ratio.numerator == 1 and abs(float(ratio) - fraction) < 1e-12:
        return f"{name} 1/{ratio.denominator} of production"
    return f"{name} {fraction * 100:.2g}% of production"


def _shape_row(f: Figures) -> str:
    """One dimension of the workload's shape against production (``ShapeRow.figures``)."""
    name, shown, production = _str(f, "name"), _str(f, "measured"), f.get("production")
    if name == PIPELINE:
        if production is None:
            return f"data pipeline {shown}"
        verb = "measured" if f.get("within") else "not measured"
        return f"data pipeline {verb} (production {production}, measured {shown})"
    if name in SIZES:
        if production is None:
            return f"{name} {shown} (production not declared)"
        if f.get("fraction") is None:
            return f"{name}: production {production}, the workload reports none"
        return _fraction(name, _num(f, "fraction"))
    if production is None:
        return f"{name} {shown}"
    return (
        f"{name} {shown}, as in production"
        if f.get("within")
        else (f"{name} {shown}, production {production}")
    )


def _rows(f: Figures) -> list[dict[str, Json]]:
    rows = f.get("rows")
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def _shape(f: Figures) -> str:
    """The workload's shape against production (``Representativeness.figures``)."""
    rows = _rows(f)
    if not f.get("declared"):
        measured = ", ".join(f"{_str(r, 'name')} {_str(r, 'measured')}" for r in rows)
        return f"measured shape: {measured}; not checked: no production shape declared"
    if f.get("representative"):
        return f"within {_num(f, 'factor'):g}x of production in every declared dimension"
    off = [_shape_row(r) for r in rows if r.get("within") is False]
    return "not representative: " + ", ".join(off)


def shape_row(r: ShapeRow) -> str:
    """One dimension of the shape (an older verdict's sentence as it was)."""
    return r.text if r.text is not None else _shape_row(r.figures())


def shape(r: Representativeness) -> str:
    """The workload's shape against production (an older verdict's sentence as it was)."""
    return r.summary if r.summary is not None else _shape(r.figures())


#: how to check an item not yet proven, by the code the judge gives it
HOWS |= {
    "shape.declare": (
        "declare the production shape ([production] in the plan, or --production KEY=VALUE) "
        f"and measure a workload within {SHAPE_FACTOR:g}x of it in every size"
    ),
}


# -- the unproven items a comparison lists (judge/decision.py) --------------------------------
HOWS |= {
    "unproven.rollback": "train on the target, checkpoint, resume on the baseline, and compare",
    "unproven.soak": "a soak run of hours at production load: latency drift, memory growth",
    "unproven.recovery": "kill a target run, resume from its checkpoint, compare the curve",
    "unproven.scaling": "the same workload on 1, 2, 4, ... devices: efficiency",
    "unproven.data-pipeline": (
        "the production data loader and preprocessing, not frozen data: a workload's "
        "make_loader, or a script's DataLoader, measured on both sides"
    ),
}


WORDS |= {
    "unproven.pipeline-measured": Words(
        says=lambda f: (
            "measured on both sides: " + "; ".join(f"{role} {reason}" for role, reason in f.items())
        )
    ),
    "decision.settings-changed": Words(
        says=lambda f: (
            "the workload changed torch's settings: "
            + "; ".join(_setting_judged(s) for s in _items(f, "settings"))
        )
    ),
}


def _items(f: Figures, key: str) -> list[Figures]:
    value = f.get(key)
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def _setting_judged(f: Figures) -> str:
    """A torch setting the workload changed, as each side's timed steps ran it."""
    if f.get("unfair"):
        how = "a side computed in another precision than it declared: fails"
    elif f.get("alike"):
        how = "the same on both sides: reported, not failed"
    elif f.get("breaks_contract"):
        how = "differs between the sides and changes what they compute in: fails"
    else:
        how = "differs between the sides: changes the figures"
    ran = f.get("ran")
    values = ran.items() if isinstance(ran, dict) else ()
    said = ", ".join(
        f"{role} {' or '.join(map(str, v if isinstance(v, list) else [])) or 'unknown'}"
        for role, v in values
    )
    return (
        f"{_str(f, 'setting')} was {_str(f, 'before')} at set-up, in the timed steps {said} ({how})"
    )


def unproven_evidence(u: UnprovenItem) -> str | None:
    """What was found toward an unproven item (None: nothing)."""
    if u.evidence is not None:
        return u.evidence
    return says(u.finding) if u.finding is not None else None


def unproven_how(u: UnprovenItem) -> str:
    """How to check an item still open, after what fell short where the judge found it."""
    how = how_to_check(u.how_to_check)
    return f"{says(u.finding)}; {how}" if u.finding is not None else how


WORDS |= {
    "shape.measured": Words(says=_shape),
}


def _kv_cache(f: Figures) -> str:
    return (
        f"2 x {_int(f, 'layers')} layers x {_int(f, 'width')} wide x {_int(f, 'batch')} x "
        f"{_int(f, 'tokens')} tokens x {_int(f, 'size')} B"
    )


def part_how(p: MemoryPart) -> str:
    """How a part of a projected peak was projected (an older verdict's sentence as it was)."""
    if p.basis is None:
        return p.how or ""
    return says(p.basis)


def fit(s: SideFit) -> str:
    """A side's projected peak at production size against its device memory."""
    if s.summary is not None:
        return s.summary
    peak = bytes_text(s.peak_bytes)
    if s.memory is None:
        return (
            f"projected peak {peak}; device memory unknown (not reported, not in "
            "devices/specs.toml): fit not judged"
        )
    memory, margin = s.memory.bytes, s.margin_bytes or 0
    if margin >= 0:
        return (
            f"fits: projected peak {peak} of {bytes_text(memory)} ({bytes_text(margin)} to spare)"
        )
    how = (
        f"fits on {s.fsdp_devices} devices with FSDP"
        if s.fsdp_devices is not None
        else "no device count fits: activations and runtime alone exceed one device"
    )
    return (
        f"does not fit: projected peak {peak} exceeds {bytes_text(memory)} by "
        f"{bytes_text(-margin)} ({s.peak_bytes / memory:.1f}x); {how}"
    )


def fit_reason(f: Fit) -> str:
    """Why the fit was not projected (an older verdict's sentence as it was)."""
    return says(f.finding) if f.finding is not None else f.reason or ""


WORDS |= {
    "fit.weights": Words(says=lambda f: f"{_int(f, 'parameters'):,} parameters x 4 B"),
    "fit.gradients": Words(says=lambda f: "4 B a parameter"),
    "fit.optimizer": Words(
        says=lambda f: (
            f"{_str(f, 'optimizer') or 'adamw (assumed)'}: {_int(f, 'per')} B a parameter"
        )
    ),
    "fit.kv-cache": Words(says=_kv_cache),
    "fit.activations": Words(
        says=lambda f: (
            f"{bytes_text(_int(f, 'per'))} a sample-token measured x {_int(f, 'batch')} x "
            f"{_int(f, 'tokens')}"
        )
    ),
    "fit.runtime": Words(says=lambda f: "the load peak less its weights"),
    "fit.host-copy": Words(says=lambda f: "parity's host copy"),
    "fit.probe-copy": Words(says=lambda f: "the numerics probe's copy"),
    "fit.no-production": Words(
        says=lambda f: (
            "no production shape declared ([production] in the plan, --production): fit at "
            "production size not checked"
        )
    ),
    "fit.no-shape": Words(
        says=lambda f: "the workload reports no parameter count or batch size to project from"
    ),
    "fit.side-missing": Words(says=lambda f: f"the {_str(f, 'role')} did not run"),
    "fit.no-peak": Words(
        says=lambda f: (
            f"the {_str(f, 'role')}: the side recorded no memory peak for its load and its steps"
        )
    ),
}


METHODS |= {
    "fit.projection": (
        "weights 4 B/parameter, gradients 4 B and optimizer states by kind (training), the "
        "key/value cache at the declared batch and length (generation; layers and width grown "
        "as the cube root of the parameter ratio), activations per sample-token from the "
        "measured steps' peak (scaled by samples and tokens only: a lower bound for a wider "
        "production model), the runtime as measured at load; FSDP shards weights, gradients "
        "and optimizer states"
    ),
}
