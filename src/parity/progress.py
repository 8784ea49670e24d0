"""Progress of running workers, for people: one sink shared by the CLI and the Python API.

The orchestrator calls a ``ProgressSink`` with a label (``baseline r01``, ``fp64
reference``, ``target reseeded``) and each event a worker reports (``parity.model.job.
Event``: a phase change, steps done, a checkpoint). What a person sees depends on where
parity runs:

- on a terminal, a live status line (Rich) naming the side, the repeat, the phase and
  the steps done (``live``);
- anywhere else (a pipe, a CI log, ``make demo | tee log``), one line per event on
  stderr, ``parity: baseline r01: steps 40/120 (12.3 s)``, throttled to one line per
  second per label; phase changes and checkpoints are always written, so every repeat
  leaves at least one line (``LineProgress``);
- in a notebook, one ``tqdm.auto`` bar per label where tqdm is installed, else the lines.

``progress=`` of ``parity.compare`` and ``parity.run`` takes a callable (your own sink),
``True``/``None`` (the default above) or ``False`` (silence): ``resolve`` turns it into
a sink. This module imports nothing heavy (Rich and tqdm only when a display starts).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from parity.errors import OptionError
from parity.printable import printable

if TYPE_CHECKING:
    from rich.console import Console

    from parity.model.job import Event

#: ``(label, event)``: what the orchestrator reports (``parity.measure.orchestrate.ProgressSink``)
ProgressSink = Callable[[str, "Event"], None]
#: what ``progress=`` of the Python API accepts
ProgressArg = ProgressSink | bool | None
PREFIX = "parity: "


def describe(event: Event) -> str:
    """What one event says, e.g. ``phase steps``, ``steps 40/120``, ``checkpoint at 20``
    (printable: a worker's event is a workload's text)."""
    return printable(_describe(event), layout=False)


def _describe(event: Event) -> str:
    kind = getattr(event, "event", None)
    if kind == "phase":
        return f"phase {getattr(event, 'phase', None) or '?'}"
    if kind == "progress":
        done, steps = getattr(event, "done", None), getattr(event, "steps", None)
        return f"steps {done}/{steps}" if steps else f"steps {done}"
    if kind == "checkpoint":
        step = getattr(event, "step", None)
        return "checkpoint saved" + (f" at step {step}" if step is not None else "")
    return str(kind)


def _always(event: Event) -> bool:
    """Events that are never throttled: phase changes, checkpoints, the last step."""
    kind = getattr(event, "event", None)
    if kind != "progress":
        return True
    steps = getattr(event, "steps", None)
    return steps is not None and getattr(event, "done", None) == steps


@dataclass
class _Label:
    started: float
    last_line: float = -1e9


@dataclass
class LineProgress:
    """One line per event on a stream (stderr by default), at most one line per second
    per label for step counts; phase changes, checkpoints and the last step always."""

    write: Callable[[str], object] | None = None
    interval_s: float = 1.0
    clock: Callable[[], float] = time.monotonic
    labels: dict[str, _Label] = field(default_factory=dict)

    def __call__(self, label: str, event: Event) -> None:
        now = self.clock()
        state = self.labels.setdefault(label, _Label(started=now))
        text = describe(event)
        if not _always(event) and now - state.last_line < self.interval_s:
            return
        state.last_line = now
        self._emit(f"{PREFIX}{label}: {text} ({now - state.started:.1f} s)")

    def _emit(self, line: str) -> None:
        line = printable(line, layout=False)  # the label too (a script's name)
        if self.write is not None:
            self.write(line + "\n")
            return
        stream = sys.stderr
        stream.write(line + "\n")
        stream.flush()


class LiveProgress:
    """A Rich status line on a terminal: the label that spoke last, what it is doing and
    how long it has been at it."""

    def __init__(self, console: Console) -> None:
        from rich.status import Status

        self.status = Status("starting workers", console=console)
        self.started: dict[str, float] = {}

    def __call__(self, label: str, event: Event) -> None:
        now = time.monotonic()
        started = self.started.setdefault(label, now)
        from rich.text import Text

        line = f"{label}: {describe(event)} ({now - started:.1f} s)"
        self.status.update(Text(printable(line, layout=False)))


class NotebookProgress:
    """One ``tqdm.auto`` bar per label (a notebook widget where ipywidgets is there)."""

    def __init__(self, tqdm: Any) -> None:
        self.tqdm = tqdm
        self.bars: dict[str, Any] = {}

    def __call__(self, label: str, event: Event) -> None:
        bar = self.bars.get(label)
        if bar is None:
            desc = printable(label, layout=False)
            bar = self.bars[label] = self.tqdm(desc=desc, total=None, leave=True)
        kind = getattr(event, "event", None)
        if kind == "progress":
            steps, done = getattr(event, "steps", None), getattr(event, "done", None) or 0
            if steps and bar.total != steps:
                bar.total = steps
            bar.n = done
            bar.refresh()
        else:
            bar.set_postfix_str(describe(event))

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


def in_notebook() -> bool:
    """Whether this is a Jupyter kernel (IPython's ZMQ shell)."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return type(shell).__name__ == "ZMQInteractiveShell"


def _notebook_sink() -> NotebookProgress | None:
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return NotebookProgress(tqdm)


@contextmanager
def resolve(progress: object) -> Iterator[ProgressSink | None]:
    """The sink for ``progress=`` of the Python API: a callable as given, ``False`` for
    none, ``True`` or ``None`` for the default (tqdm bars in a notebook, else lines on
    stderr). OptionError for anything else."""
    if progress is False:
        yield None
        return
    if progress is None or progress is True:
        notebook = _notebook_sink() if in_notebook() else None
        try:
            yield notebook if notebook is not None else LineProgress()
        finally:
            if notebook is not None:
                notebook.close()
        return
    if callable(progress):
        yield progress
        return
    raise OptionError(
        f"progress must be a callable(label, event), True or False, got {type(progress).__name__}"
    )


@contextmanager
def display(console: Console) -> Iterator[ProgressSink]:
    """The CLI's sink: a live status on a terminal, else throttled lines on stderr."""
    if not console.is_terminal:
        yield LineProgress()
        return
    live = LiveProgress(console)
    with live.status:
        yield live
