"""The installed distributions a manifest lists: names, versions, origins, no credentials."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from dataclasses import dataclass, field

import pytest

from parity.model.codec import decode, dumps, loads
from parity.model.manifest import PipFreeze
from parity.model.stack import Package, PackageOrigin
from parity.probes import packages
from parity.probes.packages import freeze, installed, origin


@dataclass
class FakeDist:
    """A distribution as ``importlib.metadata`` gives one: metadata and files."""

    name: str | None
    version: str
    files: dict[str, str] = field(default_factory=dict)

    @property
    def metadata(self) -> dict[str, str | None]:
        return {"Name": self.name, "Version": self.version}

    def read_text(self, filename: str) -> str | None:
        return self.files.get(filename)


def direct(url: str, **info: object) -> dict[str, str]:
    return {"direct_url.json": json.dumps({"url": url, **info})}


def test_the_list_is_sorted_normalised_and_first_on_the_path_wins() -> None:
    dists = [
        FakeDist("Typing_Extensions", "4.12.2"),
        FakeDist("six", "1.17.0"),
        FakeDist("six", "1.16.0"),  # shadowed (the system's, behind a venv's)
        FakeDist(None, "0"),  # a broken distribution: skipped
        FakeDist("Torch", "2.13.0+cpu"),
    ]
    got = freeze(dists)  # type: ignore[arg-type]
    assert got.installed == (
        Package(name="six", version="1.17.0"),
        Package(name="torch", version="2.13.0+cpu"),
        Package(name="typing-extensions", version="4.12.2"),
    )
    # the digest and count are what parity always wrote: every distribution's line
    lines = sorted({"typing_extensions==4.12.2", "six==1.17.0", "six==1.16.0", "torch==2.13.0+cpu"})
    assert got.sha256 == hashlib.sha256("\n".join(lines).encode()).hexdigest()
    assert got.packages == 4 and got.truncated is None


def test_origins_from_direct_url() -> None:
    dists = [
        FakeDist("a", "1.0", direct("file:///src/a", dir_info={"editable": True})),
        FakeDist("b", "1.1", direct("file:///tmp/b", dir_info={})),
        FakeDist(
            "c",
            "0.3",
            direct(
                "https://github.com/org/c.git",
                vcs_info={"vcs": "git", "commit_id": "0123456789abcdef" * 2 + "01234567"},
            ),
        ),
        FakeDist("d", "2.0", direct("https://files.example/d-2.0.whl", archive_info={})),
        FakeDist("e", "1.0", {"direct_url.json": "{not json"}),
        FakeDist("f", "1.0", {"direct_url.json": json.dumps(["no", "url"])}),
    ]
    got = {p.name: p for p in freeze(dists).installed or ()}  # type: ignore[arg-type]
    assert got["a"].origin == PackageOrigin(kind="editable", url="file:///src/a")
    assert got["b"].origin == PackageOrigin(kind="directory", url="file:///tmp/b")
    c = got["c"].origin
    assert c is not None and (c.kind, c.vcs, c.commit[:4]) == ("vcs", "git", "0123")  # type: ignore[index]
    assert got["c"].label == "0.3 (git https://github.com/org/c.git@0123456789ab)"
    assert got["d"].origin == PackageOrigin(kind="archive", url="https://files.example/d-2.0.whl")
    assert got["e"].origin is None and got["f"].origin is None


@pytest.mark.parametrize(
    "url",
    [
        "https://alice:ghp_plantedTokenValue0123456789abcdefXY@github.com/org/private.git",
        "https://oauth2:planted-token-value@gitlab.example/org/private.git",
        "git+https://planted-token-value@github.com/org/private.git",
        "https://user:pass%40word-planted@host.example:8443/x/y-1.0.tar.gz",
    ],
)
def test_credentials_in_urls_never_reach_the_list(url: str) -> None:
    info = {"vcs_info": {"vcs": "git", "commit_id": "abc"}} if ".git" in url else {}
    found = origin(json.dumps({"url": url, **info}))
    assert found is not None and "@" not in found.url.split("/", 3)[2]
    for secret in ("ghp_planted", "planted-token-value", "pass%40word-planted", "alice", "oauth2"):
        assert secret not in found.url
    assert found.url.endswith(url.rsplit("@", 1)[1].split("/", 1)[1])


def test_the_list_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packages, "MAX_PACKAGES", 3)
    got = freeze([FakeDist(f"p{i}", "1.0") for i in range(5)])  # type: ignore[arg-type]
    assert [p.name for p in got.installed or ()] == ["p0", "p1", "p2"]
    assert got.truncated is True and got.packages == 5


def test_this_environment_lists_parity_itself_and_round_trips() -> None:
    got = installed()
    names = {p.name: p for p in got.installed or ()}
    assert names["torch"].version == importlib.metadata.version("torch")
    assert names["parity"].origin is not None  # the dev install is editable, from a path
    assert names["parity"].origin.kind == "editable"
    assert decode(PipFreeze, loads(dumps(got))) == got
    assert got.packages >= len(names)
