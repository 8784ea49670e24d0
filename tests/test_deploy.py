"""The KubeRay recipe under ``deploy/``: the RayCluster and the Job alternative validate
against the published schemas (vendored in ``tests/fixtures/k8s``), hold what a team's
autoscaled GPU and Trainium node groups need, and the two images pin the same Python, Ray
and torch. Building the images and applying them to a cluster is not done here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
SCHEMAS = Path(__file__).parent / "fixtures" / "k8s"


def _schema(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / name).read_text())  # type: ignore[no-any-return]


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]


def _errors(schema: dict[str, Any], doc: dict[str, Any]) -> list[str]:
    checker = jsonschema.Draft7Validator(schema)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in checker.iter_errors(doc)]


def test_the_raycluster_validates_against_the_kuberay_crd() -> None:
    (cluster,) = _docs("raycluster.yaml")
    assert (cluster["apiVersion"], cluster["kind"]) == ("ray.io/v1", "RayCluster")
    assert _errors(_schema("raycluster-v1.schema.json"), cluster) == []


def test_the_schema_check_can_fail() -> None:
    (cluster,) = _docs("raycluster.yaml")
    cluster["spec"]["workerGroupSpecs"][0]["minReplicas"] = "zero"
    assert _errors(_schema("raycluster-v1.schema.json"), cluster)
    (job, *_) = _docs("job.yaml")
    job["spec"]["backoffLimit"] = "one"
    assert _errors(_schema("job-batch-v1.schema.json"), job)


def test_the_groups_scale_from_zero_onto_their_tainted_node_groups() -> None:
    (cluster,) = _docs("raycluster.yaml")
    spec = cluster["spec"]
    assert spec["enableInTreeAutoscaling"] is True
    assert spec["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"
    groups = {g["groupName"]: g for g in spec["workerGroupSpecs"]}
    assert set(groups) == {"gpu", "trainium"}
    for name, taint, device in (
        ("gpu", "nvidia.com/gpu", "nvidia.com/gpu"),
        ("trainium", "aws.amazon.com/neuron", "aws.amazon.com/neuron"),
    ):
        group = groups[name]
        assert group["minReplicas"] == 0 and group["maxReplicas"] >= 1, name
        pod = group["template"]["spec"]
        assert [t["key"] for t in pod["tolerations"]] == [taint]
        assert pod["nodeSelector"]["parity.dev/pool"] == name
        assert group["template"]["metadata"]["labels"]["parity.dev/pool"] == name
        (container,) = pod["containers"]
        assert container["resources"]["limits"][device] >= 1
    trainium = groups["trainium"]
    env = {e["name"]: e["value"] for e in trainium["template"]["spec"]["containers"][0]["env"]}
    assert env["NEURON_LOGICAL_NC_CONFIG"] == "2"
    offered = json.loads(json.loads(trainium["rayStartParams"]["resources"]))
    chips = trainium["template"]["spec"]["containers"][0]["resources"]["limits"][
        "aws.amazon.com/neuron"
    ]
    assert offered == {"neuron_cores": chips * 4}  # 4 logical cores a Trainium2 chip at LNC=2


def test_the_job_alternative_runs_each_side_then_diffs_them() -> None:
    docs = _docs("job.yaml")
    schema = _schema("job-batch-v1.schema.json")
    for doc in docs:
        assert _errors(schema, doc) == [], doc["metadata"]["name"]
    names = [d["metadata"]["name"] for d in docs]
    assert names == ["parity-baseline", "parity-target", "parity-diff"]
    runs = [d["spec"]["template"]["spec"]["containers"][0]["args"] for d in docs[:2]]
    outs = [args[args.index("--out") + 1] for args in runs]
    assert all(
        a[:2] == ["parity", "run"] and o.startswith("s3://")
        for a, o in zip(runs, outs, strict=True)
    )
    script = " ".join(docs[2]["spec"]["template"]["spec"]["containers"][0]["args"])
    assert "parity diff" in script and all(o in script for o in outs)


def _args(dockerfile: str) -> dict[str, str]:
    text = (DEPLOY / dockerfile).read_text()
    return dict(re.findall(r"^ARG (\w+)=(\S+)$", text, flags=re.MULTILINE))


@pytest.mark.parametrize("name", ["PYTHON_VERSION", "RAY_VERSION", "TORCH_VERSION"])
def test_the_two_images_pin_the_same_versions(name: str) -> None:
    cuda, neuron = _args("cuda.Dockerfile"), _args("neuron.Dockerfile")
    assert cuda[name] == neuron[name]


def test_the_images_and_the_cluster_name_one_ray_version() -> None:
    (cluster,) = _docs("raycluster.yaml")
    assert cluster["spec"]["rayVersion"] == _args("cuda.Dockerfile")["RAY_VERSION"]
    for dockerfile in ("cuda.Dockerfile", "neuron.Dockerfile"):
        text = (DEPLOY / dockerfile).read_text()
        assert re.search(r"^FROM \S+:\S+$", text, flags=re.MULTILINE), dockerfile  # public, tagged
        assert '"/src/parity[cluster]"' in text
