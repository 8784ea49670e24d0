"""``--cluster`` and ``--place`` parsed and checked without a cluster: the roles, the
amounts, the defaults from each device adapter, and what is refused before anything runs."""

from __future__ import annotations

import pytest

from parity.cluster.address import parse_place, reachable, resolve_address, resource_for
from parity.errors import OptionError, UsageError
from parity.model.placement import ClusterPlan, Resource
from parity.model.spec import parse_side
from parity.request import CompareRequest
from parity.storage import check_destination
from parity.testing.raycluster import free_port


def test_place_items_and_a_plan_table() -> None:
    assert parse_place(["baseline=side-a", "target=neuron_cores:2"]) == {
        "baseline": Resource(name="side-a"),
        "target": Resource(name="neuron_cores", amount=2.0),
    }
    assert parse_place({"target": "GPU:0.5"}) == {"target": Resource(name="GPU", amount=0.5)}
    for bad in ("side=GPU", "target", "target=", "target=GPU:-1", "target=GPU:x"):
        with pytest.raises(OptionError, match="--place"):
            parse_place([bad])


def test_defaults_come_from_the_device_adapter() -> None:
    plan = ClusterPlan(address="auto")
    wanted = {spec: resource_for(parse_side(spec), plan, "target").name
              for spec in ("cpu", "cpu+bf16", "cuda", "neuron+bf16")}  # fmt: skip
    assert wanted == {"cpu": "CPU", "cpu+bf16": "CPU", "cuda": "GPU", "neuron+bf16": "neuron_cores"}
    placed = ClusterPlan(address="auto", place={"target": Resource(name="side-b")})
    assert resource_for(parse_side("cuda"), placed, "target").name == "side-b"


@pytest.mark.slow  # starts an interpreter
def test_refused_before_anything_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(OptionError, match="--place needs --cluster"):
        CompareRequest.from_kwargs(workload="mlp-train", place=["target=GPU"])
    with pytest.raises(OptionError, match="user or password") as leaked:
        CompareRequest.from_kwargs(workload="mlp-train", cluster="ray://bob:hunter2-pw@head:1")
    assert "hunter2" not in str(leaked.value)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(UsageError, match="RAY_ADDRESS"):
        resolve_address("auto")
    with pytest.raises(UsageError, match="nothing answers"):
        reachable(f"ray://127.0.0.1:{free_port()}")
    with pytest.raises(UsageError, match="user or password") as caught:
        check_destination("s3://KEYID:s3cret-Key-99@bucket/run")
    assert "s3cret-Key-99" not in str(caught.value)
    request = CompareRequest.from_kwargs(
        workload="mlp-train", target="cpu+bf16", cluster="auto", place=["target=side-b"]
    )
    assert request.cluster == ClusterPlan(address="auto", place={"target": Resource(name="side-b")})


def test_place_names_the_commands_roles_only() -> None:
    from parity.cluster.address import cluster_plan

    plan = cluster_plan("ray://h:1", parse_place(["soak=side-a"]), ("soak",))
    assert plan is not None and plan.place == {"soak": Resource(name="side-a", amount=1.0)}
    with pytest.raises(OptionError, match="this command places soak"):
        cluster_plan("ray://h:1", parse_place(["target=side-a"]), ("soak",))
    with pytest.raises(OptionError, match="needs --cluster"):
        cluster_plan(None, parse_place(["scale=GPU:2"]), ("scale",))


def test_check_and_scale_requests_carry_the_cluster() -> None:
    from parity.request import CheckRequest, ScaleRequest

    on = {"cluster": "ray://h:1"}
    roll = CheckRequest.from_kwargs(
        "rollback", workload="mlp-train", target="cpu", place=["target=side-b"], **on
    )
    assert roll.cluster is not None and set(roll.cluster.place) == {"target"}
    soak = CheckRequest.from_kwargs("soak", workload="cnn-infer", device="cpu", **on)
    assert soak.cluster == ClusterPlan(address="ray://h:1", place={})
    scale = ScaleRequest.from_kwargs(
        workload="mlp-train", device="cpu", place=["scale=GPU:4"], **on
    )
    assert scale.cluster is not None and scale.cluster.place["scale"].amount == 4
    with pytest.raises(OptionError, match="places soak"):
        CheckRequest.from_kwargs("soak", workload="cnn-infer", device="cpu", place=["run=X"], **on)
    with pytest.raises(OptionError, match="cluster"):  # recovery runs on this machine
        CheckRequest.from_kwargs("recovery", workload="mlp-train", device="cpu", **on)


@pytest.mark.slow  # a fresh parity process
def test_a_head_that_never_answers_is_one_line_within_seconds(tmp_path: object) -> None:
    """A port that takes the connection and says nothing: one line, no Ray warning, in
    seconds (not Ray client's 35 s of retries)."""
    import socket
    import time

    from parity.testing.raycluster import patience
    from tests.conftest import run_cli

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        port = silent.getsockname()[1]
        began = time.monotonic()
        res = run_cli("compare", "mlp-train", "--cluster", f"ray://127.0.0.1:{port}", process=True)
        took = time.monotonic() - began
        bound = patience(30)  # about 10 s idle; a busy machine's fresh process is slower
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot join the cluster" in lines[0], res.stderr
    assert took < bound, (took, bound)
