"""The client's reading of log-probabilities in the formats vLLM documents: the legacy
completions object (parallel lists) and chat's ``content`` list; -inf kept finite."""

from __future__ import annotations

import pytest

from parity.serving.client import FLOOR, Endpoint, body, logprobs_of


def test_completions_logprobs() -> None:
    chunk = {"choices": [{"index": 0, "text": " Paris", "logprobs": {
        "tokens": [" Par", "is"], "token_logprobs": [-0.25, float("-inf")],
        "top_logprobs": [{" Par": -0.25, " Lyon": -2.0}, None], "text_offset": [0, 4],
    }}]}  # fmt: skip
    got = logprobs_of(chunk)
    assert got is not None and [g.piece for g in got] == [" Par", "is"]
    assert got[0].logprob == pytest.approx(-0.25) and got[1].logprob == FLOOR
    assert got[0].top == ((" Par", -0.25), (" Lyon", -2.0)) and got[1].top == ()


def test_chat_logprobs() -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "Hi"}, "logprobs": {"content": [
        {"token": "Hi", "logprob": -0.1, "bytes": [72, 105],
         "top_logprobs": [{"token": "Hello", "logprob": -2.5}, {"token": "Hi", "logprob": -0.1}]},
    ]}}]}  # fmt: skip
    got = logprobs_of(chunk)
    assert got is not None and len(got) == 1 and got[0].piece == "Hi"
    assert got[0].top == (("Hi", -0.1), ("Hello", -2.5))  # likeliest first


def test_no_logprobs_is_none() -> None:
    assert logprobs_of({"choices": [{"index": 0, "text": "x", "logprobs": None}]}) is None
    assert logprobs_of({"choices": [], "usage": {"completion_tokens": 3}}) is None


def test_asked_only_where_the_server_takes_them() -> None:
    taken = Endpoint(base="http://h", model="m")
    assert body(taken, [1], 4, 0, 5)["logprobs"] == 5
    assert "logprobs" not in body(taken, [1], 4, 0)
    assert "logprobs" not in body(
        Endpoint(base="http://h", model="m", logprobs=False), [1], 4, 0, 5
    )


def test_the_chat_api_sends_one_user_message() -> None:
    chat = Endpoint(base="http://h", api_path="/v1/chat/completions", model="m")
    got = body(chat, "the capital of France is", 4, 0, 5)
    assert got["messages"] == [{"role": "user", "content": "the capital of France is"}]
    assert "prompt" not in got and got["logprobs"] is True and got["top_logprobs"] == 5
    assert got["stream_options"] == {"include_usage": True} and got["max_tokens"] == 4
