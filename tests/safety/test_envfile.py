"""Secrets a workload loads from a ``.env`` file: parity learns them from the same file
(the one ``load_dotenv`` finds), never writes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from parity.safety import envfile

DOTENV = """\
# the service's settings
export SERVICE_TOKEN="planted-quoted-token-11"
WANDB_API_KEY=planted-wandb-key-22   # a comment after it
DB_PASSWORD='planted single quoted 33'
DATABASE_URL=postgres://app:planted-url-pw-44@db.example/x
MODEL_FAMILY=mlp
PLAIN_MARKED=planted-marked-55
PARITY_REDACT=PLAIN_MARKED
not a line at all
"""


def test_the_secret_values_of_the_nearest_env_file_above_are_learned(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(DOTENV)
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    learned = envfile.secrets([deep])
    for value in (
        "planted-quoted-token-11",
        "planted-wandb-key-22",
        "planted single quoted 33",
        "planted-url-pw-44",
        "planted-marked-55",
    ):
        assert value in learned, value
    assert "mlp" not in learned and not any("#" in v for v in learned)
    # the nearest one wins, as load_dotenv finds it
    (deep / ".env").write_text("OTHER_TOKEN=planted-nearer-66\n")
    nearer = envfile.secrets([deep])
    assert "planted-nearer-66" in nearer and "planted-quoted-token-11" not in nearer


def test_a_link_or_a_huge_file_is_not_read(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("LINKED_TOKEN=planted-linked-77\n")
    work = tmp_path / "w"
    work.mkdir()
    (work / ".env").symlink_to(target)
    assert "planted-linked-77" not in envfile.secrets([work])
    (work / ".env").unlink()
    (work / ".env").write_text("BIG_TOKEN=planted-big-88\n" + "#" * envfile.MOST_BYTES)
    assert "planted-big-88" not in envfile.secrets([work])


@pytest.mark.parametrize("line", ["", "# only a comment", "=no name", "NAME"])
def test_lines_that_set_nothing_set_nothing(tmp_path: Path, line: str) -> None:
    (tmp_path / ".env").write_text(line + "\n")
    assert envfile.values(tmp_path / ".env") == {}
