"""What ``parity scan`` prints: one side's ``ops.json`` as sections of the view (what the
device cannot run, what falls back to the CPU, host syncs, copies, the compile probes),
laid out by the terminal renderer like a verdict."""

from __future__ import annotations

from rich.console import Console

from parity.model.ops import GraphProbes, OpFinding, OpsCensus
from parity.report.parts import Part, Section, Sentence, table
from parity.report.terminal import print_sections


def _dtypes(dtypes: tuple[str, ...]) -> str:
    return ", ".join(d for d in dtypes if d) or "-"


def _sources(f: OpFinding) -> list[tuple[str, str]]:
    """(where, code) of each source line that called the op; one dash row without any."""
    return [(s.where, s.code or "-") for s in f.sources] or [("-", "-")]


def _findings(c: OpsCensus) -> list[Part]:
    parts: list[Part] = []
    if c.custom_ops:
        parts.append(
            table(
                [("op", "name"), ("dtypes", "text"), ("where", "text"), ("calls", "number")],
                [
                    (f.op, _dtypes(f.dtypes), where, str(f.count))
                    for f in c.custom_ops
                    for where, _ in _sources(f)
                ],
                title="Custom ops: test these on the target first",
            )
        )
    if c.unsupported:
        parts.append(
            table(
                [
                    ("op", "name"),
                    ("dtypes", "text"),
                    ("phase", "text"),
                    ("where", "text"),
                    ("code", "text"),
                ],
                [
                    (f.op, _dtypes(f.dtypes), ", ".join(f.phases), where, code)
                    for f in c.unsupported
                    for where, code in _sources(f)
                ],
                title=f"Unsupported on {c.device}: {len(c.unsupported)} op(s)",
            )
        )
    else:
        parts.append(Sentence(text="unsupported ops: none", tone="good"))
    if c.host_syncs:
        parts.append(
            table(
                [("op", "name"), ("why", "text"), ("where", "text"), ("calls", "number")],
                [(s.op, s.detail, s.where, str(s.count)) for s in c.host_syncs],
                title="Host syncs inside a step",
            )
        )
    return parts


def _fallbacks(c: OpsCensus) -> list[Part]:
    fb = c.fallbacks
    if fb is None:
        return []
    parts: list[Part] = []
    backend = fb.backend
    if backend.backend:
        ops = backend.fallback_ops
        listed = f": {', '.join(ops)}" if ops else ""
        counted = backend.fallback_counts is not None
        parts.append(
            Sentence(
                text=f"{backend.backend} reports {len(ops)} CPU fallback op(s){listed}"
                + ("" if counted or not backend.note else f" ({backend.note})"),
                tone="warn" if ops else "good",
            )
        )
    else:
        parts.append(Sentence(text=backend.note or "no backend fallback report", tone="muted"))
    if fb.no_device_kernel:
        parts.append(
            table(
                [("op", "name"), ("why", "text"), ("where", "text"), ("calls", "number")],
                [(x.op, x.detail, x.where, str(x.count)) for x in fb.no_device_kernel],
                title="Ops with no kernel of the device's own (the scan's own count)",
            )
        )
    parts += [
        Sentence(text=f"output on another device: {m.op} at {m.where}: {m.detail}", tone="warn")
        for m in fb.device_mismatch
    ]
    if fb.copies:
        parts.append(
            table(
                [("op", "name"), ("copy", "text"), ("where", "text"), ("calls", "number")],
                [(x.op, x.detail, x.where, str(x.count)) for x in fb.copies],
                title="Host-device copies",
            )
        )
    return parts


def _compile(g: GraphProbes | None) -> list[Part]:
    if g is None or g.skipped:
        reason = g.skipped if g is not None else "not run"
        return [Sentence(text=f"compile probes: skipped ({reason})", tone="muted")]
    parts: list[Part] = []
    if g.device_error:
        parts.append(
            Sentence(text=f"Dynamo cannot trace the forward: {g.device_error}", tone="bad")
        )
    e = g.explain
    if e is not None and e.error:
        parts.append(Sentence(text=f"graph breaks: explain failed: {e.error}", tone="warn"))
    elif e is not None:
        n = e.graph_breaks or 0
        parts.append(
            Sentence(
                text=f"graph breaks: {n} ({e.graphs} graph(s), {e.ops_in_graphs} ops captured)",
                tone="warn" if n else "good",
            )
        )
        parts += [
            Sentence(text=f"graph break at {r.where or '?'}: {r.reason}", tone="warn")
            for r in e.reasons
        ]
    full = g.fullgraph
    if full is not None and full.passed is not None:
        said = "compiles as one graph" if full.passed else f"fails: {full.error}"
        parts.append(
            Sentence(text=f"fullgraph=True: {said}", tone="good" if full.passed else "warn")
        )
    rec = g.recompilations
    if rec is not None and rec.recompilations is not None:
        parts.append(
            Sentence(text=f"recompilations: {rec.recompilations} over {rec.calls} call(s)")
        )
        parts += [Sentence(text=r.reason, tone="muted") for r in rec.reasons]
    parts.append(Sentence(text=f"{g.note}; ran on {g.ran_on}", tone="muted"))
    return parts


def _outcome(c: OpsCensus) -> list[Part]:
    parts: list[Part] = []
    plain = c.plain_run
    if plain is not None and plain.ran:
        if plain.failed and plain.error is not None:
            err = plain.error
            parts.append(
                Sentence(
                    text=f"a plain step without the CPU crutch fails with {err.type}: "
                    f"{err.message} at {err.where}",
                    tone="bad",
                )
            )
        else:
            parts.append(Sentence(text="a plain step without the CPU crutch runs", tone="good"))
    if c.scan_error is not None:
        err = c.scan_error
        parts.append(
            Sentence(text=f"the scan stopped: {err.type}: {err.message} at {err.where}", tone="bad")
        )
    v = c.versions
    if v is not None:
        pkgs = "".join(f", {k} {x or '-'}" for k, x in v.backend_packages.items())
        parts.append(Sentence(text=f"python {v.python}, torch {v.torch}{pkgs}", tone="muted"))
    return parts


def scan_sections(census: OpsCensus) -> tuple[Section, ...]:
    """The scan of one side as view sections."""
    s = census.summary
    head = f"scanned {census.steps_scanned} step(s) on {census.device}"
    if s is not None:
        calls = ", ".join(str(n) for n in s.op_calls_per_step)
        head += f": {s.ops} distinct ops, op calls per step {calls}"
    summary = Sentence(text=head, tone="strong")
    sections = [
        Section(
            key="scan",
            title="Op scan",
            result="INFO",
            parts=(summary, *_findings(census), *_outcome(census)),
        ),
        Section(key="fallbacks", title="Fallbacks", result="INFO", parts=tuple(_fallbacks(census))),
        Section(
            key="compile",
            title="torch.compile",
            result="INFO",
            parts=tuple(_compile(census.graphs)),
        ),
    ]
    return tuple(x for x in sections if not x.empty)


def render_scan(census: OpsCensus, console: Console, *, wide: bool = False) -> None:
    """Print what ``parity scan`` found on ``console`` (``wide``: natural width)."""
    print_sections(scan_sections(census), console, wide=wide)
