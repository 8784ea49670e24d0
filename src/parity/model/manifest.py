"""``manifest.json``: what ran, where, with which settings, and how it ended.

The worker writes an ``incomplete`` manifest as soon as its side is set up and the
``ok`` one last; the parent writes a ``failed`` one (with the reason and the tail of the
worker's stderr) when the worker did not finish.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from parity.model.codec import omit_none
from parity.model.job import Mode
from parity.model.placement import Placement
from parity.model.spec import Precision, SideSpec
from parity.model.stack import Package
from parity.model.workload import WorkloadRef

Status = Literal["ok", "failed", "incomplete"]
#: a device setting that changes numerics or speed (TF32, threads, ...), as reported
FlagValue = str | int | float | bool | None


@dataclass(frozen=True, kw_only=True, slots=True)
class TorchInfo:
    version: str
    git_version: str | None = None
    debug: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class CpuInfo:
    model: str | None
    logical_cores: int | None


@dataclass(frozen=True, kw_only=True, slots=True)
class DeviceInfo:
    """What the device adapter reports about its device.

    ``name`` is what ``get_device_name`` says (``NVIDIA H200``; ``neuron:0`` on
    TorchNeuron), ``model`` the name in ``get_device_properties`` where it differs (the
    instance type, ``trn2``, on TorchNeuron): the spec table is searched by both
    (``devices.specs.DeviceKey``)."""

    type: str
    name: str
    count: int
    backend_packages: dict[str, str | None] = field(default_factory=dict)
    flags: dict[str, FlagValue] = field(default_factory=dict)
    #: the memory one device reports (a CPU: the host's), bytes; None: not reported
    memory_bytes: int | None = omit_none()
    #: where that figure comes from: the device's own report, else devices/specs.toml
    memory_source: str | None = omit_none()
    #: the name in the device's properties, where it differs from ``name``
    model: str | None = omit_none()
    #: the logical-core setting the device ran at (``NEURON_LOGICAL_NC_CONFIG``; None
    #: where the device has none or it was unset, the device's default)
    logical_nc_config: int | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class GlobalFlags:
    deterministic_algorithms: bool
    float32_matmul_precision: str
    num_threads: int


@dataclass(frozen=True, kw_only=True, slots=True)
class PipFreeze:
    """The installed distributions: a digest of their ``name==version`` lines and a count
    (what bundles of every parity version have, so old comparisons still see that two
    stacks differ), and the list itself, sorted by name (None in bundles written before
    parity kept it; cut at ``MAX_PACKAGES`` with ``truncated``)."""

    sha256: str
    packages: int
    installed: tuple[Package, ...] | None = omit_none()
    truncated: bool | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class Environment:
    """Everything about a worker's environment that can change a result."""

    parity: str
    python: str
    python_implementation: str
    executable: str
    platform: str
    hostname: str
    cpu: CpuInfo
    torch: TorchInfo
    device: DeviceInfo
    flags: GlobalFlags
    pip_freeze: PipFreeze
    #: allow-listed variables, credential-like ones redacted
    env: dict[str, str] = field(default_factory=dict)
    #: the cluster node the side ran on (``--cluster``); absent on this machine
    placement: Placement | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class TorchSettings:
    """torch's process-wide settings that change numerics or speed, as read in the worker
    (``parity.probes.settings``): at set-up, and around the timed steps."""

    default_dtype: str
    num_threads: int
    float32_matmul_precision: str
    deterministic_algorithms: bool
    cuda_matmul_allow_tf32: bool
    cudnn_allow_tf32: bool
    cudnn_deterministic: bool
    cudnn_benchmark: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class SettingChange:
    """A torch setting the workload's code changed after parity set the side up."""

    setting: str
    #: as parity set it up, and as it was during the timed steps
    before: str
    during: str
    #: whether it breaks the comparison's contract (a float32 side that computed in
    #: float64, or with TF32 matmuls), not only its figures
    breaks_contract: bool

    def sentence(self) -> str:
        how = "breaks the contract" if self.breaks_contract else "changes the figures"
        return (
            f"{self.setting} was {self.before} at set-up, {self.during} in the timed steps ({how})"
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class SettingJudged:
    """A torch setting the workload changed, judged across the sides: the values each
    side's timed steps ran with (``ran``, by role), whether they are alike, and whether it
    fails the comparison (it differs between the sides and changes what a side computes
    in, or it is unfair whatever the other side did)."""

    setting: str
    #: as parity set it up
    before: str
    ran: dict[str, tuple[str, ...]]
    alike: bool
    breaks_contract: bool
    unfair: bool
    fails: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class Items:
    """How many samples and tokens one step processes."""

    samples: int
    tokens: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Resolved:
    """The settings the worker actually applied, as opposed to those asked for.

    Two sides are compared on these: ``cpu+compile`` against ``neuron+compile`` differ in
    ``compile_backend`` (inductor against the adapter's default), which the side specs
    alone do not show."""

    precision: Precision
    #: ``torch.autocast`` device type and dtype (None in fp32)
    autocast_device_type: str | None
    autocast_dtype: str | None
    #: the format matmuls run in (fp32, tf32, bf16, fp16) and convolutions likewise
    matmul: str
    conv: str
    compile_backend: str | None
    threads: int
    deterministic: bool
    #: device settings ``+deterministic`` turned on
    determinism: tuple[str, ...] = ()
    emulate: str | None = None
    steps: int | None = None
    items_per_step: Items | None = None
    #: after the run: ops that refused determinism, emulated calls
    nondeterministic_ops: tuple[str, ...] | None = omit_none()
    emulated_calls: int | None = omit_none()
    #: torch's settings as they were during the timed steps, and those the workload's
    #: code changed from what parity set up (``threads`` above is what ran)
    timed: TorchSettings | None = omit_none()
    changed: tuple[SettingChange, ...] | None = omit_none()
    #: whose autocast op lists the side's autocast followed ("cuda", "cpu"): as seen on
    #: the device where it could be (``autocast_observed``), else the adapter's word
    autocast_policy: str | None = omit_none()
    #: the output dtypes of layer_norm, softmax, exp (bf16 inputs) and mm under it
    autocast_observed: dict[str, str] | None = omit_none()
    #: ``torch.compile``'s mode as it ran: the one asked for, or "default" on a backend
    #: that ignores modes (``compile_mode_ignored`` then names the one asked for)
    compile_mode: str | None = omit_none()
    compile_mode_ignored: str | None = omit_none()


@dataclass(frozen=True, kw_only=True, slots=True)
class DistInfo:
    """A torchrun side: this process's place in the job."""

    rank: int
    world_size: int
    local_rank: int
    backend: str

    @property
    def leader(self) -> bool:
        return self.rank == 0


@dataclass(frozen=True, kw_only=True, slots=True)
class FailedAt:
    """Where a run failed in the user's own code (``Manifest.failed_at``)."""

    #: the exception's type name
    type: str
    #: the phase it was raised in (``steps``, ``load``, ...)
    phase: str
    #: ``file:line`` of the innermost frame in the user's own code
    source: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Manifest:
    """What ran, where, and how it ended."""

    schema_version: int
    parity_version: str
    status: Status
    reason: str | None
    stderr_tail: str | None = omit_none()
    #: a failed run's error where the worker raised in the user's own code: its type and
    #: ``file:line`` (the innermost frame there), so that a workload failing alike on both
    #: sides is told from a side's failure
    failed_at: FailedAt | None = omit_none()
    role: str
    repeat: int
    mode: Mode
    side: SideSpec
    workload: WorkloadRef
    environment: Environment | None = None
    resolved: Resolved | None = None
    started_unix: float | None = None
    finished_unix: float | None = None
    pid: int | None = None
    #: how the worker was started: forked from the zygote, or a new interpreter
    launch: Literal["fork", "spawn", "inline"] | None = omit_none()
    distributed: DistInfo | None = omit_none()

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def script_mode(self) -> bool:
        return self.mode == "script"


@dataclass(frozen=True, kw_only=True, slots=True)
class LogCut:
    """One log a bundle keeps cut: its first and last lines, without the middle."""

    #: the file's name in the bundle (``stdout.log``, ``stderr.log``)
    name: str
    #: the bytes the process wrote to it, and the bytes left out
    written: int
    dropped: int

    def sentence(self) -> str:
        mib = 1 << 20
        return (
            f"{self.name} was cut: {self.dropped / mib:.1f} MiB of its "
            f"{self.written / mib:.1f} MiB were left out (its first and last lines are kept)"
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class Logs:
    """``logs.json``: the logs of a bundle that were cut to the size a bundle keeps
    (written only where one was)."""

    cut: tuple[LogCut, ...]
