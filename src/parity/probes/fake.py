"""A seeded fake clock with a modelled step cost, the timer seam for tests.

Like the fake timer in torch.utils.benchmark's tests, :class:`FakeClock` lets the timing
and statistics logic run deterministically on a CPU. Each modelled step costs::

    base_s * process_factor * warmup(i) * (1 + drift_per_step * k) * exp(noise_rel * Z)

- ``warmup(i)`` falls linearly from ``warmup_factor`` at step 0 of a process to 1 at step
  ``warmup_steps`` and stays 1: step ``warmup_steps`` is the first steady step (the
  planted steady-state start).
- ``Z`` is standard normal, so the noise is lognormal with median 1: the steady-state
  median step time equals ``base_s`` (times the process factor).
- ``process_factor`` is ``exp(process_noise_rel * Z')``, drawn once per process (median
  1), modelling the speed difference between fresh processes (placement, clocks, caches).
- ``k`` counts every step this clock has modelled, across processes: drift is a property
  of the machine (heating, background load), not of one process.

:meth:`FakeClock.step_times` models one fresh process: a new process factor and the
warm-up replayed. :meth:`FakeClock.step` and :meth:`FakeClock.time` offer the same model
as a clock that a fake workload advances and a timer reads.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FakeClock"]


class FakeClock:
    """Seeded synthetic step times: warm-up curve, lognormal noise, optional drift."""

    def __init__(
        self,
        seed: int,
        base_s: float,
        noise_rel: float,
        warmup_steps: int,
        warmup_factor: float,
        drift_per_step: float = 0.0,
        *,
        process_noise_rel: float = 0.0,
    ) -> None:
        if not base_s > 0:
            raise ValueError(f"base_s must be greater than 0 (got {base_s}).")
        if noise_rel < 0 or process_noise_rel < 0:
            raise ValueError("noise_rel and process_noise_rel must be 0 or greater.")
        if warmup_steps < 0:
            raise ValueError(f"warmup_steps must be 0 or greater (got {warmup_steps}).")
        if not warmup_factor >= 1:
            raise ValueError(f"warmup_factor must be 1 or greater (got {warmup_factor}).")
        self.base_s = base_s
        self.noise_rel = noise_rel
        self.warmup_steps = warmup_steps
        self.warmup_factor = warmup_factor
        self.drift_per_step = drift_per_step
        self.process_noise_rel = process_noise_rel
        self._rng = np.random.default_rng(seed)
        self._steps_total = 0  # every step modelled so far (drives the drift)
        self._process_step = 0  # steps since the current process started (drives warm-up)
        self._process_factor = 1.0
        self._now = 0.0
        self.new_process()

    @property
    def steps_total(self) -> int:
        """Steps modelled so far by this clock, over all processes."""
        return self._steps_total

    def new_process(self) -> None:
        """Start a fresh modelled process: replay the warm-up, draw a new process factor."""
        self._process_step = 0
        self._process_factor = float(np.exp(self.process_noise_rel * self._rng.standard_normal()))

    def warmup_curve(self, n: int) -> np.ndarray:
        """The noiseless warm-up multiplier for the first ``n`` steps of a process."""
        i = np.arange(n, dtype=np.float64)
        if self.warmup_steps == 0:
            return np.ones(n)
        left = np.clip(1.0 - i / self.warmup_steps, 0.0, 1.0)
        return 1.0 + (self.warmup_factor - 1.0) * left

    def _next(self, n: int) -> np.ndarray:
        curve = self.warmup_curve(self._process_step + n)[self._process_step :]
        k = np.arange(self._steps_total, self._steps_total + n, dtype=np.float64)
        drift = 1.0 + self.drift_per_step * k
        noise = np.exp(self.noise_rel * self._rng.standard_normal(n))
        self._process_step += n
        self._steps_total += n
        times: np.ndarray = self.base_s * self._process_factor * curve * drift * noise
        return times

    def step_times(self, n: int) -> list[float]:
        """Model one fresh process running ``n`` steps; return their times in seconds."""
        if n < 0:
            raise ValueError(f"n must be 0 or greater (got {n}).")
        self.new_process()
        return [float(t) for t in self._next(n)]

    def step(self) -> float:
        """Advance the clock by the next step of the current process; return its cost."""
        cost = float(self._next(1)[0])
        self._now += cost
        return cost

    def time(self) -> float:
        """The modelled time in seconds, a drop-in for ``time.perf_counter``."""
        return self._now
