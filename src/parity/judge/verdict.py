"""The verdict: from two bundles to one decision, in the order a careful engineer checks.

1. fairness: both sides ran the same frozen workload (equal fingerprints), or the user
   allowed each differing field by name, which the verdict then reports;
2. every configuration difference between the sides (side spec and environment);
3. both sides ran; quality: loss curve and outputs within tolerance;
4. speed: median steady-state step time ratio with a bootstrap interval, throughput,
   first step apart; memory peaks.

The verdict depends on the two bundles only, so ``parity diff A B`` on bundles made on
different machines gives the same verdict as ``parity compare`` did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from parity.bundle import Bundle
from parity.errors import ContractError
from parity.judge import quality
from parity.judge.stats import ratio_ci
from parity.spec import SideSpec
from parity.workloads.frozen import FINGERPRINT_PARTS

ENV_FIELDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("parity version", ("parity",)),
    ("python", ("python",)),
    ("torch", ("torch", "version")),
    ("device name", ("device", "name")),
    ("device count", ("device", "count")),
    ("backend packages", ("device", "backend_packages")),
    ("device flags", ("device", "flags")),
    ("cpu", ("cpu", "model")),
    ("host", ("hostname",)),
    ("pip freeze", ("pip_freeze", "sha256")),
)


@dataclass
class Verdict:
    """The outcome of a comparison; ``to_dict`` is the JSON contract."""

    workload: dict[str, Any]
    sides: dict[str, dict[str, Any]]
    fairness: dict[str, Any]
    config_differences: list[dict[str, str]]
    environment_differences: list[dict[str, Any]]
    quality: dict[str, Any]
    speed: dict[str, Any] | None
    memory: dict[str, Any]
    phases: dict[str, dict[str, Any]]
    gates: list[dict[str, Any]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(g["passed"] for g in self.gates)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "exit_code": self.exit_code,
            "workload": self.workload,
            "sides": self.sides,
            "fairness": self.fairness,
            "config_differences": self.config_differences,
            "environment_differences": self.environment_differences,
            "gates": self.gates,
            "quality": self.quality,
            "speed": self.speed,
            "memory": self.memory,
            "phases": self.phases,
        }


def _dig(data: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = data
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def check_fairness(a: Bundle, b: Bundle, allow: dict[str, str]) -> dict[str, Any]:
    """Equal fingerprints, or every differing part allowed; else ContractError."""
    parts_a = a.manifest["workload"].get("parts", {})
    parts_b = b.manifest["workload"].get("parts", {})
    differing = [p for p in FINGERPRINT_PARTS if parts_a.get(p) != parts_b.get(p)]
    if a.fingerprint != b.fingerprint and not differing:
        differing = ["fingerprint"]
    refused = [p for p in differing if p not in allow]
    if refused:
        raise ContractError(
            f"the bundles ran different workloads ({', '.join(refused)} differ): compare "
            "bundles of the same workload spec, or accept each difference with "
            + " ".join(f'--allow-diff {p}="reason"' for p in refused)
        )
    return {
        "fingerprint_match": not differing,
        "fingerprint": a.fingerprint,
        "differing_fields": differing,
        "allowed": {p: allow[p] for p in differing},
    }


def environment_differences(a: Bundle, b: Bundle) -> list[dict[str, Any]]:
    env_a, env_b = a.manifest.get("environment", {}), b.manifest.get("environment", {})
    out = []
    for label, path in ENV_FIELDS:
        va, vb = _dig(env_a, path), _dig(env_b, path)
        if va != vb:
            out.append({"field": label, "baseline": va, "target": vb})
    return out


def _side_info(bundle: Bundle) -> dict[str, Any]:
    env = bundle.manifest.get("environment", {})
    summary = bundle.metrics.get("summary") or {}
    return {
        "spec": bundle.side,
        "status": bundle.status,
        "reason": bundle.manifest.get("reason"),
        "stderr_tail": bundle.manifest.get("stderr_tail"),
        "device_name": _dig(env, ("device", "name")),
        "bundle": str(bundle.path),
        "median_step_s": summary.get("median"),
        "throughput": bundle.metrics.get("throughput"),
        "noise_warnings": bundle.metrics.get("noise_warnings", []),
    }


def judge_quality(a: Bundle, b: Bundle, side_a: SideSpec, side_b: SideSpec) -> dict[str, Any]:
    tol = quality.tolerances(side_a, side_b)
    checks: list[dict[str, Any]] = []
    losses_a, losses_b = a.numerics.get("losses", []), b.numerics.get("losses", [])
    if losses_a or losses_b:
        checks.append(quality.compare_losses(losses_a, losses_b, tol["final_loss_rel"]))
    out_a, out_b = a.outputs(), b.outputs()
    for name in sorted(set(out_a) | set(out_b)):
        if name not in out_a or name not in out_b:
            checks.append(
                {
                    "name": f"output {name}",
                    "kind": "output",
                    "gated": True,
                    "passed": False,
                    "detail": "present on one side only",
                }
            )
            continue
        checks.append(
            quality.compare_output(name, out_a[name], out_b[name], tol["outputs_rel_rmse"])
        )
    gated = [c for c in checks if c.get("gated", True)]
    return {
        "tolerances": tol,
        "checks": checks,
        "passed": bool(gated) and all(c["passed"] for c in gated),
        "method": "target against baseline; tolerance from the lower precision of the two",
    }


def judge_speed(a: Bundle, b: Bundle) -> dict[str, Any] | None:
    sa, sb = a.metrics.get("summary"), b.metrics.get("summary")
    if not sa or not sb:
        return None
    steady_a = _steady_samples(a)
    steady_b = _steady_samples(b)
    ci = ratio_ci([steady_a], [steady_b])
    return {
        "baseline_median_s": sa["median"],
        "target_median_s": sb["median"],
        "ratio": ci.ratio,
        "speedup": ci.speedup,
        "interval": {"low": ci.low, "high": ci.high, "confidence": ci.confidence},
        "verdict": ci.verdict,
        "repeats": {"baseline": 1, "target": 1},
        "note": "one process per side: the interval knows nothing of process-to-process "
        "variation; use repeats for a claim",
        "throughput": {
            "baseline": a.metrics.get("throughput"),
            "target": b.metrics.get("throughput"),
        },
    }


def _steady_samples(bundle: Bundle) -> list[float]:
    samples = bundle.metrics["step_samples_s"]
    return list(samples[int(bundle.metrics["steady_from_step"]) :])


def judge(baseline: Bundle, target: Bundle, *, allow: dict[str, str] | None = None) -> Verdict:
    """Judge two bundles; raises ContractError when they are not comparable."""
    allow = allow or {}
    fairness = check_fairness(baseline, target, allow)
    side_a = SideSpec.from_dict(baseline.manifest["side"])
    side_b = SideSpec.from_dict(target.manifest["side"])
    description = baseline.manifest["workload"].get("description", {})
    verdict = Verdict(
        workload={
            "name": description.get("name"),
            "size": description.get("size"),
            "kind": description.get("kind"),
            "fingerprint": baseline.fingerprint,
            "description": description,
        },
        sides={"baseline": _side_info(baseline), "target": _side_info(target)},
        fairness=fairness,
        config_differences=[
            {"setting": k, "baseline": x, "target": y}
            for k, x, y in side_a.config_differences(side_b)
        ],
        environment_differences=environment_differences(baseline, target),
        quality={},
        speed=None,
        memory={},
        phases={},
    )
    ran = baseline.ok and target.ok
    verdict.gates.append(
        {
            "name": "both sides ran",
            "passed": ran,
            "detail": "ok"
            if ran
            else "; ".join(
                f"{role} failed: {bundle.manifest.get('reason')}"
                for role, bundle in (("baseline", baseline), ("target", target))
                if not bundle.ok
            ),
        }
    )
    if not ran:
        return verdict
    verdict.quality = judge_quality(baseline, target, side_a, side_b)
    failing = [
        c["name"] for c in verdict.quality["checks"] if c.get("gated", True) and not c["passed"]
    ]
    verdict.gates.append(
        {
            "name": "quality",
            "passed": verdict.quality["passed"],
            "detail": "within tolerance"
            if verdict.quality["passed"]
            else f"outside tolerance: {', '.join(failing)}",
        }
    )
    verdict.speed = judge_speed(baseline, target)
    verdict.memory = {
        role: bundle.metrics.get("memory", {})
        for role, bundle in (("baseline", baseline), ("target", target))
    }
    verdict.phases = {
        role: bundle.metrics.get("phases", {})
        for role, bundle in (("baseline", baseline), ("target", target))
    }
    return verdict
