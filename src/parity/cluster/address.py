"""The cluster a comparison asks for: ``--cluster`` and ``--place`` parsed, the cluster
reached and its nodes checked for the resources the sides ask for, before anything runs
(one line naming the problem and the fix, within seconds)."""

from __future__ import annotations

import logging
import os
import re
import socket
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from parity.errors import OptionError, UsageError
from parity.model.placement import ClusterPlan, Resource
from parity.model.spec import SideSpec
from parity.safety.redact import redact
from parity.safety.urls import checked

log = logging.getLogger(__name__)

#: seconds to reach the cluster's address before calling it unreachable
CONNECT_TIMEOUT_S = 5.0
_PLACE = re.compile(r"^([A-Za-z][\w-]*)=([A-Za-z][\w.-]*)(?::([0-9.]+))?$")
DEFAULT_CLIENT_PORT = 10001
#: the roles a side can be placed as: a comparison's two, a run's, a scan's, a soak's or
#: a scaling's one
ROLES = ("baseline", "target", "run", "scan", "soak", "scale")


def parse_place(items: Iterable[str] | Mapping[str, object]) -> dict[str, Resource]:
    """``SIDE=RESOURCE[:AMOUNT]`` items (or a plan's ``[place]`` table) -> role -> resource."""
    pairs = [f"{k}={v}" for k, v in items.items()] if isinstance(items, Mapping) else list(items)
    place: dict[str, Resource] = {}
    for item in pairs:
        m = _PLACE.match(item.strip())
        if not m or m.group(1) not in ROLES:
            raise OptionError(
                f"--place {item!r}: give SIDE=RESOURCE[:AMOUNT] with SIDE baseline or target "
                "(run, scan, soak or scale for parity run, scan, check soak and scale), "
                "e.g. --place target=neuron_cores:2"
            )
        amount = float(m.group(3)) if m.group(3) else 1.0
        if amount <= 0:
            raise OptionError(f"--place {item!r}: the amount must be positive")
        place[m.group(1)] = Resource(name=m.group(2), amount=amount)
    return place


def resource_for(side: SideSpec, plan: ClusterPlan, role: str) -> Resource:
    """What ``role`` asks its node for: as placed, else its device's default (``GPU`` for
    cuda, ``neuron_cores`` for neuron, ``CPU`` for cpu: the device adapter's)."""
    if role in plan.place:
        return plan.place[role]
    from parity.devices.registry import get_device

    name = get_device(side.device).cluster_resource
    return Resource(name=name, amount=float(side.nproc or 1))


def resolve_address(address: str) -> str:
    """``auto`` -> ``$RAY_ADDRESS``; anything else as given."""
    if address == "auto":
        found = os.environ.get("RAY_ADDRESS", "").strip()
        if not found:
            raise UsageError(
                "--cluster auto uses RAY_ADDRESS, which is not set: set it or give "
                "--cluster ray://HOST:PORT"
            )
        return checked(found, "RAY_ADDRESS", "ray://HOST:PORT")
    return checked(address, "--cluster", "ray://HOST:PORT")


def _host_port(address: str) -> tuple[str, int]:
    rest = address.split("://", 1)[-1].rstrip("/")
    rest = rest.rsplit("@", 1)[-1]
    host, _, port = rest.rpartition(":")
    if not host:
        return rest, DEFAULT_CLIENT_PORT
    try:
        return host.strip("[]"), int(port)
    except ValueError:
        raise UsageError(
            f"--cluster {redact(address)}: not HOST:PORT: give ray://HOST:PORT or auto"
        ) from None


def reachable(address: str) -> None:
    """A TCP connection to the address within ``CONNECT_TIMEOUT_S``, or UsageError."""
    host, port = _host_port(address)
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        raise UsageError(
            f"--cluster {redact(address)}: nothing answers at {host}:{port} "
            f"({exc.strerror or exc}): start the cluster (ray start --head) or fix the address"
        ) from None


#: a Ray client's init refused by the head, with the head's traceback after this line: tried
#: once more. The head's per-client server did not start in time on a busy head, or died as
#: the head's client proxy forked it (ray-project/ray#63202: grpcio's fork handlers; the
#: head's ``GRPC_ENABLE_FORK_SUPPORT=false`` avoids it, docs/cluster.md)
#: Ray client's connection timeouts (seconds, as its environment variables take them)
CLIENT_TIMEOUTS = {
    "RAY_CLIENT_INITIAL_CONNECTION_TIMEOUT_S": "3",
    "RAY_CLIENT_MAX_CONNECTION_TIMEOUT_S": "4",
}
SERVER_INIT_FAILED = "Initialization failure from server"
JOIN_ATTEMPTS = 2


def connect(address: str) -> Any:
    """Ray, connected to the cluster at ``address`` (``ray://HOST:PORT`` or a GCS
    ``HOST:PORT``); UsageError where it is missing or unreachable."""
    # a head that takes the connection and never answers: refused within seconds, not
    # after Ray client's 5 + 10 + 20 s of retries (read when Ray's client is imported;
    # the user's own settings win)
    for name, seconds in CLIENT_TIMEOUTS.items():
        os.environ.setdefault(name, seconds)
    try:
        import ray
    except ImportError:
        raise UsageError("--cluster needs Ray: pip install 'parity[cluster]'") from None
    from parity.cluster.jobs import SUBMITTED_VAR

    if os.environ.get(SUBMITTED_VAR) and os.environ.get("RAY_ADDRESS"):
        # a submitted job's driver: the cluster it runs in (its GCS, as the job manager
        # set it), not the client address the submitter reached it by
        address = os.environ["RAY_ADDRESS"]
    address = resolve_address(address)
    reachable(address)
    if ray.is_initialized():
        return ray
    for attempt in range(JOIN_ATTEMPTS):
        try:
            with warnings.catch_warnings():  # its timeout's warning: the error says it
                warnings.simplefilter("ignore")
                ray.init(
                    address=address,
                    namespace="parity",
                    logging_level=logging.ERROR,
                    log_to_driver=False,
                    configure_logging=False,
                )
            break
        except Exception as exc:
            lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
            server_side = bool(lines) and lines[0].startswith(SERVER_INIT_FAILED)
            if server_side and attempt + 1 < JOIN_ATTEMPTS:
                log.warning(
                    "parity: --cluster %s: the head started no Ray client server for this "
                    "driver (see the head's ray_client_server.err); joining again",
                    redact(address),
                )
                ray.shutdown()
                continue
            # the first line, and the cause where the server sent its traceback
            said = lines[0] if lines else type(exc).__name__
            if len(lines) > 1:
                said = f"{said} {lines[-1]}"
            raise UsageError(
                f"--cluster {redact(address)}: cannot join the cluster ({redact(said)}): check "
                "the address and that this Ray matches the cluster's"
            ) from None
    return ray


def check_resources(ray: Any, wanted: Mapping[str, Resource]) -> None:
    """Some alive node offers each role's resource, in the amount asked."""
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    offered = sorted({k for n in nodes for k in n.get("Resources", {}) if "node:" not in k})
    for role, res in wanted.items():
        if not any(n.get("Resources", {}).get(res.name, 0) >= res.amount for n in nodes):
            raise UsageError(
                f"--place {role}={res}: no node of the cluster has {res.name!r}"
                f"{f' x{res.amount:g}' if res.amount != 1 else ''} (its nodes offer: "
                f"{', '.join(offered) or 'nothing'}): start a node with it or change --place"
            )


def cluster_address(address: str) -> str:
    """``--cluster`` checked: not empty, and no user or password (it is stored)."""
    address = address.strip()
    if not address:
        raise OptionError("--cluster is empty: give ray://HOST:PORT or auto")
    if "://" not in address and "@" in address:
        raise OptionError(  # HOST:PORT with a user: not a URL, but a credential all the same
            "--cluster carries a user or password, which would be stored in request.json: "
            "give ray://HOST:PORT"
        )
    if address == "auto" and os.environ.get("RAY_ADDRESS", "").strip():
        resolve_address(address)  # RAY_ADDRESS checked before anything runs
        return address
    return checked(address, "--cluster", "ray://HOST:PORT")


def cluster_plan(
    address: str | None,
    place: Mapping[str, Resource] | None,
    roles: tuple[str, ...] = ("baseline", "target"),
    *,
    wait_s: float | None = None,
    retries: int | None = None,
) -> ClusterPlan | None:
    """``--cluster`` and ``--place`` together (``--place``, ``--wait`` and
    ``--node-retries`` need a cluster, and ``--place`` names the command's ``roles`` only)."""
    if address is None:
        for flag, given in (("--place", place), ("--wait", wait_s), ("--node-retries", retries)):
            if given:
                raise OptionError(f"{flag} needs --cluster ray://HOST:PORT (or auto)")
        return None
    for role, res in (place or {}).items():
        if role not in roles:
            raise OptionError(
                f"--place {role}={res}: this command places {' and '.join(roles)}, "
                f"e.g. --place {roles[-1]}={res}"
            )
    more: dict[str, float | int] = {}
    if wait_s is not None:
        more["wait_s"] = wait_s
    if retries is not None:
        more["node_retries"] = retries
    return ClusterPlan(address=cluster_address(address), place=dict(place or {}), **more)  # type: ignore[arg-type]
