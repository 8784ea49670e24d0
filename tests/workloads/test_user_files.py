"""``path/to/file.py:factory`` workloads: the shipped examples follow the protocol."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from parity.errors import WorkloadError
from parity.model.codec import decode
from parity.model.spec import SideSpec, WorkloadSpec
from parity.model.verdict import Verdict
from parity.report import words
from parity.workloads import resolve
from parity.workloads.base import RunContext
from parity.workloads.frozen import freeze, materialize
from tests.conftest import run_cli

EXAMPLES = Path(__file__).parents[2] / "examples"
NAMES = [
    f"{EXAMPLES / 'tabular_train.py'}:TabularTrain",
    f"{EXAMPLES / 'vit_infer.py'}:make_workload",
    f"{EXAMPLES / 'text_embed.py'}:TextEmbed",
]


@pytest.mark.parametrize("name", NAMES)
def test_examples_resolve_freeze_and_run(name: str) -> None:
    w = resolve(WorkloadSpec(name=name, steps=2))
    assert freeze(w).fingerprint == freeze(resolve(WorkloadSpec(name=name, steps=2))).fingerprint
    weights, data = materialize(w)
    model = w.build_model()
    model.load_state_dict(weights)
    ctx = RunContext(
        device=torch.device("cpu"),
        side=SideSpec(device="cpu", precision="bf16"),
        autocast_type="cpu",
    )
    runner = w.make_runner(model, data, ctx)
    for i in range(w.steps):
        runner.step(i)
    result = runner.finish()
    assert result.outputs and all(torch.isfinite(t).all() for t in result.outputs.values())
    assert len(result.losses) == (2 if w.kind == "train" else 0)
    assert "logits" in w.probe(w.build_model(), data)


def test_a_multi_input_example_runs_with_named_inputs_and_outputs(tmp_path: Path) -> None:
    notes = tmp_path / "notes.jsonl"
    notes.write_text("".join(json.dumps({"text": "note " * (i + 1)}) + "\n" for i in range(5)))
    name = f"{EXAMPLES / 'text_embed.py'}:TextEmbed"
    w = resolve(WorkloadSpec(name=name, steps=2, data=str(notes)))
    weights, data = freeze(w).load()
    assert set(data) == {"input_ids", "attention_mask"}
    lengths = data["attention_mask"][0].sum(dim=1).tolist()
    assert lengths == [5, 10, 15, 20, 25, 5, 10, 15]  # read again from the start
    model = w.build_model()
    model.load_state_dict(weights)
    ctx = RunContext(device=torch.device("cpu"), side=SideSpec(device="cpu"), autocast_type="cpu")
    runner = w.make_runner(model, data, ctx)
    runner.step(0)
    result = runner.finish()
    assert {k: result.kind(k) for k in result.outputs} == {
        "embeddings": "embeddings",
        "logits": "logits",
        "final_embeddings": "embeddings",
        "final_logits": "logits",
    }
    assert result.outputs["embeddings"].shape == (8, 64)
    other = notes.with_name("other.jsonl")
    other.write_text(notes.read_text().replace("note", "nota", 1))
    changed = freeze(resolve(WorkloadSpec(name=name, steps=2, data=str(other))))
    assert changed.parts.data != freeze(w).parts.data
    assert freeze(w).description.data_file == str(notes)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (f"{EXAMPLES / 'missing.py'}:X", "does not exist"),
        (f"{EXAMPLES / 'vit_infer.py'}:Nope", "has no 'Nope'"),
        (f"{EXAMPLES / 'vit_infer.py'}:N_BATCHES", "not a parity Workload"),
    ],
)
def test_broken_user_files_are_usage_errors(name: str, message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        resolve(WorkloadSpec(name=name))


@pytest.mark.slow
def test_user_file_compare_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    cmp = run_cli(
        "compare", "--no-report", "examples/tabular_train.py:TabularTrain", "--target", "cpu+bf16",
        "--repeats", "1", "--no-compliance", "--steps", "6", "--json", "--out", str(out),
    )  # fmt: skip
    assert cmp.returncode == 0, cmp.stderr
    verdict = json.loads(cmp.stdout)
    assert verdict["passed"] and verdict["workload"]["name"] == "tabular-train"
    assert verdict["numerics"]["reference"]["available"]
    names = {c["name"] for c in verdict["quality"]["checks"]}
    assert names >= {
        "loss curve",
        "first forward logits against fp64",
        "loss trajectory against fp64",
    }


@pytest.mark.slow
def test_a_sleeping_loader_is_input_bound_in_the_verdict(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    workload = f"{Path(__file__).parents[1] / 'fixtures' / 'loaders.py'}:LoaderTrain"
    cmp = run_cli(
        "compare", workload, "--baseline", "cpu+threads=1", "--target", "cpu+bf16+threads=1",
        "--hf-config", "sleep_ratio=1", "--repeats", "1", "--no-compliance", "--steps", "8",
        "--no-report", "--json", "--out", str(out),
    )  # fmt: skip
    assert cmp.returncode == 0, cmp.stderr
    verdict = json.loads(cmp.stdout)
    for role in ("baseline", "target"):
        fed = verdict["sides"][role]["input_pipeline"]
        assert fed["input_bound"] and fed["source"] == "loader", fed["reason"]
    unproven = decode(Verdict, verdict).unproven
    item = next(u for u in unproven if u.item == "the real data pipeline")
    assert item.checked and (words.unproven_evidence(item) or "").startswith(
        "measured on both sides"
    )
    # the HTML report has every section (the Markdown keeps to 60 lines, and noise
    # warnings on a busy machine can push the input pipeline into its "also" line)
    report = run_cli("report", str(out), "--html", str(tmp_path / "r.html"))
    assert report.returncode == 0, report.stderr
    assert "target input-bound" in (tmp_path / "r.html").read_text()
