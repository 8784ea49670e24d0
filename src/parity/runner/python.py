"""How parity starts Python for its own processes: isolated from the working directory.

``python -m MODULE`` puts the current directory first on ``sys.path``, so a ``json.py``,
``numpy.py`` or ``secrets.py`` where the user stands would be imported into every
worker (and into the zygote, before torch). parity's processes start as ``python -c
BOOT MODULE ARGS...`` instead: ``BOOT`` drops the directory that ``-c`` put first (the
empty string: ``-P`` and ``PYTHONSAFEPATH`` do the same from Python 3.11, this works
from 3.10) before anything is imported, then runs ``MODULE`` as ``__main__`` with
``sys.argv`` as ``python -m`` would set it. A user's workload file has its own directory
added when that file is imported (``parity.plugins.import_file``); a script runs with
its own directory first, as ``python script.py`` would (script mode).

torchrun runs the worker through ``--no-python`` with the same command, so its ranks are
isolated too.
"""

from __future__ import annotations

import sys

#: the bootstrap ``python -c`` runs: no working directory on the path, then the module
BOOT = (
    "import sys\n"
    "if sys.path and sys.path[0] == '': del sys.path[0]\n"
    "del sys.argv[0]\n"
    "import runpy\n"
    "runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)\n"
)


def module_command(module: str, *args: str, flags: tuple[str, ...] = ()) -> list[str]:
    """The command line that runs ``python -m module args`` without the working directory
    on ``sys.path`` (``flags``: interpreter options such as ``-X faulthandler``)."""
    return [sys.executable, *flags, "-c", BOOT, module, *args]
