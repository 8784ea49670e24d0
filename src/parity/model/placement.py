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
