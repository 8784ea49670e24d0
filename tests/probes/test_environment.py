from __future__ import annotations

import pytest
import torch

from parity.devices import get_device
from parity.model.codec import decode, dumps, loads
from parity.model.manifest import Environment
from parity.probes.environment import collect, relevant_env
from parity.safety.redact import REDACTED

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
        "TORCH_PROXY": f"http://alice:{REDACTED}@proxy.internal:3128",
    }


@pytest.mark.parametrize(
    ("name", "value", "recorded"),
    [
        ("NEURON_DB_PWD", "pwd-value-1", REDACTED),
        ("TORCH_SERVICE_PASS", "pass-value-2", REDACTED),
        ("NCCL_UPSTREAM_BEARER", "bearer-value-3", REDACTED),
        ("TORCH_MARKED", "marked-value-4", REDACTED),  # named in PARITY_REDACT
        ("TORCH_X", "ghp_abcdefghijklmnopqrstuvwxyz0123", REDACTED),
        ("TORCH_Y", "AKIAIOSFODNN7EXAMPLE", REDACTED),
        (
            "XLA_FLAGS",
            "--xla_dump_to=/tmp/d --xla_auth_token=xla-secret-5 --xla_bearer xla-secret-6",
            f"--xla_dump_to=/tmp/d --xla_auth_token={REDACTED} --xla_bearer {REDACTED}",
        ),
        ("OMP_NUM_THREADS", "4", "4"),
    ],
)
def test_credential_like_names_and_option_strings(name: str, value: str, recorded: str) -> None:
    env = relevant_env({name: value, "PARITY_REDACT": "TORCH_MARKED", "PWD": "/work"})
    assert env[name] == recorded and "PWD" not in env


def test_collect_has_the_manifest_fields() -> None:
    env = collect(get_device("cpu"))
    assert env.device.type == "cpu" and env.device.count == 1
    assert len(env.pip_freeze.sha256) == 64 and env.pip_freeze.packages > 0
    assert env.flags.num_threads == torch.get_num_threads()
    assert decode(Environment, loads(dumps(env))) == env  # what the manifest holds


def test_planted_secrets_never_reach_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    text = dumps(collect(get_device("cpu")))
    for name in ("AWS_SECRET_ACCESS_KEY", "HF_TOKEN", "NCCL_IB_AUTH_KEY", "TORCH_PROXY"):
        assert PLANTED[name] not in text
    assert "s3cretpass" not in text and "HOME" not in loads(text)["env"]  # type: ignore[index]
