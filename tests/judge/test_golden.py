"""Golden files of the verdict for fixed synthetic comparisons.

Regenerate after an intended change of the verdict, and review the diff:

    PARITY_REGEN_GOLDEN=1 .venv/bin/python -m pytest tests/judge/test_golden.py

Floats compare within ``tests.conftest.GOLDEN_REL`` (another CPU's SIMD paths change the
last bits of the same sums); ``PARITY_GOLDEN_EXACT=1`` compares them to the last bit, as
these tests did before (``tests/test_machine_independence.py`` shows that fails on the
same figures computed with numpy's wider SIMD paths off).
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from parity.errors import ContractError
from parity.judge.verdict import judge
from parity.model.codec import decode, encode
from parity.model.fair import LatencyLimit, ProductionShape, ShapeRow
from parity.model.metrics import DevicePeaks, Memory, MemoryPhase
from parity.model.stack import Package, PackageOrigin
from parity.model.verdict import CostInputs, Gate, JudgeInputs, Price, Verdict
from parity.report import words
from tests.conftest import differences, golden_differences
from tests.judge import numerics_cases
from tests.judge.synthetic import LOSSES, side_runs

GOLDEN = Path(__file__).parent.parent / "golden"
PRICES = {
    "baseline": Price(usd_per_hour=32.77, accelerators=8, instance="p4d.24xlarge"),
    "target": Price(usd_per_hour=21.50, accelerators=16, instance="trn1.32xlarge"),
}


STACK = (
    Package(name="torch", version="2.13.0"),
    Package(name="numpy", version="2.1.3"),
    Package(name="six", version="1.17.0"),
    Package(name="aiohttp", version="3.10.0"),
)
#: the target: a backend added, numpy moved on, six from a checkout, aiohttp gone
TARGET_STACK = (
    Package(name="torch", version="2.13.0"),
    Package(name="torch-neuronx", version="2.13.0.2.33"),
    Package(name="libneuronxla", version="2.2.1"),
    Package(name="numpy", version="2.2.0"),
    Package(
        name="six",
        version="1.17.0",
        origin=PackageOrigin(
            kind="vcs", url="https://github.com/benjaminp/six.git", vcs="git", commit="a" * 40
        ),
    ),
)

#: where the synthetic sides say they are (nothing is written there)
ROOT = Path("/synthetic")


def scenario(name: str, root: Path) -> dict[str, Any]:
    base = dict(side="cuda", step_s=0.010, seed=1)
    target: dict[str, Any] = dict(side="neuron+bf16", seed=2)
    allow: dict[str, str] = {}
    pins: dict[str, str] = {}
    if name == "passes":
        target.update(step_s=0.007)
    elif name == "fails-quality":
        target.update(step_s=0.006, losses=[x * 1.2 for x in LOSSES], logits_scale=1.3)
    elif name == "not-significantly-faster":
        base.update(noise=0.06, repeats=3)
        target.update(step_s=0.0098, noise=0.06, repeats=3)
    elif name == "too-noisy-to-call":  # 3 a side, an interval holding 1 and reaching far
        base.update(noise=0.6, repeats=3)
        target.update(step_s=0.0098, noise=0.6, repeats=3)
    elif name == "undetermined":  # 5x slower, two processes a side: no verdict word
        base.update(repeats=2)
        target.update(step_s=0.05, repeats=2)
    elif name == "cheaper-but-slower":
        target.update(step_s=0.013)
    elif name == "contract-broken":
        target.update(step_s=0.008, parts={"steps": 30})
        allow = {"steps": "the target team ran a shorter schedule"}
    elif name == "stack-drift":
        base.update(packages=STACK)
        target.update(step_s=0.007, packages=TARGET_STACK)
        pins = {"torch": "==2.13.*", "numpy": "~=2.1.0", "torch-neuronx": ">=2.13"}
    elif name == "fair-rules":  # a tuned baseline, a pilot, production size, a limit
        base.update(side="cuda+compile+bf16", **FAIR_SIDE)
        target.update(side="neuron", step_s=0.007, **FAIR_SIDE, device_memory=16 * 10**9)
        base["device_memory"] = 80 * 10**9
    inputs = JudgeInputs(allow=allow, cost=CostInputs(prices=PRICES), pins=pins)
    if name == "fair-rules":
        inputs = replace(inputs, production=PRODUCTION, slo=LIMITS)
    if name in NUMERICS:
        a, b, ref, exp = NUMERICS[name](root)
        verdict = judge(a, b, inputs=inputs, reference=ref, expected=exp)
    else:
        a = side_runs(root, "baseline", **base)
        b = side_runs(root, "target", **target)
        verdict = judge(a, b, inputs=inputs)
    text = json.dumps(encode(verdict), sort_keys=True).replace(str(root), "<root>")
    return json.loads(text)  # type: ignore[no-any-return]


#: the fair-rules case: a 4M-parameter pilot of a 1.3B production model (device peaks:
#: the load holds runtime and weights; the steps add gradients, AdamW states and 1 KiB of
#: activations a sample-token), and a latency limit the training sides cannot show
FAIR_SIDE: dict[str, Any] = dict(
    parameters=4_000_000,
    memory=Memory(
        load=MemoryPhase(device=DevicePeaks(allocated=(1 << 20) + 16_000_000)),
        steps=MemoryPhase(device=DevicePeaks(allocated=(1 << 20) + 64_000_000 + 1024 * 8 * 64)),
    ),
)
PRODUCTION = ProductionShape(
    parameters=1_300_000_000, seq_len=2048, batch_size=8, precision="bf16", optimizer="adamw"
)
LIMITS = (LatencyLimit(metric="ttft", percentile=99, limit_s=0.2),)


#: cases with an fp64 reference (and an expected-error run), per-module captures
NUMERICS = {
    "fails-after-step-1": numerics_cases.fails_after_step_1,
    "bf16-localisation": numerics_cases.bf16_localisation,
}


CASES = [
    "passes",
    "fails-quality",
    "not-significantly-faster",
    "too-noisy-to-call",
    "undetermined",
    "cheaper-but-slower",
    "contract-broken",
    "stack-drift",
    "fair-rules",
    *NUMERICS,
]


def _keep_close(got: Any, old: Any) -> Any:
    """``got``, with the old golden file's floats where they are within the golden
    tolerance (a regeneration's diff then shows what changed, not another CPU's last bits)."""
    if isinstance(got, dict) and isinstance(old, dict):
        return {k: _keep_close(v, old.get(k)) for k, v in got.items()}
    if isinstance(got, list) and isinstance(old, list) and len(got) == len(old):
        return [_keep_close(a, b) for a, b in zip(got, old, strict=True)]
    if isinstance(got, float) and isinstance(old, float):
        return old if golden_differences(got, old) == [] else got
    return got


@pytest.mark.parametrize("name", CASES)
def test_verdict_matches_golden_file(name: str) -> None:
    got = scenario(name, ROOT)
    path = GOLDEN / f"verdict-{name}.json"
    if os.environ.get("PARITY_REGEN_GOLDEN"):
        old = json.loads(path.read_text()) if path.is_file() else None
        path.write_text(json.dumps(_keep_close(got, old), indent=2, sort_keys=True) + "\n")
    want = json.loads(path.read_text())
    exact = bool(os.environ.get("PARITY_GOLDEN_EXACT"))
    assert (differences(got, want) if exact else golden_differences(got, want)) == []


def test_the_golden_cases_say_what_they_claim() -> None:
    v = {name: scenario(name, ROOT / name) for name in CASES}
    assert v["passes"]["passed"] and v["passes"]["speed"]["verdict"] == "faster"
    assert v["passes"]["cost"]["verdict"] == "cheaper"
    assert not v["fails-quality"]["passed"]
    assert v["fails-quality"]["speed"] is None and v["fails-quality"]["cost"] is None
    held = {f["code"]: f["figures"] for f in v["fails-quality"]["findings"]}
    assert held["decision.withheld-quality"]["failing"]
    assert v["not-significantly-faster"]["speed"]["verdict"] == "indistinguishable"
    noisy = v["too-noisy-to-call"]["speed"]
    assert noisy["verdict"] == "undetermined" and not noisy["interval"]["provisional"]
    assert noisy["interval"]["low"] < 1 / 1.5 and "reaches past 0.67-1.50" in noisy["note"]
    undetermined = v["undetermined"]["speed"]
    assert undetermined["verdict"] == "undetermined" and undetermined["interval"]["provisional"]
    assert undetermined["interval"]["low"] > 1 and "would settle it" in undetermined["note"]
    slow = v["cheaper-but-slower"]
    assert slow["speed"]["verdict"] == "slower" and slow["cost"]["verdict"] == "cheaper"
    after = v["fails-after-step-1"]
    assert not after["passed"] and after["speed"] is None
    checks = {c["name"]: c for c in after["quality"]["checks"]}
    trajectory = checks["loss trajectory against fp64"]
    assert not trajectory["passed"] and trajectory["first_failing_step"] == 2
    assert checks["first forward logits against fp64"]["passed"]  # the first step is clean
    assert not checks["eval_logits against fp64"]["passed"]
    assert after["numerics"]["layers"]["first_divergence"] == "layers.2"
    assert after["numerics"]["layers"]["capture"] == "after the run"
    bf16 = v["bf16-localisation"]
    assert bf16["numerics"]["precision"] == "bf16" and bf16["numerics"]["expected"]["available"]
    assert bf16["numerics"]["layers"]["first_divergence"] == "layers.3"
    rows = {r["module"]: r for r in bf16["numerics"]["layers"]["table"]}
    assert all(rows[f"layers.{i}"]["excess"] < 1 for i in range(3))
    assert rows["layers.0"]["target_error"] > 1000 * rows["layers.0"]["baseline_error"]
    broken = v["contract-broken"]
    assert not broken["contract"]["must_match"][5]["matches"]  # steps
    assert broken["fairness"]["allowed"] == {"steps": "the target team ran a shorter schedule"}
    assert broken["contract"]["holds"]
    fair = v["fair-rules"]
    label = fair["tuning"]["label"]
    assert label["code"] == "tuning.asymmetric" and label["figures"]["tuned"] == "baseline"
    assert "torch.compile" in label["figures"]["settings"]
    assert "reduced precision (autocast)" in label["figures"]["settings"]
    # cuda against neuron+bf16: the target alone runs in reduced precision
    assert v["passes"]["tuning"]["label"]["figures"]["tuned"] == "target"
    shape = {r["name"]: r for r in fair["representativeness"]["rows"]}
    said = {name: words.shape_row(decode(ShapeRow, r)) for name, r in shape.items()}
    assert said["parameters"] == "parameters 0.31% of production"
    assert (
        said["batch_size"] == "batch_size 1, as in production"
        or shape["batch_size"]["fraction"] == 1
    )
    fit = fair["fit"]["sides"]
    assert fit["baseline"]["fits"] and not fit["target"]["fits"]
    assert fit["target"]["fsdp_devices"] == 2
    names = [p["name"] for p in fit["target"]["parts"]]
    assert names == ["weights", "gradients", "optimizer states", "activations", "runtime"]
    gate = next(g for g in fair["gates"] if g["name"] == "latency limits")
    said = words.gate(decode(Gate, gate))
    assert not gate["passed"] and "not measured" in said and not fair["passed"]
    unproven = {u["item"]: u for u in fair["unproven"]}
    assert not unproven["a representative workload"]["checked"]
    drift = v["stack-drift"]
    assert drift["passed"] and drift["pins"]["drifted"] == ["torch-neuronx", "numpy"]
    named = [(d["field"], d["baseline"], d["target"]) for d in drift["environment_differences"]]
    assert named == [
        ("package libneuronxla", None, "2.2.1"),
        ("package torch-neuronx", None, "2.13.0.2.33"),
        ("package aiohttp", "3.10.0", None),
        ("package numpy", "2.1.3", "2.2.0"),
        ("package six", "1.17.0", f"1.17.0 (git https://github.com/benjaminp/six.git@{'a' * 12})"),
    ]


def test_a_broken_contract_without_an_allowance_is_refused() -> None:
    a = side_runs(ROOT, "baseline", side="cuda", step_s=0.01)
    b = side_runs(ROOT, "target", side="neuron", step_s=0.01, parts={"seed": 1})
    with pytest.raises(ContractError, match=r"seed differ.*--allow-diff seed="):
        judge(a, b)


@pytest.mark.parametrize("name", CASES)
def test_golden_verdicts_decode_into_the_typed_model_and_back(name: str) -> None:
    data = json.loads((GOLDEN / f"verdict-{name}.json").read_text())
    verdict = decode(Verdict, data)
    assert verdict.passed == data["passed"]
    assert differences(json.loads(json.dumps(encode(verdict))), data) == []
