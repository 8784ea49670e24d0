"""The redactor: known secret values, credential formats, secret-named pairs and flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from parity.redact import REDACTED, Redactor, strip_userinfo

ENV = {
    "MY_API_KEY": "k3y-value-123",
    "DB_PWD": "hunter2hunter2",
    "SERVICE_PASS": "p4ssw0rd!",
    "UPSTREAM_BEARER": "beartoken99",
    "CUSTOM": "not-a-name-that-says-secret",
    "PARITY_REDACT": "CUSTOM",
    "HOME": "/root",
    "SHORT_TOKEN": "ab",
}

PLANTED = [
    "AKIAABCDEFGHIJKLMNOP",
    "ghp_" + "a" * 36,
    "github_pat_" + "b" * 30,
    "hf_" + "c" * 30,
    "sk-" + "d" * 40,
    "sk-proj-" + "e" * 40,
    "sk_live_" + "f" * 24,
    "xoxb-1234567890-abcdef",
    "AIza" + "g" * 35,
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.abcdefgh123",
]


@pytest.fixture
def r() -> Redactor:
    return Redactor(ENV)


@pytest.mark.parametrize("secret", PLANTED)
def test_credential_formats_are_redacted_anywhere(r: Redactor, secret: str) -> None:
    text = f"RuntimeError: request failed with {secret} (retry later)"
    out = r.text(text)
    assert secret not in out and REDACTED in out and "retry later" in out


@pytest.mark.parametrize(
    "value",
    ["k3y-value-123", "hunter2hunter2", "p4ssw0rd!", "beartoken99", "not-a-name-that-says-secret"],
)
def test_values_of_secret_named_and_marked_variables_are_redacted(r: Redactor, value: str) -> None:
    assert value not in r.text(f"connecting with {value}...")


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("postgres://admin:s3cr3t@db.example:5432/x", "postgres://admin:"),
        ("--api_token=abc123def --xla_flag=1", "--xla_flag=1"),
        ('XLA_FLAGS="--xla_dump_to=/tmp --auth_token=zzz999yy"', "--xla_dump_to=/tmp"),
        ('{"password": "open-sesame", "user": "me"}', '"user": "me"'),
        ("Authorization: Bearer abcdefghijklmnop", "Authorization"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", ""),
    ],
)
def test_pairs_urls_and_blocks(r: Redactor, text: str, kept: str) -> None:
    out = r.text(text)
    assert REDACTED in out and kept in out
    for secret in ("s3cr3t", "abc123def", "zzz999yy", "open-sesame", "abcdefghijklmnop", "MIIEow"):
        assert secret not in out


def test_harmless_text_is_left_alone(r: Redactor) -> None:
    text = "step 12 loss=2.31 lr=0.001 device=cuda:0 /root/model.safetensors"
    assert r.text(text) == text


def test_command_lines_keep_their_shape(r: Redactor) -> None:
    argv = [
        "python",
        "train.py",
        "--token",
        "tok123",
        "--password=pw",
        "--lr",
        "0.1",
        "--db",
        "mysql://u:pw9@h/d",
    ]
    out = r.argv(argv)
    assert out[:4] == ("python", "train.py", "--token", REDACTED)
    assert out[4] == f"--password={REDACTED}" and out[5:7] == ("--lr", "0.1")
    assert "pw9" not in out[8]


def test_environment_capture_and_files(r: Redactor, tmp_path: Path) -> None:
    env = r.environment(ENV, ["MY_API_KEY", "HOME", "CUSTOM", "MISSING"])
    assert env == {"CUSTOM": REDACTED, "HOME": "/root", "MY_API_KEY": REDACTED}
    log = tmp_path / "stderr.log"
    log.write_text("ok line\nleaked hunter2hunter2 here\n" + PLANTED[1] + "\n")
    r.file(log)
    text = log.read_text()
    assert "hunter2" not in text and PLANTED[1] not in text and text.startswith("ok line\n")


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("AWS_SECRET_ACCESS_KEY", True),
        ("HF_TOKEN", True),
        ("PGPASSWORD", True),
        ("MYSQL_PWD", True),
        ("api-key", True),
        ("db.password", True),
        ("uncertainty", False),
        ("author", False),
        ("passes", False),
        ("CUDA_VISIBLE_DEVICES", False),
        ("PWD", False),  # the shell's working directory: a path
        ("OLDPWD", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert (Redactor({}).text(f"{name}=v4lue99") == f"{name}=v4lue99") is not secret


def test_the_working_directory_is_no_secret() -> None:
    r = Redactor({"PWD": "/home/alice/project", "OLDPWD": "/home/alice"})
    assert r.text("installed from file:///home/alice/project") == (
        "installed from file:///home/alice/project"
    )


@pytest.mark.parametrize(
    ("url", "stripped"),
    [
        ("https://user:tok3n@github.com/o/r.git", "https://github.com/o/r.git"),
        ("git+https://tok3n@github.com/o/r.git", "git+https://github.com/o/r.git"),
        ("https://a:b@c@host.example/x?y=@z", "https://host.example/x?y=@z"),
        ("ssh://git@github.com/o/r.git", "ssh://github.com/o/r.git"),
        ("https://host.example/a@b", "https://host.example/a@b"),
        ("file:///src/pkg", "file:///src/pkg"),
        ("not a url", "not a url"),
    ],
)
def test_urls_lose_their_userinfo(url: str, stripped: str) -> None:
    assert strip_userinfo(url) == stripped
