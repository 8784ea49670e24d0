"""``scan`` (``parity scan``): the op scan instead of timed steps; the bundle holds
``ops.json``. A scan that stops at a failure other than an unsupported op fails the side
(the workload fails there on any device?), with ``ops.json`` kept."""

from __future__ import annotations

from typing import ClassVar

from parity.bundle import OPS
from parity.model.job import Mode as ModeName
from parity.probes.scan import scan
from parity.runner.load import load
from parity.runner.modes.base import Mode
from parity.runner.session import SideSession


class Scan(Mode):
    name: ClassVar[ModeName] = "scan"

    def run(self, session: SideSession) -> None:
        loaded = load(session)
        session.enter("scan")
        census = scan(
            loaded.runner, loaded.model, session.device, environment=session.manifest.environment
        )
        session.write(OPS, census)
        err = census.scan_error
        if err is not None:
            raise RuntimeError(
                f"the scan stopped at {err.where or 'an unknown line'}: {err.type}: "
                f"{err.message} (not an unsupported op: the workload fails here on any device?)"
            )
        session.finish()
