"""``--generate-loop``: parity's own greedy loop and the model's ``generate()`` give the
same tokens and latency figures of the same kind; the loop enters the fingerprint, the
metrics and the report, and is refused where it cannot run."""

from __future__ import annotations

import html
import itertools
import json
from pathlib import Path

import pytest
import torch

from parity.errors import OptionError, SpecError, WorkloadError
from parity.model import codec
from parity.model.spec import GenerateLoopName, SideSpec, WorkloadSpec
from parity.probes.latency import generation_metrics
from parity.request import CompareRequest
from parity.workloads import resolve
from parity.workloads.base import RunContext
from parity.workloads.frozen import freeze, materialize
from parity.workloads.lm import LmGenerateRunner
from tests.conftest import run_cli

pytest.importorskip("transformers")

CPU = RunContext(device=torch.device("cpu"), side=SideSpec(device="cpu"), autocast_type="cpu")


def runner(name: str, loop: GenerateLoopName | None, steps: int = 3) -> LmGenerateRunner:
    w = resolve(WorkloadSpec(name=name, steps=steps, generate_loop=loop))
    weights, data = materialize(w)
    model = w.build_model()
    model.load_state_dict(weights)
    made = w.make_runner(model, data, CPU)
    assert isinstance(made, LmGenerateRunner)
    return made


def decode(name: str, loop: GenerateLoopName | None) -> tuple[LmGenerateRunner, torch.Tensor]:
    r = runner(name, loop)
    for i in range(3):
        r.step(i)
    return r, r.finish().outputs["tokens"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hf:gpt2-generate", "hf:t5-generate"])
def test_both_loops_decode_the_same_tokens_with_latency_figures(name: str) -> None:
    own, tokens = decode(name, None)
    hf, hf_tokens = decode(name, "hf")
    assert own.loop == "parity" and hf.loop == "hf"
    assert torch.equal(tokens, hf_tokens) and tokens.shape == (2, 16)
    for r in (own, hf):
        stamps = r.token_times_ns()
        assert stamps is not None and len(stamps) == 3
        for step in stamps:
            assert len(step) == 16 and step[0] > 0
            assert all(b > a for a, b in itertools.pairwise(step))
        gen = generation_metrics(stamps[1:], 2, loop=(r.loop, "x"))
        assert gen.loop == r.loop and gen.output_tokens == 16
        assert gen.ttft_s.p50 is not None and gen.e2e_s.p50 is not None
        assert 0 < gen.ttft_s.p50 < gen.e2e_s.p50
        assert gen.tpot_s.p50 is not None and gen.tpot_s.p50 > 0 and gen.itl_s.n == 2 * 15


def test_generate_does_not_stop_at_the_end_of_sequence_token() -> None:
    hf = runner("hf:gpt2-generate", "hf", steps=1)
    prompt = hf.prompts[0]
    tokens, _ = hf.generate(prompt)
    # a model whose config says the second token ends a sequence: generate() would stop
    # there and pad the rest of the row
    hf.model.generation_config.eos_token_id = int(tokens[0, 1])
    hf.model.generation_config.pad_token_id = int(tokens[0, 1]) + 1
    with torch.inference_mode():
        stopped = hf.model.generate(  # type: ignore[operator]
            input_ids=prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=16
        )
    assert not torch.equal(stopped[:, -16:], tokens)
    # parity's settings decode the fixed number of tokens all the same
    assert hf.generate_settings["eos_token_id"] is None
    assert torch.equal(hf.generate(prompt)[0], tokens)


def test_the_loop_enters_the_fingerprint_and_parity_is_the_default() -> None:
    plain = freeze(resolve(WorkloadSpec(name="hf:gpt2-generate")))
    named = freeze(resolve(WorkloadSpec(name="hf:gpt2-generate", generate_loop="parity")))
    hf = freeze(resolve(WorkloadSpec(name="hf:gpt2-generate", generate_loop="hf")))
    assert plain.fingerprint == named.fingerprint
    assert hf.parts.config != plain.parts.config and hf.parts.weights == plain.parts.weights
    assert hf.description.config["generate_loop"] == "hf"
    assert "generate_loop" not in plain.description.config


@pytest.mark.parametrize(
    ("spec", "error", "message"),
    [
        (
            WorkloadSpec(name="gpt-train", generate_loop="hf"),
            WorkloadError,
            "gpt-train does not generate: --generate-loop is for generation workloads",
        ),
        (
            WorkloadSpec(name="gpt-generate", generate_loop="hf"),
            WorkloadError,
            "gpt-generate has no generate() of its own",
        ),
    ],
)
def test_a_loop_the_workload_cannot_run_is_a_usage_error(
    spec: WorkloadSpec, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        resolve(spec)
    assert resolve(WorkloadSpec(name="gpt-generate", generate_loop="parity")).steps > 0


def test_the_option_is_checked_once_in_the_request() -> None:
    gen = {"workload": "hf:gpt2-generate", "target": "cpu+bf16"}  # no default accelerator
    request = CompareRequest.from_kwargs(**gen, generate_loop="hf")
    assert request.workload is not None and request.workload.loop == "hf"
    with pytest.raises(SpecError, match="--generate-loop 'static' is unknown"):
        CompareRequest.from_kwargs(**gen, generate_loop="static")
    with pytest.raises(SpecError, match="drop \\+compile, or use --generate-loop parity"):
        CompareRequest.from_kwargs(
            workload="hf:gpt2-generate", generate_loop="hf", target="cpu+compile"
        )
    with pytest.raises(OptionError, match="--generate-loop must be a string"):
        CompareRequest.from_kwargs(**gen, generate_loop=1)
    assert codec.decode(WorkloadSpec, codec.encode(request.workload)) == request.workload


@pytest.mark.slow
def test_a_compare_of_generate_names_the_loop_in_verdict_and_report(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    cmp = run_cli(
        "compare", "hf:gpt2-generate", "--generate-loop", "hf", "--baseline", "cpu+threads=1",
        "--target", "cpu+bf16+threads=1", "--repeats", "1", "--no-compliance", "--steps", "4",
        "--json", "--out", str(out),
    )  # fmt: skip
    assert cmp.returncode in (0, 1), cmp.stderr
    verdict = json.loads(cmp.stdout)
    assert verdict["workload"]["description"]["config"]["generate_loop"] == "hf"
    for role in ("baseline", "target"):
        gen = verdict["sides"][role]["generation"]
        assert gen["loop"] == "hf" and gen["definitions"]["loop"].startswith("hf: the model's")
        assert gen["ttft_s"]["p50"] > 0 and gen["tpot_s"]["p50"] > 0
    report = html.unescape((out / "report.html").read_text())
    assert "generation loop: hf: the model's own generate()" in report
