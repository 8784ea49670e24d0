"""The redactor: known secret values, credential formats, secret-named pairs and flags."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from parity.safety.redact import REDACTED, Redactor, flag_values, redact, strip_userinfo

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


def test_secret_flags_followed_by_a_space_inside_text(r: Redactor) -> None:
    text = "XLA_FLAGS=--xla_dump_to=/tmp --xla_session_key s3ss10n-k3y --lr 0.1 -v"
    out = r.text(text)
    assert "s3ss10n-k3y" not in out and f"--xla_session_key {REDACTED}" in out
    assert out.endswith("--xla_dump_to=/tmp --xla_session_key <redacted> --lr 0.1 -v")


def test_the_working_directory_is_not_a_secret() -> None:
    r = Redactor({"PWD": "/work/project", "OLDPWD": "/work/old", "DB_PWD": "realpwd1"})
    assert r.text("in /work/project and /work/old with realpwd1") == (
        f"in /work/project and /work/old with {REDACTED}"
    )


def test_a_command_line_s_secret_values_are_known_to_its_logs(r: Redactor) -> None:
    argv = ["--token", "tok-value-1", "--api-key=key-value-2", "--lr", "0.1"]
    assert flag_values(argv) == ["tok-value-1", "key-value-2"]
    printed = "Namespace(token='tok-value-1', api_key='key-value-2', lr=0.1)"
    assert r.knowing(flag_values(argv)).text(printed) == (
        f"Namespace(token='{REDACTED}', api_key='{REDACTED}', lr=0.1)"
    )
    assert "tok-value-1" in r.text(printed)  # the plain redactor does not know them


def test_the_process_redactor_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert redact("value late-set-secret-42") == "value late-set-secret-42"
    monkeypatch.setenv("LATE_TOKEN", "late-set-secret-42")
    assert redact("value late-set-secret-42") == f"value {REDACTED}"


def test_a_long_log_keeps_its_head_and_tail_and_a_key_block_goes_whole(
    r: Redactor, tmp_path: Path
) -> None:
    log = tmp_path / "stdout.log"
    body = "".join(f"line {i}\n" for i in range(5000))
    key = (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEkeybody1\nMIIEkeybody2\n"
        "-----END RSA PRIVATE KEY-----\n"
    )
    log.write_text(body + key + "last\n")
    written, dropped = r.file(log, limit=1000)
    text = log.read_text()
    assert text.startswith("line 0\n") and text.endswith(f"{REDACTED}\nlast\n")
    assert f"[parity: {dropped} bytes of this log were left out here" in text
    assert "line 4999\n" in text and "line 2500\n" not in text and "MIIE" not in text
    assert len(text) < 1200 and written == len(body + key + "last\n")


def test_a_log_that_cannot_be_redacted_is_not_left_as_it_was(
    r: Redactor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "stderr.log"
    log.write_text("leaked hunter2hunter2\n")
    real = os.replace

    def full(src: object, dst: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    r.file(log)
    monkeypatch.setattr(os, "replace", real)
    assert "hunter2" not in log.read_text() and "could not be redacted" in log.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["stderr.log"]


#: formats by shape (round three): (text, the secret in it, what must stay)
BY_FORMAT = [
    ("curl -H 'Authorization: Basic dXNlcjpwbGFudGVkLWJhc2lj'", "dXNlcjpwbGFudGVk", "curl -H"),
    ('{"Authorization": "Bearer plantedBearerJson01"}', "plantedBearerJson01", "Authorization"),
    ("Proxy-Authorization: Digest plantedDigestValue7", "plantedDigestValue7", "Proxy-"),
    ("authorization=Token plantedTokenScheme88", "plantedTokenScheme88", "authorization="),
    ("header Basic cGxhbnRlZDpiYXNpYzI= sent", "cGxhbnRlZDpiYXNpYzI=", "sent"),
    ("GET https://a.blob.example/c?sv=2024&sig=plantedSasSig%2Bx&se=9", "plantedSasSig", "sv=2024"),
    (
        "https://b.s3.example/k?X-Amz-Credential=plantedCred%2F2026&X-Amz-Signature=f00dfeed99",
        "plantedCred",
        "b.s3.example",
    ),
    ("https://b.s3.example/k?X-Amz-Signature=f00dfeed99&x=1", "f00dfeed99", "x=1"),
    ("https://storage.example/o?X-Goog-Signature=beefcafe1234", "beefcafe1234", "storage"),
    ("https://api.example/v1?token=plantedQueryToken&page=2", "plantedQueryToken", "page=2"),
    ("https://api.example/v1?access_token=plantedAccess55", "plantedAccess55", "api.example"),
    ("https://maps.example/api?key=plantedQueryKey66", "plantedQueryKey66", "maps.example"),
    ("git clone https://plantedUserToken0123456@github.com/o/r", "plantedUserToken", "github.com"),
    ("python dl.py --url https://x.example/f?sig=plantedArgvSig9", "plantedArgvSig9", "dl.py"),
]


@pytest.mark.parametrize(("text", "secret", "kept"), BY_FORMAT, ids=[c[1] for c in BY_FORMAT])
def test_credentials_are_redacted_by_their_format(
    r: Redactor, text: str, secret: str, kept: str
) -> None:
    out = r.text(text)
    assert secret not in out and REDACTED in out and kept in out, out


@pytest.mark.parametrize(
    "text", ["Basic usage of the tool", "ssh://git@github.com/o/r", "https://x.example/?page=2"]
)
def test_text_that_only_looks_near_a_format_is_kept(r: Redactor, text: str) -> None:
    assert r.text(text) == text


@pytest.mark.parametrize(
    ("args", "secret"),
    [
        (["dl", "--header", "Authorization: Basic cGxhbnRlZDphcmd2MQ=="], "cGxhbnRlZDphcmd2MQ"),
        (["dl", "https://h.example/o?X-Amz-Signature=planted0argv2"], "planted0argv2"),
        (["dl", "--source=https://plantedUserInArgv0123@host/x"], "plantedUserInArgv0123"),
    ],
)
def test_a_command_line_is_recorded_without_them(r: Redactor, args: list[str], secret: str) -> None:
    recorded = r.argv(args)
    assert len(recorded) == len(args) and not any(secret in a for a in recorded)


def test_a_script_that_prints_a_secret_of_its_command_line_alone_is_redacted(r: Redactor) -> None:
    from parity.safety.redact import carried_values

    argv = [
        "python",
        "dl.py",
        "--url",
        "https://h.example/o?X-Amz-Signature=plantedAlone01&sig=plantedAlone02",
        "--header",
        "Authorization: Basic cGxhbnRlZEFsb25lMDM=",
        "--db",
        "postgres://u:plantedAlone04@db/x",
    ]
    printed = "signature plantedAlone01, sig plantedAlone02, cGxhbnRlZEFsb25lMDM=, plantedAlone04"
    out = r.knowing(carried_values(argv)).text(printed)
    assert "plantedAlone" not in out and "cGxhbnRlZEFsb25lMDM" not in out, out


# -- issue 53, class 7: glued, split, cut, and what a worker wrote with its redactor off ------

GLUED = [
    ("auth" + "hf_" + "Xy3" * 8, "hf_"),
    ("keys" + "AKIAPLANTEDGLUED7788", "AKIAPLANTED"),
    ("token:" + "ghp_" + "aB3" * 12, "ghp_aB3"),
    ("bearer" + "sk-proj-" + "Qw9" * 10, "sk-proj-"),
    ("x" + "xoxb-" + "Zz1" * 6, "xoxb-"),
    ("prefix" + "github_pat_" + "Pq7" * 10, "github_pat_"),
]


@pytest.mark.parametrize(("text", "secret"), GLUED, ids=[c[1] for c in GLUED])
def test_a_token_glued_to_the_text_before_it_is_redacted(
    r: Redactor, text: str, secret: str
) -> None:
    out = r.text(f"login {text}ok and more")
    assert secret not in out and "login" in out and "and more" in out, out


@pytest.mark.parametrize(
    "text",
    [
        "disk-usage-report-for-the-cluster-nodes",
        "task-scheduler-configuration-entries",
        "the_hf_transformers_integration_layer_works",
        "use_hf_hub_download_when_cached_locally",
    ],
)
def test_words_that_contain_a_token_prefix_are_kept(r: Redactor, text: str) -> None:
    assert r.text(text) == text


SPLIT = [
    # (how it is printed, what must not be left, what must stay)
    (
        "db\n" + ENV["DB_PWD"][:5] + "\n" + ENV["DB_PWD"][5:] + "\nnext",
        ["hunter2hu", "nter2hun"],
        "next",
    ),
    (
        ENV["MY_API_KEY"][:6] + "\r\n" + ENV["MY_API_KEY"][6:] + " done",
        ["k3y-va", "lue-123"],
        "done",
    ),
    ("ghp_" + "aB3" * 4 + "\n" + "aB3" * 8 + "\nok", ["aB3aB3aB3"], "ok"),
    ("token hf_Ab1Cd2\nEf3Gh4Ij5Kl6Mn7Op8\nend", ["Ef3Gh4Ij5", "hf_Ab1Cd2"], "end"),
]


@pytest.mark.parametrize(("text", "gone", "kept"), SPLIT)
@pytest.mark.parametrize("size", [1, 2, 5, 64, 4096])
def test_a_value_split_over_lines_is_redacted_whatever_the_writes(
    r: Redactor, text: str, gone: list[str], kept: str, size: int
) -> None:
    from parity.safety.stream import StreamRedactor

    assert not any(g in r.text(text) for g in gone), r.text(text)
    raw = text.encode()
    stream = StreamRedactor(r)
    out = "".join(stream.feed(raw[i : i + size]) for i in range(0, len(raw), size))
    out += stream.close()
    assert not any(g in out for g in gone) and kept in out, out
    assert out.count("\n") == text.count("\n")  # the lines stay lines


def _halves(value: str) -> list[str]:
    """Pieces of ``value`` that would still give it away (a third of it, at least 6)."""
    n = max(6, len(value) // 3)
    return [value[i : i + n] for i in range(0, len(value) - n + 1)]


@pytest.mark.parametrize("value", [ENV["DB_PWD"], "ghp_" + "Tk4" * 12], ids=["known", "format"])
@pytest.mark.parametrize("where", ["head", "tail"])
def test_a_secret_across_the_cut_of_a_long_log_leaves_no_half(
    tmp_path: Path, where: str, value: str
) -> None:
    """A log longer than the limit is cut after its head and before its tail; a
    value straddling either cut, in a line far longer than a read, is left out whole or
    kept redacted, never halved (here by a redactor that knows it by its format only, or
    not at all: the relay redacted a known value before)."""
    limit, total = 256 << 10, 768 << 10  # the head is half the limit (LOG_HEAD at most)
    at = limit // 2 if where == "head" else total - limit // 2
    data = bytearray(b"start\n" + b"w " * (total // 2))
    data[-5:] = b" end."  # one line from the start on: the tail starts mid-line
    offset = at - len(value) // 2
    data[offset : offset + len(value)] = value.encode()
    log = tmp_path / "stdout.log"
    log.write_bytes(bytes(data))
    written, dropped = Redactor({}).file(log, limit=limit)
    kept = log.read_text()
    assert written == len(data) and dropped > 0
    assert kept.startswith("start\nw w") and kept.endswith("w w end.")
    assert not [h for h in _halves(value) if h in kept], where


def test_a_document_is_redacted_string_by_string_digests_kept(r: Redactor) -> None:
    digest = "0f08d4e6e69f03ee54b2f9f4fa2fe06ac8198007a9adecd6d93abf9d70d50ddf"
    doc = {
        "message": f"failed with {ENV['DB_PWD']}",
        "env": {"HF_TOKEN": "hf_" + "Ab1" * 10},
        "list": ["password=plantedDoc1", 3, None, 2.5],
        "fingerprint": digest,
        "where": "work/secrets.py:113",
        "workload": "/home/u/tokens.py:Factory",
    }
    out = r.document(doc)
    assert isinstance(out, dict)
    text = repr(out)
    assert "hunter2" not in text and "Ab1Ab1" not in text and "plantedDoc1" not in text
    assert out["fingerprint"] == digest and out["list"][1:] == [3, None, 2.5]
    assert out["where"] == "work/secrets.py:113" and out["workload"] == doc["workload"]
