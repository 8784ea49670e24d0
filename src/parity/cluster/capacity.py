"""Waiting for a side's pool with a clock: the resource a side asks for, reserved as a
Ray placement group when the side's first job is due, and waited for while the pool is
busy (another comparison holds it) or absent (an autoscaled node group at zero).

A pending placement group is the demand an autoscaler (Ray's, KubeRay's) scales a node
group up for, so waiting here is what lets a pool at zero appear. While it waits, a line
every ``LINE_EVERY_S`` says what for and for how long; past ``--wait`` the reservation is
withdrawn and the comparison ends as a capacity failure (``CapacityError``, its own exit
code), not as bad input: nothing was wrong with what the user asked."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from parity.errors import CapacityError
from parity.model.placement import Resource

log = logging.getLogger("parity")

#: seconds between the lines that say a side still waits
LINE_EVERY_S = 10.0
#: ``--wait`` when not given: long enough for a node group to scale up from zero
DEFAULT_WAIT_S = 30 * 60.0
Say = Callable[[str], None]


def bundle_of(res: Resource) -> dict[str, float]:
    """The one bundle a side reserves: its resource in its amount."""
    return {res.name: res.amount}


def offered(ray: Any, res: Resource) -> tuple[int, list[str]]:
    """How many alive nodes have ``res`` in its amount (free or not), and every resource
    the alive nodes offer (for the message)."""
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    names = sorted({k for n in nodes for k in n.get("Resources", {}) if "node:" not in k})
    having = sum(1 for n in nodes if n.get("Resources", {}).get(res.name, 0) >= res.amount)
    return having, names


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def why_waiting(ray: Any, res: Resource) -> str:
    """Why a reservation pends: every node with the resource is taken, or none has it."""
    having, names = offered(ray, res)
    if having:
        return f"{'the node' if having == 1 else f'all {having} nodes'} with it busy"
    return (
        f"no live node offers it yet (the nodes offer {', '.join(names) or 'nothing'}); "
        "an autoscaled group scales up on this demand"
    )


def reserve(
    ray: Any,
    role: str,
    res: Resource,
    wait_s: float,
    *,
    say: Say | None = None,
    every_s: float = LINE_EVERY_S,
) -> Any:
    """A placement group holding ``res`` for ``role``, once the cluster can give it: a
    line every ``every_s`` while it waits, CapacityError after ``wait_s``."""
    from ray.util.placement_group import placement_group, remove_placement_group

    tell = say or (lambda line: log.warning("parity: %s", line))
    group = placement_group([bundle_of(res)], strategy="STRICT_PACK")
    start = time.monotonic()
    while True:
        waited = time.monotonic() - start
        left = wait_s - waited
        if group.wait(timeout_seconds=max(min(every_s, left), 0.0)):
            if waited >= every_s:
                tell(f"{role}: a node with {res} is free after {_minutes(waited)}")
            return group
        waited = time.monotonic() - start
        if waited >= wait_s:
            reason = why_waiting(ray, res)
            remove_placement_group(group)
            raise CapacityError(
                f"the {role} waited {_minutes(waited)} (--wait) for a node with {res} and got "
                f"none ({reason}): free or scale up a node group with {res.name}, or give "
                "a longer --wait"
            )
        tell(
            f"{role}: waiting for a node with {res}, {why_waiting(ray, res)}: "
            f"{_minutes(waited)} of --wait {_minutes(wait_s)}"
        )


def wait_together(
    ray: Any,
    wanted: Sequence[tuple[str, Resource]],
    wait_s: float,
    *,
    say: Say | None = None,
    every_s: float = LINE_EVERY_S,
) -> None:
    """Wait until the cluster can give every role its pool at once, holding none of them
    meanwhile: one placement group of every role's bundle, which Ray reserves whole or
    not at all (pending, it holds nothing and is the demand an autoscaler sees). Removed
    once it is ready, so that each role then takes its own (``reserve``, at once) and
    gives it back after its own last job. A line every ``every_s`` names what is
    missing; CapacityError after ``wait_s``."""
    from ray.util.placement_group import placement_group, remove_placement_group

    tell = say or (lambda line: log.warning("parity: %s", line))
    group = placement_group([bundle_of(res) for _, res in wanted], strategy="SPREAD")
    start = time.monotonic()
    try:
        while True:
            waited = time.monotonic() - start
            if group.wait(timeout_seconds=max(min(every_s, wait_s - waited), 0.0)):
                if waited >= every_s:
                    tell(f"{_roles(wanted)}: nodes for each are free after {_minutes(waited)}")
                return
            waited = time.monotonic() - start
            missing = _missing(ray, wanted)
            if waited >= wait_s:
                role, res = missing[0]
                raise CapacityError(
                    f"the {role} waited {_minutes(waited)} (--wait) for a node with {res} and "
                    f"got none ({why_waiting(ray, res)}): free or scale up a node group with "
                    f"{res.name}, or give a longer --wait"
                )
            held = [f"the {role}'s {res}" for role, res in wanted if (role, res) not in missing]
            tell(
                "; ".join(
                    f"{role}: waiting for a node with {res}, {why_waiting(ray, res)}"
                    for role, res in missing
                )
                + (f" ({' and '.join(held)} not held meanwhile)" if held else "")
                + f": {_minutes(waited)} of --wait {_minutes(wait_s)}"
            )
    finally:
        remove_placement_group(group)


def _roles(wanted: Sequence[tuple[str, Resource]]) -> str:
    return " and ".join(role for role, _ in wanted)


def _missing(ray: Any, wanted: Sequence[tuple[str, Resource]]) -> list[tuple[str, Resource]]:
    """The roles whose resource the cluster has not free now (all, where each is)."""
    free = ray.available_resources()
    short = [(role, res) for role, res in wanted if free.get(res.name, 0.0) < res.amount]
    return short or list(wanted)


def release(group: Any) -> None:
    """Give a side's pool back (its actor already ended)."""
    from ray.util.placement_group import remove_placement_group

    try:
        remove_placement_group(group)
    except Exception:  # the cluster already gone: nothing is held
        log.debug("parity: a placement group was already gone", exc_info=True)
