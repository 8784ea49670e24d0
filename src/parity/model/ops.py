"""``ops.json``: the op census of a scan, and what a side could not run or ran elsewhere.

Every op a few steps dispatched (inventory), the unsupported ones with the user's source
lines, custom ops, CPU fallbacks (what the backend reports, and outputs that turned up on
another device), host-device copies, host syncs, and the torch.compile probes (graph
breaks, fullgraph, recompilations).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from parity.model.codec import omit_none

OpPhase = Literal["forward", "backward", "optimizer"]


@dataclass(frozen=True, kw_only=True, slots=True)
class SourceLine:
    """A line of the user's code: file, line, function and the code itself."""

    file: str
    line: int
    function: str
    code: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Finding:
    """One kind of finding (a host sync, a copy, an output on another device) at one line."""

    op: str
    phase: OpPhase
    dtypes: tuple[str, ...]
    where: str
    source: SourceLine | None
    autograd_node: str | None
    count: int
    detail: str


@dataclass(frozen=True, kw_only=True, slots=True)
class OpSource:
    where: str
    code: str | None
    phase: OpPhase
    autograd_node: str | None
    count: int


@dataclass(frozen=True, kw_only=True, slots=True)
class OpFinding:
    """An unsupported or custom op, with every source line that called it."""

    op: str
    dtypes: tuple[str, ...]
    phases: tuple[OpPhase, ...]
    count: int
    error: str
    sources: tuple[OpSource, ...] = ()
    test_first: bool | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class InventoryRow:
    op: str
    phase: OpPhase
    dtypes: tuple[str, ...]
    shapes: tuple[str, ...]
    distinct_shapes: int
    count_per_step: tuple[int, ...]
    custom: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class BackendReport:
    """What the backend itself reports over the scanned steps (torch_neuronx, torch_xla)."""

    backend: str | None = None
    fallback_ops: tuple[str, ...] = ()
    executed_ops: tuple[str, ...] | None = None
    api: tuple[str, ...] | None = omit_none()
    fallback_counts: dict[str, int] | None = omit_none()
    note: str | None = omit_none()
    errors: tuple[str, ...] | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Fallbacks:
    backend: BackendReport
    device_mismatch: tuple[Finding, ...] = ()
    copies: tuple[Finding, ...] = ()
    #: ops the scan saw reach a catch-all that runs on the CPU (no kernel of the device's
    #: own: the dispatcher's registrations), found whatever the backend's record says
    no_device_kernel: tuple[Finding, ...] | None = omit_none()

    def ops(self) -> tuple[str, ...]:
        """Every op that ran on the CPU, by name: the backend's record and the scan's."""
        found = set(self.backend.fallback_ops) | {f.op for f in self.no_device_kernel or ()}
        return tuple(sorted(found))


@dataclass(frozen=True, kw_only=True, slots=True)
class ScanError:
    type: str
    message: str
    where: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class PlainRun:
    """A step without the scan's CPU crutch: does the device really fail?"""

    ran: bool
    failed: bool | None
    error: ScanError | None
    note: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class BreakReason:
    reason: str
    where: str | None
    count: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Explain:
    """``torch._dynamo.explain`` on the first forward call."""

    graphs: int | None = None
    graph_breaks: int | None = None
    ops_in_graphs: int | None = None
    reasons: tuple[BreakReason, ...] = ()
    error: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Fullgraph:
    passed: bool | None = None
    error: str | None = None
    inferred_from: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class RecompileReason:
    function: str
    reason: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Recompilations:
    calls: int | None = None
    compilations: int | None = None
    recompilations: int | None = None
    reasons: tuple[RecompileReason, ...] = ()
    note: str | None = omit_none()
    error: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class GraphProbes:
    """The torch.compile probes (``eager`` backend: no compiler needed)."""

    backend: str | None = None
    note: str | None = None
    ran_on: str | None = None
    skipped: str | None = omit_none()
    device_error: str | None = omit_none()
    explain: Explain | None = omit_none()
    fullgraph: Fullgraph | None = omit_none()
    recompilations: Recompilations | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Versions:
    python: str | None
    torch: str | None
    backend_packages: dict[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class OpsSummary:
    ops: int
    op_calls_per_step: tuple[int, ...]
    custom_ops: int
    unsupported: int
    fallbacks: int
    host_syncs: int
    copies: int
    graph_breaks: int | None
    fullgraph: bool | None
    recompilations: int | None


@dataclass(frozen=True, kw_only=True, slots=True)
class OpsCensus:
    """``ops.json``: what a scan found (a scan that failed says so in ``scan_error``)."""

    device: str | None = None
    steps_scanned: int = 0
    first_step: int = 0
    custom_ops: tuple[OpFinding, ...] = ()
    unsupported: tuple[OpFinding, ...] = ()
    fallbacks: Fallbacks | None = None
    host_syncs: tuple[Finding, ...] = ()
    plain_run: PlainRun | None = None
    graphs: GraphProbes | None = None
    inventory: tuple[InventoryRow, ...] = ()
    versions: Versions | None = None
    summary: OpsSummary | None = None
    clean: bool = False
    scan_error: ScanError | None = None
    dropped_findings: int = 0
    scan_s: float | None = None
    method: str | None = None
    #: the scan ran after the timed steps raised (a failed side's bundle)
    after_failure: bool = False
