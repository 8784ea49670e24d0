"""The worker: one side, one fresh process, phases timed apart.

Run as ``python -m parity.runner.worker BUNDLE_TMP_DIR``. The directory holds
``job.json``; the worker writes the bundle's files into it and ``manifest.json`` with
status ``ok`` last. A Python exception is written to ``error.json`` (exit code 3); a
crash leaves no ``error.json`` and the parent records the signal.

Timing: every timed region ends with the device's synchronize and is read with
``time.perf_counter_ns``; async devices (CUDA, ``neuron``) return before the work is
done, so a timer without the synchronize would measure dispatch, not work. Phases: start
and import (from the parent's launch), load and move to the device, the first step
(compile or graph capture), warm-up until the step time is steady, and steady state.
"""

from __future__ import annotations

import sys
import time

_T0 = time.perf_counter_ns()

import contextlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

_phase = "import"


def main(argv: list[str]) -> int:
    global _phase
    tmp = Path(argv[0])
    from parity.runner.job import ERROR_FILE, JOB_FILE, Job

    job = Job.read(tmp / JOB_FILE)
    try:
        from parity.runner.phases import run_side

        run_side(job, tmp, started_ns=_T0, set_phase=_set_phase)
    except BaseException as exc:  # the parent needs every failure, KeyboardInterrupt too
        # the first failure wins: under torchrun, other ranks fail after it
        with contextlib.suppress(FileExistsError), (tmp / ERROR_FILE).open("x") as f:
            f.write(json.dumps(_error(exc)))
        _scan_after_failure(exc)
        return 3
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        # torch 2.13 can abort in static destructors of communication threads at exit
        # ("terminate called without an active exception"): the bundle is complete, leave now
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


def _scan_after_failure(exc: BaseException) -> None:
    """If the steps raised, list every unsupported op anyway (``ops.json``); never raises."""
    try:
        from parity.probes.scan import failure_scan

        failure_scan(exc)
    except Exception:  # the error already recorded is what matters
        return


def _set_phase(name: str) -> None:
    global _phase
    _phase = name


def _error(exc: BaseException) -> dict[str, Any]:
    return {
        "type": type(exc).__name__,
        "message": str(exc),
        "phase": _phase,
        "traceback": traceback.format_exc(limit=20),
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
