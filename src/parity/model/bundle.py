"""A run bundle and a side's runs as they are held in memory: typed documents and
tensors, loaded and verified once (``parity.bundle`` reads and writes them).

The judge, the reports, the index and MLflow work on these objects; none of them reads
a file. A bundle's ``path`` is where it was read from (its name labels the run: ``r00``,
``reseeded``, ``reference``); nothing here opens it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from parity.model.job import Job
from parity.model.manifest import Logs, Manifest
from parity.model.metrics import Metrics
from parity.model.numerics import Capture, RunOutputs
from parity.model.ops import OpsCensus
from parity.model.side import MeasureRecord
from parity.model.spec import SideSpec
from parity.model.workload import PreparedWorkload

if TYPE_CHECKING:
    from parity.arrays import Array
    from parity.model.placement import Placement

#: the prefix of a margins tensor among a run's output tensors (see ``RunOutputs.margins``)
MARGIN = "margin."
#: name -> tensor, as a safetensors file held them (numpy arrays: ``parity.arrays``)
Tensors = Mapping[str, "Array"]


@dataclass(frozen=True)
class Bundle:
    """A loaded bundle: its typed documents, its tensors, and the sha256 of every file
    as its digest listed them (the index's ids come from these, not from the files)."""

    path: Path
    manifest: Manifest
    metrics: Metrics | None = None
    outputs: RunOutputs | None = None
    ops: OpsCensus | None = None
    capture: Capture | None = None
    prepared: PreparedWorkload | None = None
    #: ``logs.json``: the logs that were cut to the size a bundle keeps
    logs: Logs | None = None
    #: ``job.json``: what the parent handed the worker (as the bundle keeps it)
    job: Job | None = None
    #: ``numerics.safetensors``: the outputs, and the margins under ``MARGIN``
    tensors: Tensors = field(default_factory=dict)
    #: ``capture.safetensors``: the numerics probe's samples
    probe: Tensors = field(default_factory=dict)
    digest: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The run's name in its side: ``r00``, ``reseeded``, ``reference``."""
        return self.path.name

    @property
    def status(self) -> str:
        return self.manifest.status

    @property
    def ok(self) -> bool:
        return self.manifest.ok

    @property
    def fingerprint(self) -> str:
        return self.manifest.workload.fingerprint

    @property
    def side(self) -> SideSpec:
        """The side this bundle ran (``str()`` writes it as given, e.g. ``cpu+bf16``)."""
        return self.manifest.side

    @property
    def placement(self) -> Placement | None:
        """The cluster node the run was placed on (None: this machine)."""
        env = self.manifest.environment
        return env.placement if env is not None else None

    @property
    def losses(self) -> tuple[float | None, ...]:
        return self.outputs.losses if self.outputs is not None else ()

    def output_tensors(self) -> dict[str, Array]:
        """The output tensors, empty if the run produced none."""
        return {k: v for k, v in self.tensors.items() if not k.startswith(MARGIN)}

    def margin_tensors(self) -> dict[str, Array]:
        """Generated tokens' top-2 logits margins, by the tokens' output name."""
        return {k.removeprefix(MARGIN): v for k, v in self.tensors.items() if k.startswith(MARGIN)}

    def capture_tensors(self) -> dict[str, Array]:
        """The numerics probe's samples (outputs, gradients, per-module values)."""
        return dict(self.probe)


@dataclass(frozen=True)
class SideRuns:
    """One side of a comparison: its repeats (fresh processes) and compliance runs.

    On disk, a directory with one bundle per repeat (``r00``, ``r01``, ...), the
    compliance bundles (``reseeded``, ``same-input``) where they were run, and
    ``side.json`` with how measuring ended. A single bundle is a side with one repeat,
    so ``parity diff`` takes bundles from ``parity run`` as well.
    """

    path: Path
    repeats: tuple[Bundle, ...]
    compliance: Mapping[str, Bundle] = field(default_factory=dict)
    info: MeasureRecord | None = None

    @property
    def ok(self) -> tuple[Bundle, ...]:
        return tuple(b for b in self.repeats if b.ok)

    @property
    def first(self) -> Bundle:
        return (self.ok or self.repeats)[0]

    @property
    def bundles(self) -> tuple[Bundle, ...]:
        """Every bundle of the side: its repeats, then its compliance runs."""
        return (*self.repeats, *self.compliance.values())

    @classmethod
    def of(cls, bundle: Bundle) -> SideRuns:
        return cls(path=bundle.path, repeats=(bundle,))


def step_samples(bundles: Iterable[Bundle]) -> list[list[float]]:
    """The steady step times of each successful run, one list per process (the unit the
    speed interval resamples); a run without steady samples gives none."""
    return [s for s in run_samples(bundles) if s]


def one_host(bundles: Iterable[Bundle]) -> bool:
    """Whether the runs shared one machine's pace: all on this machine, or all on cluster
    nodes of one host (the speed interval pairs a comparison's rounds only then)."""
    return len({b.placement.hostname if b.placement else None for b in bundles}) <= 1


def run_samples(bundles: Iterable[Bundle]) -> list[list[float]]:
    """The steady step times of each run, in order, one list per run: empty where the run
    failed or gave none (so a list's index is its run's, e.g. its round)."""
    return [
        list(b.metrics.steady_samples) if b.ok and b.metrics is not None else [] for b in bundles
    ]


def threaded_on_host(runs: Mapping[str, Bundle]) -> dict[str, int]:
    """The runs (by role) whose steps ran several intra-op threads on this machine's cores:
    a host device, not placed on a cluster node. Such threads meet at every parallel
    region, so other processes' load stalls them and scatters the run's times."""
    from parity.model.spec import HOST_COMPUTE

    found = {}
    for role, run in runs.items():
        resolved = run.manifest.resolved
        threads = resolved.threads if resolved is not None else None
        if (
            run.manifest.side.device in HOST_COMPUTE
            and run.placement is None
            and (threads or 0) > 1
        ):
            found[role] = threads or 0
    return found
