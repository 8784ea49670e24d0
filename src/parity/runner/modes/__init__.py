"""The worker's modes: one class per way of running a side, sharing one session.

=============  ==============================================================
``measure``    timed steps, phases apart (``parity run``, ``parity compare``)
``reference``  the fp64 CPU reference: the whole run and the probe in float64
``expected``   the whole run and the probe on the CPU at the target's precision
``scan``       the op scan instead of timed steps (``parity scan``)
``train_ckpt`` training steps around a checkpoint (``parity check rollback``)
``soak``       steps for a fixed duration, in windows (``parity check soak``)
``script``     a user's unmodified script under parity's hooks (script mode)
``freeze``     a workload resolved and frozen for the parent (user code in workers only)
=============  ==============================================================
"""

from __future__ import annotations

from parity.model.job import Mode as ModeName
from parity.runner.modes.base import Mode
from parity.runner.modes.freeze import Freeze
from parity.runner.modes.measure import Measure
from parity.runner.modes.reference import Expected, Reference
from parity.runner.modes.scan import Scan
from parity.runner.modes.script import Script
from parity.runner.modes.soak import Soak
from parity.runner.modes.train_ckpt import TrainCkpt

MODES: dict[ModeName, type[Mode]] = {
    cls.name: cls for cls in (Measure, Reference, Expected, Scan, TrainCkpt, Soak, Script, Freeze)
}


def mode_for(name: ModeName) -> Mode:
    """The mode object a job's ``mode`` names."""
    return MODES[name]()


__all__ = ["MODES", "Mode", "mode_for"]
