"""Serving comparisons: one frozen HTTP load replayed against two inference endpoints.

The flow, a module each:

- ``load``: the frozen load (seeded arrivals, token-ID prompts, fingerprint);
- ``client``: one streaming request, stamped with ``perf_counter_ns``, no retries;
- ``step``: one step of the load at a rate (open loop) or a concurrency (closed loop), the
  client's own lag, and an early end once a limit already fails;
- ``metrics``: a step's figures (TTFT, E2E, TPOT, ITL, ICL) with order-statistic bounds;
- ``server``: a server command parity starts, waits for and stops by process group.

The layer measures; it never judges, indexes or reports (``judge``, ``report`` do).
Needs the ``serve`` extra (aiohttp).
"""
