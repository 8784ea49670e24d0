"""Questions about this machine's accelerator, asked in a short-lived subprocess.

The long-lived parent never starts a device runtime: TorchNeuron's runtime reserves every
NeuronCore for the first process that starts it until that process exits (whether
``is_available()`` or ``device_count()`` start it is not documented), and a CUDA context
in the parent breaks the workers forked from it. So what the parent wants to know (which
accelerator ``torch.accelerator`` reports, for a default target) is asked by a child that
imports torch and the plugins, answers in one line of JSON and exits, releasing whatever
it started, for every device alike.

Run as ``python -m parity.devices.probe`` (what :func:`accelerator_type` does).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

log = logging.getLogger("parity")

#: how long the child may take (importing torch and a backend, starting its runtime)
TIMEOUT_S = 300.0


def accelerator_type(timeout_s: float = TIMEOUT_S) -> str | None:
    """The device type ``torch.accelerator`` reports in a fresh process with this
    environment and parity's plugins (None: no accelerator, or the child could not say)."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "parity.devices.probe"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=dict(os.environ),
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("could not ask a subprocess for this machine's accelerator: %s", exc)
        return None
    lines = done.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if done.returncode == 0 and lines else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        log.warning("the accelerator probe failed (exit %s): %s", done.returncode, tail[0])
        return None
    found = answer.get("type")
    return found if isinstance(found, str) and found else None


def _answer() -> dict[str, str | None]:
    """In the child: the accelerator torch reports, after the plugins load."""
    import torch

    from parity.plugins import load_plugins

    load_plugins()
    accel = getattr(torch, "accelerator", None)
    if accel is None or not accel.is_available():
        return {"type": None}
    current = accel.current_accelerator()
    return {"type": current.type if current is not None else None}


if __name__ == "__main__":
    print(json.dumps(_answer()))
