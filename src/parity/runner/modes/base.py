"""What every worker mode is: a ``run(session)`` on a set-up :class:`SideSession`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from parity.model.job import Mode as ModeName
from parity.runner.session import SideSession


class Mode(ABC):
    """One way of running a side (time its steps, scan its ops, run a script, ...)."""

    name: ClassVar[ModeName]
    #: whether a torchrun side's processes join one process group for this mode
    join_group: ClassVar[bool] = True

    @abstractmethod
    def run(self, session: SideSession) -> None:
        """Run the side and write its bundle; ``session.finish()`` last."""
