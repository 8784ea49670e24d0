"""``Job`` carries one typed plan, its mode the plan's tag; an older ``job.json`` (the
mode's settings among the job's fields) is read in today's shape."""

from __future__ import annotations

import json
import typing
from typing import get_args

import pytest

from parity.model.codec import DecodeError, decode, encode, loads
from parity.model.job import (
    CheckpointPlan,
    ExpectedPlan,
    Job,
    JobPlan,
    Mode,
    PreparePlan,
    ReferencePlan,
    ScanPlan,
    ScriptPlan,
    SoakPlan,
    StepCut,
    TimingPlan,
    upgrade_job,
)
from parity.model.spec import SideSpec, WorkloadSpec
from parity.model.workload import FingerprintParts, QualitySpec, WorkloadDescription

PLANS: list[JobPlan] = [
    TimingPlan(capture=True, steps=5, cut=StepCut(after_s=1.0, at_least=3), skip=("scan",)),
    ReferencePlan(),
    ExpectedPlan(),
    ScanPlan(),
    CheckpointPlan(stop_at=3, save_at=3, checkpoint_dir="/c"),
    SoakPlan(duration_s=2.0, window_s=0.5),
    ScriptPlan(target="train.py", module=False, args=("--steps", "3"), cwd="/w"),
    PreparePlan(sides=(SideSpec(device="cpu", precision="bf16"),), cost=True),
]


def job(plan: JobPlan) -> Job:
    parts = FingerprintParts(
        config="c", weights="w", data="d", batch_size=8, seq_len=None, steps=4, seed=0, quality="q"
    )
    return Job(
        role="target",
        side=SideSpec(device="cpu", precision="bf16"),
        workload=WorkloadSpec(name="mlp-train"),
        frozen="/frozen",
        fingerprint=parts.digest(),
        parts=parts,
        description=WorkloadDescription(
            name="mlp-train",
            kind="train",
            size="tiny",
            quality=QualitySpec(kind="train", checks=()),
        ),
        plan=plan,
        repeat=1,
        request="a" * 64,
    )


def test_every_mode_has_one_plan_and_the_plan_names_it() -> None:
    tags = [get_args(typing.get_type_hints(type(p))["mode"])[0] for p in PLANS]
    assert sorted(tags) == sorted(get_args(Mode))  # one plan type per mode, no other
    assert [type(p) for p in PLANS] == list(get_args(JobPlan))
    for plan in PLANS:
        made = job(plan)
        assert made.mode == plan.mode
        assert decode(Job, json.loads(json.dumps(encode(made)))) == made


def test_a_job_cannot_carry_two_modes_settings_or_none() -> None:
    data = encode(job(TimingPlan(capture=True)))
    assert isinstance(data, dict)
    with pytest.raises(DecodeError, match=r"\$\.plan: is missing"):
        decode(Job, {k: v for k, v in data.items() if k != "plan"})
    mixed = {**data, "plan": {"mode": "soak", "duration_s": 1.0, "window_s": 0.5, "capture": True}}
    with pytest.raises(DecodeError, match=r"\$\.plan\.capture: is not a known key"):
        decode(Job, mixed)
    assert job(SoakPlan(duration_s=1.0, window_s=0.5)).timing_only  # repeat 1
    with pytest.raises(TypeError, match="a soak job has no TimingPlan"):
        _ = job(SoakPlan(duration_s=1.0, window_s=0.5)).timing


#: what parity wrote before the plan was one field (a comparison's target r01)
OLD_MEASURE = """{
  "role": "target", "side": {"device": "cpu", "precision": "bf16"},
  "workload": {"name": "mlp-train"}, "frozen": "/frozen", "fingerprint": "%s",
  "parts": %s, "description": %s,
  "mode": "measure", "repeat": 1, "spawned_ns": 12, "launch": "fork", "timeout_s": 900.0,
  "capture": false, "compliance": false, "same_input": false, "steps": 5,
  "cut": {"after_s": 1.0, "at_least": 3}, "skip": ["scan"],
  "torchrun": {"nnodes": 1, "rdzv_endpoint": null}, "request": "%s"
}"""


def old_job(mode: str, **settings: object) -> dict[str, object]:
    new = encode(job(ReferencePlan()))
    assert isinstance(new, dict)
    old: dict[str, object] = {k: v for k, v in new.items() if k != "plan"}
    old.update(mode=mode, capture=False, compliance=False, same_input=False, **settings)
    return old


def test_an_older_job_json_reads_in_todays_shape() -> None:
    made = job(TimingPlan(steps=5, cut=StepCut(after_s=1.0, at_least=3), skip=("scan",)))
    text = OLD_MEASURE % (
        made.fingerprint,
        json.dumps(encode(made.parts)),
        json.dumps(encode(made.description)),
        made.request,
    )
    raw = loads(text)
    with pytest.raises(DecodeError, match=r"\$\.mode: is not a known key"):
        decode(Job, raw)  # today's reader is strict: the old shape only through upgrade_job
    read = decode(Job, upgrade_job(raw))
    assert read.plan == made.plan and read.request == made.request and read.repeat == 1
    assert read.launch == "fork" and read.spawned_ns == 12

    ckpt = decode(Job, upgrade_job(old_job("train_ckpt", checkpoint={"stop_at": 3})))  # type: ignore[arg-type]
    assert ckpt.plan == CheckpointPlan(stop_at=3)
    bare = decode(Job, upgrade_job(old_job("train_ckpt")))  # type: ignore[arg-type]
    assert bare.plan == CheckpointPlan()  # the default the worker used
    prepare = {"freeze": False, "sides": [], "cost": True, "resolve": True}
    frozen = decode(Job, upgrade_job(old_job("freeze", prepare=prepare)))  # type: ignore[arg-type]
    assert frozen.plan == PreparePlan(freeze=False, cost=True)
    scan = decode(Job, upgrade_job(old_job("scan")))  # type: ignore[arg-type]
    assert scan.plan == ScanPlan()
    today = encode(made)
    assert upgrade_job(today) == today  # today's shape as it is
