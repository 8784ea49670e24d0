from __future__ import annotations

from importlib.metadata import EntryPoints

import pytest

from parity import plugins


def test_a_zygote_lists_the_entry_points_once_for_its_forks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    groups: list[str] = []

    def listing(*, group: str) -> EntryPoints:
        groups.append(group)
        return EntryPoints(())

    monkeypatch.setattr(plugins, "entry_points", listing)
    monkeypatch.setattr(plugins, "_listed", None)
    plugins.load_plugins()  # not remembered: read at each call
    plugins.load_plugins()
    assert groups == list(plugins.GROUPS) * 2
    groups.clear()
    plugins.remember_entry_points()
    assert groups == list(plugins.GROUPS)
    plugins.load_plugins()
    plugins.load_plugins()
    assert groups == list(plugins.GROUPS)  # the forks read the zygote's listing
