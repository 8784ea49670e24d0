"""Representativeness: the measured workload against the declared production shape.

A two-layer pilot is not a 7B model: each size (parameters, sequence length, batch size,
new tokens) is given as a fraction of production, and precision, optimizer and data
pipeline as same or not. The workload is representative when every declared size is
within ``FACTOR`` of production and every declared kind matches; until then the verdict
lists "a representative workload" as not yet proven. Without a declared shape it states
the measured shape and that it was not checked.
"""

from __future__ import annotations

from parity.model.fair import PIPELINE, SHAPE_FACTOR, ProductionShape, Representativeness, ShapeRow
from parity.model.workload import WorkloadDescription

FACTOR = SHAPE_FACTOR
ITEM = "a representative workload"
#: how the sides were fed without a loader
FROZEN = "frozen data"
#: how a script fed itself: parity never sees it, so it cannot say it was frozen
UNSEEN = "unfingerprinted script data"
#: how to check the item (``parity.report.words.how_to_check`` says it)
HOW = "shape.declare"


def _size_row(name: str, measured: int | None, production: int | None) -> ShapeRow | None:
    if measured is None and production is None:
        return None
    shown = "-" if measured is None else f"{measured:,}"
    if production is None:
        return ShapeRow(name=name, measured=shown)
    if measured is None:
        return ShapeRow(name=name, measured=shown, production=f"{production:,}", within=False)
    fraction = measured / production
    within = 1 / FACTOR <= fraction <= FACTOR
    return ShapeRow(
        name=name, measured=shown, production=f"{production:,}", fraction=fraction, within=within
    )


def _kind_row(name: str, measured: str | None, production: str | None) -> ShapeRow | None:
    if measured is None and production is None:
        return None
    shown = measured or "-"
    if production is None:
        return ShapeRow(name=name, measured=shown)
    return ShapeRow(name=name, measured=shown, production=production, within=measured == production)


def _pipeline_row(measured: str, production: str | None) -> ShapeRow:
    """The data pipeline: production's is matched only by a measured loader (a frozen
    tensor file stands in for no pipeline)."""
    if production is None:
        return ShapeRow(name=PIPELINE, measured=measured)
    within = measured not in (FROZEN, UNSEEN)
    return ShapeRow(name=PIPELINE, measured=measured, production=production, within=within)


def judge_representative(
    d: WorkloadDescription,
    precisions: tuple[str, str],
    pipeline: str,
    production: ProductionShape | None,
) -> Representativeness:
    """``precisions``: the baseline's and the target's; ``pipeline``: how the sides were
    fed (``frozen data`` or the loader they measured)."""
    p = production or ProductionShape()
    new = d.config.get("new_tokens")
    target_precision = precisions[1]
    made = [
        _size_row("parameters", d.parameters, p.parameters),
        _size_row("seq_len", d.seq_len, p.seq_len),
        _size_row("batch_size", d.batch_size, p.batch_size),
        _size_row("max_new_tokens", new if isinstance(new, int) else None, p.max_new_tokens),
        _kind_row("precision (target)", target_precision, p.precision),
        _kind_row("optimizer", d.optimizer, p.optimizer),
        _pipeline_row(pipeline, p.data_pipeline),
    ]
    rows = tuple(r for r in made if r is not None)
    declared = production is not None
    judged = [r for r in rows if r.within is not None]
    representative = all(r.within for r in judged) if declared and judged else None
    return Representativeness(
        declared=declared, factor=FACTOR, rows=rows, representative=representative
    )
