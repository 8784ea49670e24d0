"""One rule for the URLs a user gives: a URL parity keeps or prints is refused in one
line, before anything is written, when it carries a user, a password, a query or a
fragment; a database URL's password (unencoded ``/``, ``#``, ``?``, or ``?password=``) is
masked in every line and file. Each secret is planted where it can enter and searched
for in everything written and printed."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import make_url

from parity.errors import OptionError
from parity.safety.redact import Redactor, redact
from parity.safety.urls import checked, database, refusal, safe_form
from parity.store.engine import locate
from tests.conftest import run_cli

SECRET = "PlantedSecret4711"
#: URLs that must never be kept: what is planted, and the kind of refusal
UNSAFE = [
    (f"s3://b/run1?X-Amz-Signature={SECRET}&X-Amz-Credential=c", "a query"),
    (f"s3://b/run1?token={SECRET}", "a query"),
    (f"s3://b/run1#{SECRET}", "a fragment"),
    (f"s3://user:{SECRET}@b/run1", "a user or password"),
    (f"s3://{SECRET}@b/run1", "a user or password"),
    (f"gs://u:pa/{SECRET}#?@b/run1", "a user or password"),
    (f"file:///tmp/x?sig={SECRET}", "a query"),
    (f"ray://u:{SECRET}@head:10001", "a user or password"),
    (f"ray://head:10001/?token={SECRET}", "a query"),
]
#: passwords SQLAlchemy reads unencoded from a database URL, and one as a query parameter
PASSWORDS = [f"p/{SECRET}", f"{SECRET}#x", f"a?{SECRET}", f"{SECRET}%2Fz"]
DB_URLS = [f"postgresql://alice:{pw}@db.example:5432/team" for pw in PASSWORDS] + [
    f"postgresql://alice@db.example/team?sslmode=require&password={SECRET}"
]


@pytest.mark.parametrize(("url", "why"), UNSAFE)
def test_an_unsafe_url_is_refused_without_its_secret(url: str, why: str) -> None:
    assert refusal(url) == why
    assert SECRET not in safe_form(url)
    with pytest.raises(OptionError) as info:
        checked(url, "--out")
    assert SECRET not in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("url", ["s3://b/run1", "ray://head:10001", "/tmp/x?y", "rel/dir"])
def test_a_safe_url_or_a_path_is_taken_as_given(url: str) -> None:
    assert checked(url, "--out") == url


@pytest.mark.parametrize("url", DB_URLS)
def test_a_database_password_is_masked_in_what_is_shown(url: str) -> None:
    shown = database(url)
    assert SECRET not in shown and "db.example" in shown and "***" in shown
    assert SECRET not in locate(url).shown
    # and the process's redactor knows it from now on, wherever it turns up
    password = make_url(url).password or make_url(url).query["password"]
    assert SECRET not in redact(f"driver said: password {password} refused")
    assert SECRET not in Redactor({"PARITY_STORE": url}).text(f"PARITY_STORE={url}")


def _refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str, **env: str) -> str:
    monkeypatch.chdir(tmp_path)
    res = run_cli(*args, env=env or None)
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert SECRET not in res.stdout + res.stderr
    assert list(tmp_path.iterdir()) == [], "something was written before the refusal"
    return res.stderr


@pytest.mark.parametrize(("url", "why"), UNSAFE[:7])
def test_every_url_argument_is_refused_before_anything_is_written(
    url: str, why: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for args in (
        ("compare", "mlp-train", "--steps", "2", "--out", url),
        ("run", "mlp-train", "--device", "cpu", "--out", url),
        ("diff", url, "s3://b/run1/target"),
        ("report", url),
        ("reindex", url),
    ):
        said = _refused(tmp_path, monkeypatch, *args)
        assert why in said or "local directory" in said, said
    said = _refused(tmp_path, monkeypatch, "compare", "--resume", url)
    assert "local directory" in said or why in said


@pytest.mark.parametrize("url", [u for u, _ in UNSAFE if u.startswith("ray")])
def test_a_cluster_address_with_a_secret_is_refused(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    said = _refused(tmp_path, monkeypatch, "compare", "mlp-train", "--cluster", url)
    assert "--cluster ray://head:10001" in said
    said = _refused(
        tmp_path, monkeypatch, "compare", "mlp-train", "--cluster", "auto", RAY_ADDRESS=url
    )
    assert said.startswith("parity: error: RAY_ADDRESS ray://head:10001")


def test_an_mlflow_uri_with_a_token_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = f"http://mlflow.example:5000/?token={SECRET}"
    said = _refused(tmp_path, monkeypatch, "compare", "mlp-train", "--mlflow", uri)
    assert "--mlflow http://mlflow.example:5000/" in said


@pytest.mark.parametrize("url", DB_URLS)
def test_parity_env_and_an_unreachable_index_never_print_the_password(url: str) -> None:
    res = run_cli("env", "--json", env={"PARITY_STORE": url})
    assert res.returncode == 0, res.stderr
    assert SECRET not in res.stdout + res.stderr
    assert "db.example" in res.stdout  # recorded, masked: a reader sees it was set
    res = run_cli("ls", "--store", url.replace("db.example", "127.0.0.1").replace("5432", "1"))
    assert res.returncode == 2
    assert SECRET not in res.stdout + res.stderr


@pytest.mark.slow
def test_a_run_with_a_database_password_writes_it_nowhere(tmp_path: Path) -> None:
    url = f"postgresql://alice:p/{SECRET}#?x@127.0.0.1:1/team?password=Q{SECRET}"
    out = tmp_path / "r"
    # a workload's own database URL in its environment: recorded, its password masked
    res = run_cli(
        "run", "mlp-train", "--device", "cpu", "--steps", "2", "--out", str(out),
        env={"DATABASE_URL": url},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name == "manifest.json" for p in files)
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in res.stdout + res.stderr
    # the same URL as the index, where nothing listens: refused before running, masked
    res = run_cli(
        "run", "mlp-train", "--device", "cpu", "--steps", "2", "--out", str(tmp_path / "s"),
        env={"PARITY_STORE": url},
    )  # fmt: skip
    assert res.returncode == 2 and "cannot reach the index" in res.stderr, res.stderr
    assert SECRET not in res.stdout + res.stderr and not (tmp_path / "s").exists()
