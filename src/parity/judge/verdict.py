"""The verdict: from two bundles to one decision, in the order a careful engineer checks.

1. fairness: both sides ran the same frozen workload (equal fingerprints), or the user
   allowed each differing field by name, which the verdict then reports;
2. every configuration difference between the sides (side spec and environment);
3. both sides ran; quality: loss curve and outputs within tolerance;
4. speed: step time ratio over fresh processes with a t interval, throughput,
   first step apart; memory peaks.

The verdict depends on the two bundles only, so ``parity diff A B`` on bundles made on
different machines gives the same verdict as ``parity compare`` did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from parity.bundle import Bundle, SideRuns
from parity.errors import ContractError
from parity.judge import compat, decision, quality
from parity.judge.cost import CostInputs, judge_cost
from parity.judge.numerics import judge_numerics
from parity.judge.speed import judge_speed
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
    numerics: dict[str, Any] = field(default_factory=dict)
    contract: dict[str, Any] = field(default_factory=dict)
    cost: dict[str, Any] | None = None
    withheld: str | None = None
    unproven: list[dict[str, Any]] = field(default_factory=list)
    operational: list[dict[str, Any]] = field(default_factory=list)
    compatibility: dict[str, Any] = field(default_factory=dict)

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
            "compatibility": self.compatibility,
            "quality": self.quality,
            "numerics": self.numerics,
            "withheld": self.withheld,
            "speed": self.speed,
            "cost": self.cost,
            "memory": self.memory,
            "phases": self.phases,
            "contract": self.contract,
            "unproven": self.unproven,
            "operational": self.operational,
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


def _side_info(side: SideRuns) -> dict[str, Any]:
    first = side.first
    env = first.manifest.get("environment", {})
    failed = [b for b in side.repeats if not b.ok]
    return {
        "spec": first.side,
        "status": "ok" if not failed else "failed",
        "reason": "; ".join(
            (f"{b.path.name}: " if b.path != side.path else "") + str(b.manifest.get("reason"))
            for b in failed
        )
        if failed
        else None,
        "stderr_tail": failed[0].manifest.get("stderr_tail") if failed else None,
        "repeats": len(side.repeats),
        "repeats_ok": len(side.ok),
        "device_name": _dig(env, ("device", "name")),
        "bundle": str(side.path),
        "median_step_s": (first.metrics.get("summary") or {}).get("median"),
        "throughput": first.metrics.get("throughput"),
        "flops": first.metrics.get("flops"),
        "generation": first.metrics.get("generation"),
        "inference": first.metrics.get("inference"),
        "noise_warnings": _worst_noise(side.ok),
    }


def _worst_noise(bundles: list[Bundle]) -> list[str]:
    """The noise warnings of the noisiest repeat (largest IQR/median), labelled."""

    def iqr_rel(b: Bundle) -> float:
        s = b.metrics.get("summary") or {}
        return float(s.get("iqr", 0.0)) / float(s["median"]) if s.get("median") else 0.0

    noisy = [b for b in bundles if b.metrics.get("noise_warnings")]
    if not noisy:
        return []
    worst = max(noisy, key=iqr_rel)
    label = f" (noisiest of {len(bundles)} repeats: {worst.path.name})" if len(bundles) > 1 else ""
    return [w + label for w in worst.metrics["noise_warnings"]]


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


def merge_numerics(quality_section: dict[str, Any], numerics: dict[str, Any]) -> None:
    """With an fp64 reference, its gates decide; the direct output checks are reported."""
    if not numerics.get("available"):
        return
    if numerics.get("reference", {}).get("available"):
        for check in quality_section["checks"]:
            if check["kind"] == "output" and check.get("gated", True):
                check["gated"] = False
                check["detail"] = "reported; the fp64 reference gates decide"
    quality_section["checks"].extend(numerics["gates"])
    gated = [c for c in quality_section["checks"] if c.get("gated", True)]
    quality_section["passed"] = bool(gated) and all(c["passed"] for c in gated)
    quality_section["method"] = (
        "outputs and gradients against an fp64 reference (k x baseline error + tol/10, or "
        "allclose); loss curve against the baseline"
        if numerics.get("reference", {}).get("available")
        else quality_section["method"]
    )


def _as_side(item: SideRuns | Bundle) -> SideRuns:
    return item if isinstance(item, SideRuns) else SideRuns(path=item.path, repeats=[item])


def judge(
    baseline: SideRuns | Bundle,
    target: SideRuns | Bundle,
    *,
    allow: dict[str, str] | None = None,
    reference: Bundle | None = None,
    target_loss: float | None = None,
    cost_inputs: CostInputs | None = None,
    operational_answers: dict[str, str] | None = None,
    checked: dict[str, str] | None = None,
) -> Verdict:
    """Judge two sides; raises ContractError when they are not comparable."""
    allow = allow or {}
    side_a, side_b = _as_side(baseline), _as_side(target)
    for side in (side_a, side_b):
        prints = {b.fingerprint for b in side.repeats}
        if len(prints) > 1:
            raise ContractError(
                f"the repeats in {side.path} ran different workloads: keep one workload's "
                "repeats in a side directory"
            )
    first_a, first_b = side_a.first, side_b.first
    fairness = check_fairness(first_a, first_b, allow)
    if first_a.manifest.get("script_mode") or first_b.manifest.get("script_mode"):
        # script mode saw a command, not the weights and data: the contract is unverified
        fairness.update(verified=False, note="script mode: weights and data not fingerprinted")
    spec_a = SideSpec.from_dict(first_a.manifest["side"])
    spec_b = SideSpec.from_dict(first_b.manifest["side"])
    description = first_a.manifest["workload"].get("description", {})
    verdict = Verdict(
        workload={
            "name": description.get("name"),
            "size": description.get("size"),
            "kind": description.get("kind"),
            "fingerprint": first_a.fingerprint,
            "description": description,
        },
        sides={"baseline": _side_info(side_a), "target": _side_info(side_b)},
        fairness=fairness,
        config_differences=[
            {"setting": k, "baseline": x, "target": y}
            for k, x, y in spec_a.config_differences(spec_b)
        ],
        environment_differences=environment_differences(first_a, first_b),
        # first ok bundle per side, else its failed one (which may hold a failure scan)
        compatibility=compat.compatibility(first_a, first_b),
        quality={},
        speed=None,
        memory={},
        phases={},
    )
    verdict.contract = decision.contract(first_a, first_b, fairness, verdict.config_differences)
    if fairness.get("verified") is False:
        verdict.contract.update(verified=False, note=fairness["note"])
    verdict.unproven = decision.unproven(checked)  # item -> evidence (parity.checks)
    verdict.operational = decision.operational(operational_answers)
    problems = [
        f"{role} failed: {info['reason']}"
        for role, info in verdict.sides.items()
        if info["status"] != "ok"
    ]
    verdict.gates.append(
        {"name": "both sides ran", "passed": not problems, "detail": "; ".join(problems) or "ok"}
    )
    if not (side_a.ok and side_b.ok):
        return verdict
    first_a, first_b = side_a.ok[0], side_b.ok[0]
    verdict.quality = judge_quality(first_a, first_b, spec_a, spec_b)
    verdict.numerics = judge_numerics(first_a, first_b, reference, spec_b)
    merge_numerics(verdict.quality, verdict.numerics)
    if target_loss is not None:
        verdict.quality["convergence"] = {
            role: quality.convergence(side.ok, target_loss)
            for role, side in (("baseline", side_a), ("target", side_b))
        }
    verdict.quality["determinism"] = {
        "baseline": quality.determinism(side_a.ok),
        "target": quality.determinism(side_b.ok),
    }
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
    verdict.memory = {
        "baseline": first_a.metrics.get("memory", {}),
        "target": first_b.metrics.get("memory", {}),
    }
    verdict.phases = {
        "baseline": first_a.metrics.get("phases", {}),
        "target": first_b.metrics.get("phases", {}),
    }
    if not verdict.quality["passed"]:
        # quality first: a target that fails quality gets no speed or cost verdict
        verdict.withheld = (
            f"no speed or cost verdict: the target fails quality ({', '.join(failing)})"
        )
        return verdict
    verdict.speed = judge_speed(side_a, side_b)
    verdict.cost = judge_cost(
        side_a,
        side_b,
        str(description.get("kind")),
        cost_inputs or CostInputs(),
        verdict.speed,
        verdict.quality.get("convergence"),
    )
    return verdict
