"""A side's API: given, or as its URL ends (recorded in ``serve.json``)."""

from __future__ import annotations

import pytest

from parity.serving.endpoint import api_path_of, base_url


@pytest.mark.parametrize(
    ("url", "given", "api"),
    [
        ("http://h:8000", None, "/v1/completions"),
        ("http://h:8000/v1/completions", None, "/v1/completions"),
        ("http://h:8000/v1/chat/completions", None, "/v1/chat/completions"),
        ("http://h:8000/v1/chat/completions/", None, "/v1/chat/completions"),
        ("http://h:8000", "/v1/chat/completions", "/v1/chat/completions"),
        ("http://h:8000/v1/chat/completions", "v1/completions", "/v1/completions"),
    ],
)
def test_the_api_is_given_or_read_from_the_url(url: str, given: str | None, api: str) -> None:
    assert api_path_of(url, given) == api
    assert base_url(url, "target") == "http://h:8000"
