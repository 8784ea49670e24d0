"""``hf:`` workloads: built from transformers config classes, no download."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from parity.errors import WorkloadError
from parity.model.spec import SideSpec, WorkloadSpec
from parity.workloads import prefixes, resolve
from parity.workloads.base import RunContext
from parity.workloads.frozen import freeze, materialize
from parity.workloads.hf import EXTRA_HINT, available, parse_name
from tests.conftest import run_cli

transformers = pytest.importorskip("transformers")


def _spec(name: str, **overrides: str) -> WorkloadSpec:
    return WorkloadSpec(name=name, steps=2, overrides=tuple(overrides.items()))


def _run(name: str, **overrides: str) -> tuple[list[float], dict[str, torch.Tensor]]:
    w = resolve(_spec(name, **overrides))
    weights, data = materialize(w)
    model = w.build_model()
    model.load_state_dict(weights)
    ctx = RunContext(device=torch.device("cpu"), side=SideSpec(device="cpu"), autocast_type="cpu")
    runner = w.make_runner(model, data, ctx)
    for i in range(w.steps):
        runner.step(i)
    result = runner.finish()
    return result.losses, result.outputs


def test_the_hf_prefix_is_registered_and_names_parse() -> None:
    assert "hf" in prefixes()
    names = available()
    assert {"hf:gpt2", "hf:bert", "hf:llama", "hf:t5"} <= set(names)
    assert {"hf:gpt2-generate", "hf:bert-classify", "hf:t5-generate"} <= set(names)
    assert parse_name("hf:gpt2") == ("gpt2", "train")
    assert parse_name("hf:llama-generate") == ("llama", "generate")
    with pytest.raises(WorkloadError, match="use one of hf:gpt2"):
        parse_name("hf:bert-generate")
    with pytest.raises(WorkloadError, match="unknown Hugging Face workload"):
        resolve(WorkloadSpec(name="hf:resnet"))


def test_missing_transformers_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)  # import now raises ImportError
    with pytest.raises(WorkloadError) as err:
        resolve(WorkloadSpec(name="hf:gpt2"))
    assert EXTRA_HINT in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "name",
    # generation decodes token by token: seconds of CPU each, so slow (make test runs them)
    [
        pytest.param(n, marks=pytest.mark.slow) if n.endswith("-generate") else n
        for n in available()
    ],
)
def test_each_hf_workload_runs_and_is_repeatable(name: str) -> None:
    losses_a, out_a = _run(name)
    losses_b, out_b = _run(name)
    assert losses_a == losses_b
    assert out_a.keys() == out_b.keys() and out_a
    for key in out_a:
        assert torch.equal(out_a[key], out_b[key])
    w = resolve(_spec(name))
    if w.kind == "train":
        assert len(losses_a) == 2 and all(x == x for x in losses_a)
        weights, data = materialize(w)
        model = w.build_model()
        model.load_state_dict(weights)
        probe = w.probe(
            model.double(), {k: v.double() if v.is_floating_point() else v for k, v in data.items()}
        )
        assert probe["loss"].dtype == torch.float64 and probe["loss"].requires_grad
    else:
        assert out_a["tokens"].shape == (w.batch_size, w.config["new_tokens"])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hf:gpt2-generate", "hf:llama-generate", "hf:t5-generate"])
def test_cached_greedy_decoding_matches_recomputing_everything(name: str) -> None:
    w = resolve(_spec(name))
    weights, data = materialize(w)
    model = w.build_model().eval()
    model.load_state_dict(weights)
    ctx = RunContext(device=torch.device("cpu"), side=SideSpec(device="cpu"), autocast_type="cpu")
    runner = w.make_runner(model, data, ctx)
    runner.step(0)
    tokens = runner.finish().outputs["tokens"]
    prompt = data["prompts"][0]
    seq2seq = name.startswith("hf:t5")
    seq = torch.zeros_like(prompt[:, :1]) if seq2seq else prompt
    with torch.no_grad():
        for _ in range(w.config["new_tokens"]):
            if seq2seq:
                logits = model(input_ids=prompt, decoder_input_ids=seq, use_cache=False).logits
            else:
                logits = model(input_ids=seq, use_cache=False).logits
            seq = torch.cat([seq, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    expected = seq[:, 1:] if seq2seq else seq[:, prompt.shape[1] :]
    assert torch.equal(tokens, expected)


def test_hf_config_overrides_enter_config_and_fingerprint() -> None:
    base = resolve(WorkloadSpec(name="hf:gpt2"))
    deeper = resolve(_spec("hf:gpt2", n_layer="3"))
    assert deeper.config["hf_config"]["n_layer"] == 3
    assert deeper.parameter_count() > base.parameter_count()
    # an alias of the config class maps onto its own name
    wide = resolve(_spec("hf:gpt2", hidden_size="96"))
    assert (
        wide.config["hf_config"]["n_embd"] == 96 and "hidden_size" not in wide.config["hf_config"]
    )
    assert resolve(_spec("hf:bert", hidden_dropout_prob="0.1")).config["hf_config"][
        "hidden_dropout_prob"
    ] == pytest.approx(0.1)
    root = freeze(base).parts
    assert (
        freeze(resolve(WorkloadSpec(name="hf:gpt2", overrides=(("n_layer", "3"),)))).parts.config
        != root.config
    )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"n_layers_typo": "3"}, "GPT2Config has no setting 'n_layers_typo'"),
        ({"n_layer": "three"}, "n_layer takes a int"),
        ({"n_positions": "16"}, "pass --hf-config n_positions=32"),
    ],
)
def test_bad_overrides_are_usage_errors(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        resolve(_spec("hf:gpt2", **overrides))


def test_tied_embeddings_freeze_and_stay_tied() -> None:
    w = resolve(WorkloadSpec(name="hf:t5"))
    frozen = freeze(w)  # safetensors refuses shared storage: freezing copies it apart
    weights, _ = frozen.load()
    assert torch.equal(weights["shared.weight"], weights["lm_head.weight"])
    model = w.build_model()
    model.load_state_dict(weights)
    assert model.get_input_embeddings().weight is model.get_output_embeddings().weight


@pytest.mark.slow
def test_cli_without_transformers_exits_2_naming_the_extra(tmp_path: Path) -> None:
    shim = tmp_path / "shim" / "transformers"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('No module named transformers')\n")
    cmp = run_cli(
        "compare", "hf:gpt2", "--out", str(tmp_path / "out"), env={"PYTHONPATH": str(shim.parent)}
    )
    assert cmp.returncode == 2, cmp.stderr
    assert cmp.stderr.strip().splitlines() == [
        f"parity: error: hf: workloads need the transformers package: {EXTRA_HINT}"
    ]
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_hf_gpt2_tiny_compare_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    cmp = run_cli(
        "compare", "hf:gpt2", "--baseline", "cpu", "--target", "cpu+bf16", "--repeats", "1",
        "--no-compliance", "--no-report", "--steps", "6", "--hf-config", "n_layer=1", "--json",
        "--out", str(out),
    )  # fmt: skip
    assert cmp.returncode == 0, cmp.stderr
    verdict = json.loads(cmp.stdout)
    assert verdict["passed"]
    assert verdict["workload"]["description"]["config"]["hf_config"]["n_layer"] == 1
    checks = {c["name"]: c for c in verdict["quality"]["checks"]}
    assert checks["loss trajectory against fp64"]["passed"]
    assert "gradients (first backward) against fp64" in checks
    assert verdict["numerics"]["reference"]["available"]
    assert verdict["speed"]["baseline_median_s"] > 0 and verdict["speed"]["target_median_s"] > 0
