from __future__ import annotations

import json

from parity.devices import get_device
from parity.probes.environment import REDACTED, collect, looks_secret, relevant_env

PLANTED = {
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz123456",
    "TORCH_HOME": "/data/torch",
    "NEURON_RT_VISIBLE_CORES": "0-1",
    "TORCH_PROXY": "http://alice:s3cretpass@proxy.internal:3128",
    "NCCL_IB_AUTH_KEY": "supersecretvalue",
    "HOME": "/root",
}


def test_allow_list_and_redaction() -> None:
    env = relevant_env(PLANTED)
    assert env == {
        "NCCL_IB_AUTH_KEY": REDACTED,
        "NEURON_RT_VISIBLE_CORES": "0-1",
        "TORCH_HOME": "/data/torch",
        "TORCH_PROXY": REDACTED,
    }


def test_secret_detection() -> None:
    assert looks_secret("GITHUB_TOKEN", "x")
    assert looks_secret("TORCH_X", "ghp_abcdefghijklmnopqrstuvwxyz0123")
    assert looks_secret("TORCH_X", "AKIAIOSFODNN7EXAMPLE")
    assert not looks_secret("OMP_NUM_THREADS", "4")


def test_collect_has_the_manifest_fields(monkeypatch: object) -> None:
    data = collect(get_device("cpu"))
    for key in ("python", "torch", "device", "cpu", "pip_freeze", "env", "flags"):
        assert key in data
    assert data["device"]["type"] == "cpu" and data["device"]["count"] == 1
    assert len(data["pip_freeze"]["sha256"]) == 64
    json.dumps(data)  # serialisable
