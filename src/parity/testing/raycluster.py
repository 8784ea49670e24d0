"""A local Ray cluster for tests and benchmarks: a head and worker nodes on this machine,
each worker with its own custom resource (``side-a``, ``side-b``). Every node is a ``ray
start --block`` in its own process group, so whoever started it stops exactly that (or
kills one node mid-side) by the group's id, never Ray processes by name.

Nothing listens on the machine's outward address for the head's Ray client server: it
listens on 127.0.0.1 (and the node address, ``NODE_IP``) only. Ray turns a node address
of ``127.0.0.1`` or ``localhost`` into the machine's outward address
(``resolve_ip_for_localhost``) and binds its servers there, so every node is given
another loopback address, 127.0.0.2 (all of 127.0.0.0/8 is the loopback device on
Linux), which Ray keeps as given."""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from parity.testing.pace import patience as patience  # re-exported: the fixtures wait by it


def listening(port: int) -> list[str]:
    """The local addresses a TCP socket on ``port`` listens on (Linux: ``/proc/net/tcp``
    and ``tcp6``), e.g. ``['127.0.0.1']``."""
    found = []
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        with contextlib.suppress(OSError), open(table) as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                addr, _, hexport = local.partition(":")
                if state == "0A" and int(hexport, 16) == port and len(addr) == width:
                    found.append(_address(addr))
    return sorted(found)


def _address(hexaddr: str) -> str:
    """An address of ``/proc/net/tcp*`` (little-endian 32-bit words) as text."""
    raw = b"".join(bytes.fromhex(hexaddr[i : i + 8])[::-1] for i in range(0, len(hexaddr), 8))
    if len(raw) == 16 and raw[:12] == b"\0" * 10 + b"\xff\xff":
        raw = raw[12:]  # an IPv4-mapped IPv6 address
    return socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw)


#: ports handed to servers started on purpose: above Ray's worker ports (10002-19999 by
#: default) and below the kernel's ephemeral range (Linux: 32768 and up), so that no
#: process binding port 0 (a Ray component, a client) takes one between its pick and
#: its server's bind
PICKED_PORTS = range(20000, 32768)


def free_port() -> int:
    """A port free now in ``PICKED_PORTS``, chosen at random (else any free port)."""
    for port in random.sample(PICKED_PORTS, 64):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def descendants(pid: int) -> list[int]:
    """Every process under ``pid`` now (``runner.reaper.children``, level by level)."""
    from parity.runner.reaper import children

    found: list[int] = []
    todo = [pid]
    while todo:
        below = children(todo.pop())
        found += below
        todo += below
    return found


#: the nodes' environment: no usage stats; the head's Ray client server waits up to 180 s
#: (not Ray's 30) for the per-client server it starts for each connection: on a loaded test
#: machine that process's start (importing Ray) can take longer than 30 s, and the connection
#: failed with "Initialization failure from server"; and gRPC's fork handlers off. The head's
#: Ray client proxy forks each per-client server while its own gRPC threads run, and with
#: the handlers on (grpcio's default, or ``true``) the child can die at once ("Check failed:
#: next_worker->state == KICKED", ray-project/ray#63202), often on the first join after a
#: start, and the driver waits out the timeout above before it joins again
#: (``benchmarks/cluster_join.py`` counts it). The child only execs, so it needs no
#: handlers, and with them off no join waited
#: (benchmarks/cluster_join.py).
RAY_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S": "180",
    "GRPC_ENABLE_FORK_SUPPORT": "false",
}


STORE_BYTES = 80 * 1024 * 1024
#: every node's address: a loopback one that Ray does not replace by the outward one
NODE_IP = "127.0.0.2"


@dataclass
class RayCluster:
    gcs: str
    client: str
    root: Path
    #: the nodes' environment over this process's (``local_cluster``: ``RAY_ENV`` unless
    #: given; a name set to None is left out, as a node started without it)
    env: Mapping[str, str | None]
    nodes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    #: the head's dashboard (``http://HOST:PORT``, where Ray Jobs are submitted), or None
    #: where the cluster was started without one
    dashboard: str | None = None

    def kill(self, name: str) -> None:
        """SIGKILL a node as a machine dies: its whole process group (its raylet) and
        every process under it, whatever group it moved to (a Ray worker running an
        actor outlived its raylet by seconds on a loaded machine and kept answering)."""
        proc = self.nodes[name]
        under = descendants(proc.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in under:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=60)

    def client_server_failures(self) -> int:
        """How many per-client servers the head's Ray client proxy saw die at their start
        (its log; each cost a client the head's channel timeout, then a join again)."""
        logs = self.root / "session_latest" / "logs" / "ray_client_server.err"
        text = logs.read_text(errors="replace") if logs.is_file() else ""
        return text.count(SPECIFIC_SERVER_FAILED)

    def add(self, name: str) -> None:
        """Start a worker node with the resource ``name`` (again, after ``kill``). One at
        a time: two ``ray start`` on one node address at once never both joined here."""
        before = active(_status(self.gcs))
        log = self.root / f"{name}.log"
        self.nodes[name] = _ray(
            f"--address={self.gcs}", f"--node-ip-address={NODE_IP}", "--num-cpus=1",
            f'--resources={{"{name}": 1}}', f"--object-store-memory={STORE_BYTES}",
            f"--dashboard-agent-listen-port={free_port()}", log=log, env=self.env,
        )  # fmt: skip
        _started(self.nodes[name], log, patience(180))
        _ready(self.gcs, [n for n in self.nodes if n != "head"], before, patience(180))


def _ray(*args: str, log: Path, env: Mapping[str, str | None]) -> subprocess.Popen[bytes]:
    exe = Path(sys.executable).with_name("ray")
    environ = {**os.environ, **{k: v for k, v in env.items() if v is not None}}
    for name in (k for k, v in env.items() if v is None):
        environ.pop(name, None)
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(exe), "start", "--block", "--disable-usage-stats", *args],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=environ,
        )  # fmt: skip


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"ray start ended: {log.read_text()[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise RuntimeError(f"ray did not listen on {port} in {timeout} s: {log.read_text()[-2000:]}")


#: what the head's Ray client proxy logs where a per-client server died at its start
#: (``ray.util.client.server.proxier``)
SPECIFIC_SERVER_FAILED = "SpecificServer startup failed"

#: what ``ray start`` prints once its node runs (``ray.scripts.scripts.start``)
STARTED = "Ray runtime started."


def _started(proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    """Wait for ``ray start`` to print that its node runs, reading its log: each ``ray
    status`` that ``_ready`` polls with is a process importing Ray (seconds of CPU)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if STARTED in log.read_text(errors="replace"):
            return
        time.sleep(0.2)
    if proc.poll() is not None:
        raise RuntimeError(f"ray start ended: {log.read_text()[-2000:]}")


def _status(gcs: str) -> str:
    """``ray status`` from a subprocess, so this process never joins the cluster itself;
    what it printed, else why it printed nothing (a waiting fixture says it)."""
    exe = Path(sys.executable).with_name("ray")
    try:
        done = subprocess.run(
            [str(exe), "status", f"--address={gcs}"],
            capture_output=True,
            text=True,
            timeout=patience(30),
        )
    except subprocess.TimeoutExpired as exc:  # it printed, then lingered
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return out or f"(ray status printed nothing in {exc.timeout:.0f} s)"
    if done.stdout:
        return done.stdout
    return f"(ray status exited {done.returncode}: {done.stderr.strip()[-1000:] or 'no output'})"


def totals(status: str) -> dict[str, float]:
    """The cluster's resource totals from ``ray status`` (``0.0/1.0 side-a`` -> 1.0)."""
    usage = status.split("Total Usage:", 1)[-1].split("\n\n", 1)[0]
    found = (re.match(r"\s*\S+/([\d.]+)\S* (\S+)\s*$", line) for line in usage.splitlines())
    return {m.group(2): float(m.group(1)) for m in found if m}


def active(status: str) -> set[str]:
    """The ids of the nodes ``ray status`` lists as active."""
    listed = status.split("Active:", 1)[-1].split("Pending:", 1)[0] if "Active:" in status else ""
    return set(re.findall(r"node_[0-9a-f]+", listed))


def _ready(gcs: str, workers: Sequence[str], before: set[str], timeout: float) -> None:
    """Wait until a node not in ``before`` has joined and the cluster is the head and one
    live node per worker name: that many active nodes and each name's resource exactly
    once. A node killed a moment ago stays listed, resource and all, until the head's
    health checks give up on it, so counts alone took the dead node for its successor."""
    deadline = time.monotonic() + timeout
    seen = ""
    while time.monotonic() < deadline:
        seen = _status(gcs)
        nodes, have = active(seen), totals(seen)
        if (
            nodes - before
            and len(nodes) == 1 + len(workers)
            and all(have.get(name) == 1.0 for name in workers)
        ):
            return
        time.sleep(2)
    raise RuntimeError(
        f"the cluster did not become the head and {', '.join(workers)} in {timeout:.0f} s "
        f"(load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores); ray status last said: "
        f"{seen[-1500:] or '(nothing)'}"
    )


@contextlib.contextmanager
def local_cluster(
    workers: Sequence[str] = ("side-a", "side-b"),
    *,
    env: Mapping[str, str | None] | None = None,
    dashboard: bool = False,
) -> Iterator[RayCluster]:
    """A head (no CPUs of its own) and one worker node per name, each with one CPU and
    the resource ``name``; every node killed and its files removed at the end. ``env``:
    the nodes' environment over this process's, ``RAY_ENV`` by default; ``dashboard``:
    the head serves its dashboard on 127.0.0.1 (Ray Jobs are submitted to it)."""
    root = Path(tempfile.mkdtemp(prefix="parity-ray-"))
    gcs_port, client_port = free_port(), free_port()
    cluster = RayCluster(
        gcs=f"{NODE_IP}:{gcs_port}",
        client=f"ray://127.0.0.1:{client_port}",
        root=root,
        env=dict(RAY_ENV if env is None else env),
    )
    dashboard_port = free_port()
    shown = [f"--include-dashboard={str(dashboard).lower()}", "--dashboard-host=127.0.0.1"]
    try:
        cluster.nodes["head"] = _ray(
            "--head", f"--node-ip-address={NODE_IP}", f"--port={gcs_port}",
            f"--ray-client-server-port={client_port}", "--num-cpus=0",
            f"--dashboard-port={dashboard_port}", f"--dashboard-agent-listen-port={free_port()}",
            f"--temp-dir={root}", f"--object-store-memory={STORE_BYTES}", *shown,
            log=root / "head.log", env=cluster.env,
        )  # fmt: skip
        _wait_port(client_port, cluster.nodes["head"], root / "head.log", patience(120))
        if dashboard:
            _wait_port(dashboard_port, cluster.nodes["head"], root / "head.log", patience(120))
            cluster.dashboard = f"http://127.0.0.1:{dashboard_port}"
        for name in workers:
            cluster.add(name)
        yield cluster
    finally:  # every node's process group, killed: nothing to drain
        for name in reversed(list(cluster.nodes)):
            cluster.kill(name)
        shutil.rmtree(root, ignore_errors=True)
