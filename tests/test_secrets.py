"""Credentials in the environment never reach a bundle, a verdict or a report."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli

SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzSECRET1",
    "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7PLANTED1",
    "HF_TOKEN": "hf_plantedTokenValue0123456789abcdef",
    "GITHUB_TOKEN": "ghp_plantedTokenValue0123456789abcdefXY",
    "TORCH_SECRET_SAUCE": "torch-secret-planted-value-42",
    "NEURON_RT_AUTH": "neuron-auth-planted-value-42",
    "PARITY_DB_PASSWORD": "parity-password-planted-value",
    "NCCL_PROXY": "http://user:planted-proxy-pass@proxy.example:3128",
}


@pytest.mark.slow
def test_planted_credentials_appear_in_no_output_file(tmp_path: Path) -> None:
    out = tmp_path / "c"
    res = run_cli(
        "compare",
        "mlp-train",
        "--target",
        "cpu+bf16",
        "--steps",
        "4",
        "--repeats",
        "1",
        "--out",
        str(out),
        env=SECRETS,
    )
    assert res.returncode == 0, res.stderr
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) > 20
    values = [v for v in SECRETS.values()] + ["planted-proxy-pass"]
    for path in files:
        data = path.read_bytes()
        for value in values:
            assert value.encode() not in data, f"{value} leaked into {path}"
    for stream in (res.stdout, res.stderr):
        for value in values:
            assert value not in stream
    # the allow-listed names are recorded, redacted, so a reader sees they were set
    manifest = (out / "target" / "r00" / "manifest.json").read_text()
    assert '"TORCH_SECRET_SAUCE": "<redacted>"' in manifest
    assert "AWS_SECRET_ACCESS_KEY" not in manifest  # not allow-listed at all
