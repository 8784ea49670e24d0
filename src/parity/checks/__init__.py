"""``parity check``: rollback, failure recovery and sustained load (soak).

Each check runs its parts in fresh worker processes through the launcher, writes their
bundles and a ``check.json`` under ``--out`` (see ``parity.checks.common``), and exits 0
(pass), 1 (fail) or 2 (bad input). A passing check ticks the verdict's "not yet proven"
list of a comparison on the same sides (``parity compare --checks DIR,...``, or
``OUT/checks/<name>/check.json`` beside the sides, which ``parity diff`` reads too).

This package's ``__init__`` stays light (the CLI imports it on every start).
"""

#: soak bounds: relative latency drift per hour; host RSS and device allocated growth in
#: MiB per minute; the fraction of the run left out as warm-up
DEFAULT_MAX_DRIFT = 0.10
DEFAULT_MAX_GROWTH_MIB = 1.0
DEFAULT_WARMUP = 0.1
