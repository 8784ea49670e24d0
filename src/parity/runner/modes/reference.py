"""``reference``: the fp64 CPU reference, the numerics probe with the model and the float
data in float64. Its bundle holds ``capture.json`` and ``capture.safetensors`` only."""

from __future__ import annotations

from typing import ClassVar

import torch

from parity.model.job import Mode as ModeName
from parity.runner.documents import numerics_probe, write_capture
from parity.runner.load import frozen_inputs, load_model
from parity.runner.modes.base import Mode
from parity.runner.session import SideSession
from parity.spec import SideSpec
from parity.workloads.base import RunContext


class Reference(Mode):
    name: ClassVar[ModeName] = "reference"
    join_group: ClassVar[bool] = False

    def run(self, session: SideSession) -> None:
        session.enter("reference")
        workload = session.require_workload()
        weights, data = frozen_inputs(session)
        data64 = {k: v.double() if v.is_floating_point() else v for k, v in data.items()}
        ctx = RunContext(
            device=torch.device("cpu"), side=SideSpec(device="cpu"), autocast_type="cpu"
        )
        probe, tensors = numerics_probe(
            workload, lambda: load_model(workload, weights).double(), data64, ctx
        )
        write_capture(session, probe, tensors)
        session.finish()
