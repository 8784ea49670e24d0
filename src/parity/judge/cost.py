"""Cost: per successful training run, per million tokens, per thousand requests.

Definitions (stated in every report):

- price per accelerator-hour = instance $/h / accelerators per instance (one side runs on
  one accelerator);
- overheads multiply the measured time: x (1 + retry fraction) x (1 + checkpoint
  overhead) / (1 - idle fraction);
- cost per successful training run = price per accelerator-hour x mean time of a run
  (to the target loss where one is set, else to its last step; compile and warm-up
  counted once per run) / success rate over repeats;
- cost per 1M tokens = price per hour / (tokens/s x 3600) x 1e6; per 1k requests the
  same with requests (samples) per second and 1e3;
- the target's break-even price per instance-hour makes its cost equal the baseline's;
- one-off engineering cost = hours x rate, repaid after (engineering cost / saving per
  unit) units where the target is cheaper.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from parity.bundle import Bundle, SideRuns
from parity.devices.specs import price_for
from parity.errors import UsageError
from parity.judge.speed import steady_samples


@dataclass(frozen=True, kw_only=True, slots=True)
class Price:
    usd_per_hour: float
    accelerators: int = 1
    instance: str | None = None
    source: str = "user"

    def __post_init__(self) -> None:
        if self.usd_per_hour <= 0:
            raise UsageError(f"price must be positive dollars per hour, got {self.usd_per_hour}")
        if self.accelerators < 1:
            raise UsageError(f"accelerators per instance must be >= 1, got {self.accelerators}")

    @property
    def per_accelerator_hour(self) -> float:
        return self.usd_per_hour / self.accelerators


@dataclass(frozen=True, kw_only=True, slots=True)
class CostInputs:
    prices: dict[str, Price] = field(default_factory=dict)
    run_steps: int | None = None
    engineering_hours: float = 0.0
    engineering_rate: float = 0.0
    idle_fraction: float = 0.0
    retry_fraction: float = 0.0
    checkpoint_overhead: float = 0.0

    def __post_init__(self) -> None:
        if not 0 <= self.idle_fraction < 1:
            raise UsageError(f"cost.idle_fraction must be in [0, 1), got {self.idle_fraction}")
        for name in (
            "retry_fraction",
            "checkpoint_overhead",
            "engineering_hours",
            "engineering_rate",
        ):
            if getattr(self, name) < 0:
                raise UsageError(f"cost.{name} must be 0 or more, got {getattr(self, name)}")
        if self.run_steps is not None and self.run_steps < 1:
            raise UsageError(f"cost.run_steps must be at least 1, got {self.run_steps}")

    @property
    def overhead(self) -> float:
        return (1 + self.retry_fraction) * (1 + self.checkpoint_overhead) / (1 - self.idle_fraction)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["prices"] = {k: asdict(v) for k, v in self.prices.items()}
        return d


def parse_price(text: str) -> tuple[str, Price]:
    """``SIDE=DOLLARS_PER_HOUR[:ACCELERATORS]`` with SIDE baseline or target."""
    side, sep, rest = text.partition("=")
    side = side.strip()
    if not sep or side not in ("baseline", "target"):
        raise UsageError(
            f"--price {text!r}: write baseline=DOLLARS_PER_HOUR[:ACCELERATORS] or target=..."
        )
    amount, _, accel = rest.partition(":")
    try:
        return side, Price(usd_per_hour=float(amount), accelerators=int(accel or 1))
    except ValueError:
        raise UsageError(
            f"--price {text!r}: the price and accelerator count must be numbers, "
            "e.g. target=21.50:16"
        ) from None


def _side_price(side: SideRuns, role: str, inputs: CostInputs) -> Price | None:
    if role in inputs.prices:
        return inputs.prices[role]
    name = side.first.manifest.get("environment", {}).get("device", {}).get("name")
    found = price_for(str(name)) if name else None
    if found is None:
        return None
    return Price(
        usd_per_hour=float(found["usd_per_hour"]),
        accelerators=int(found["accelerators"]),
        instance=found.get("instance"),
        source=str(found.get("source", "specs.toml")),
    )


def _run_seconds(bundle: Bundle, run_steps: int | None) -> float:
    samples = bundle.metrics.get("step_samples_s") or []
    if run_steps is None or not samples:
        return float(sum(samples))
    start = int(bundle.metrics.get("steady_from_step", 1))
    steady = steady_samples(bundle)
    median = sorted(steady)[len(steady) // 2] if steady else samples[-1]
    fixed = sum(samples[:start])  # compile and warm-up, once per run
    return float(fixed + max(run_steps - start, 0) * median)


def side_cost(
    side: SideRuns, role: str, kind: str, inputs: CostInputs, convergence: dict[str, Any] | None
) -> dict[str, Any]:
    price = _side_price(side, role, inputs)
    if price is None:
        return {"priced": False}
    per_hour = price.per_accelerator_hour
    out: dict[str, Any] = {
        "priced": True,
        "price": asdict(price),
        "usd_per_accelerator_hour": per_hour,
        "overhead": inputs.overhead,
    }
    if kind == "train":
        if convergence is not None and inputs.run_steps is None:
            seconds = convergence.get("mean_time_s")
            success = float(convergence.get("success_rate", 0.0))
            basis = f"time to loss {convergence['target_loss']:g}"
        else:
            runs = [_run_seconds(b, inputs.run_steps) for b in side.ok]
            seconds = sum(runs) / len(runs) if runs else None
            success = len(side.ok) / len(side.repeats) if side.repeats else 0.0
            basis = (
                f"{inputs.run_steps} steps (measured step times)"
                if inputs.run_steps
                else "the measured run"
            )
        out.update(basis=basis, run_seconds=seconds, success_rate=success)
        if seconds is None or success == 0:
            out["usd_per_successful_run"] = None
        else:
            out["usd_per_successful_run"] = per_hour * seconds / 3600 * inputs.overhead / success
        out["unit"], out["unit_cost"] = "successful run", out["usd_per_successful_run"]
        return out
    throughput = side.first.metrics.get("throughput") or {}
    tokens, samples = throughput.get("tokens_per_s"), throughput.get("samples_per_s")
    gen = side.first.metrics.get("generation") or {}
    if gen.get("output_tokens_per_s", {}).get("p50"):
        tokens = gen["output_tokens_per_s"]["p50"]
    out["usd_per_1m_tokens"] = (
        per_hour / (tokens * 3600) * 1e6 * inputs.overhead if tokens else None
    )
    out["usd_per_1k_requests"] = (
        per_hour / (samples * 3600) * 1e3 * inputs.overhead if samples else None
    )
    if out["usd_per_1m_tokens"] is not None:
        out["unit"], out["unit_cost"] = "1M tokens", out["usd_per_1m_tokens"]
    else:
        out["unit"], out["unit_cost"] = "1k requests", out["usd_per_1k_requests"]
    return out


def judge_cost(
    a: SideRuns,
    b: SideRuns,
    kind: str,
    inputs: CostInputs,
    speed: dict[str, Any] | None,
    convergence: dict[str, dict[str, Any]] | None,
) -> dict[str, Any]:
    conv = convergence or {}
    base = side_cost(a, "baseline", kind, inputs, conv.get("baseline"))
    target = side_cost(b, "target", kind, inputs, conv.get("target"))
    section: dict[str, Any] = {"baseline": base, "target": target, "inputs": inputs.to_dict()}
    missing = [role for role, c in (("baseline", base), ("target", target)) if not c["priced"]]
    if missing:
        section["available"] = False
        section["reason"] = (
            f"no price for the {' and '.join(missing)}: pass "
            + " ".join(f"--price {m}=DOLLARS_PER_HOUR[:ACCELERATORS]" for m in missing)
            + " or add it to the plan"
        )
        return section
    cb, ct = base.get("unit_cost"), target.get("unit_cost")
    if not cb or not ct:
        section["available"] = False
        section["reason"] = "a side has no measured cost basis (no successful run or throughput)"
        return section
    ratio = ct / cb
    section.update(
        available=True,
        unit=base["unit"],
        cost_ratio=ratio,
        verdict="cheaper" if ratio < 1 else "more expensive",
        break_even_usd_per_hour=target["price"]["usd_per_hour"] / ratio,
    )
    eng = inputs.engineering_hours * inputs.engineering_rate
    if eng:
        saving = cb - ct
        section["engineering"] = {
            "usd": eng,
            "units_to_repay": eng / saving if saving > 0 else None,
        }
    if speed and speed.get("interval"):
        iv = speed["interval"]
        scale = ratio / speed["ratio"]
        section["sensitivity"] = {
            "cost_ratio_low": iv["low"] * scale,
            "cost_ratio_high": iv["high"] * scale,
            "text": (
                f"over the speed ratio's {iv['confidence']:.0%} interval the target costs "
                f"{iv['low'] * scale:.2f}x to {iv['high'] * scale:.2f}x the baseline; each "
                "10% on the target's price moves that by 10%"
            ),
        }
    return section
