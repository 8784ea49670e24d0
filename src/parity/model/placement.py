"""Where a side runs on a Ray cluster: what was asked (``ClusterPlan``, from ``--cluster``
and ``--place`` or a plan's ``[place]`` table) and where it ran (``Placement``, recorded in
each bundle's environment and in the verdict's sides)."""

from __future__ import annotations

from dataclasses import dataclass, field

from parity.model.codec import omit_none


@dataclass(frozen=True, kw_only=True, slots=True)
class Resource:
    """A Ray resource a side asks its node for: ``GPU``, ``neuron_cores``, ``CPU`` or a
    custom node resource (``side-a``), and how much of it."""

    name: str
    amount: float = 1.0

    def __str__(self) -> str:
        return self.name if self.amount == 1 else f"{self.name}:{self.amount:g}"


@dataclass(frozen=True, kw_only=True, slots=True)
class ClusterPlan:
    """Run the sides on a Ray cluster: its address (``ray://HOST:PORT``, or ``auto`` for
    ``RAY_ADDRESS``) and the resource each role asks for (a role not named: the default
    of its device)."""

    address: str
    place: dict[str, Resource] = field(default_factory=dict)
    #: seconds a side waits for a node with its resource (``--wait``)
    wait_s: float = 30 * 60.0
    #: how many times a job whose node is lost runs again elsewhere (``--node-retries``)
    node_retries: int = 1


@dataclass(frozen=True, kw_only=True, slots=True)
class NodeLost:
    """An infrastructure event: a node lost while it ran one of the side's jobs, which
    then ran again on another node (never the side's own failure)."""

    node_id: str
    hostname: str
    reason: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Placement:
    """The node a side's processes ran on."""

    node_id: str
    hostname: str
    resource: str
    cluster: str
    #: the cloud's instance type and zone, where its metadata service answered
    instance_type: str | None = omit_none()
    zone: str | None = omit_none()
    #: thread variables Ray set on the side's actor and parity removed, so that its
    #: processes run with the threads a local run on the node has (Ray sets
    #: ``OMP_NUM_THREADS`` to the CPUs an actor asks for: 1 for a side that asks none)
    unset: dict[str, str] | None = omit_none()
    #: the nodes lost while this job ran before, each an infrastructure event
    lost: tuple[NodeLost, ...] | None = omit_none()
