"""The typed contracts of parity: everything that crosses a boundary, as frozen dataclasses.

One module per document family, all decoded and encoded by :mod:`parity.model.codec`
(strict on load: unknown keys, wrong types, non-finite numbers are errors naming the key
path); ``parity schema`` prints JSON Schemas generated from these classes.

- :mod:`~parity.model.workload`: fingerprint parts, the workload's description and the
  reference to it that every bundle carries;
- :mod:`~parity.model.job`: what a parent hands a worker (``job.json``), the worker's
  error report and its events;
- :mod:`~parity.model.manifest`: ``manifest.json`` (what ran, where, the settings that
  were resolved, how it ended) and the environment;
- :mod:`~parity.model.metrics`: ``metrics.json`` (phases, samples, memory, throughput,
  latency, FLOPs);
- :mod:`~parity.model.numerics`: ``numerics.json`` and ``capture.json``;
- :mod:`~parity.model.ops`: ``ops.json``, the op census of a scan;
- :mod:`~parity.model.side`: ``side.json``, how measuring a side ended;
- :mod:`~parity.model.checks`: ``check.json``;
- :mod:`~parity.model.verdict`: ``verdict.json`` and every section of it.
- :mod:`~parity.model.bundle`: a loaded bundle and a side's runs, held in memory (the
  documents above and their tensors), what the judge and the sinks take.

The model imports nothing of parity but the side and workload specs (``parity.model.spec``) and
the errors: every layer may use it.
"""

SCHEMA_VERSION = 2
