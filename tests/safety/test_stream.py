"""A stream redacted as it is written: whatever its pieces, no secret is let out, cut in
two or not."""

from __future__ import annotations

import pytest

from parity.safety.redact import REDACTED, Redactor
from parity.safety.stream import StreamRedactor
from tests.safety.test_redact import ENV, _halves


@pytest.fixture
def r() -> Redactor:
    return Redactor(ENV)


SPLITS = [1, 3, 7, 64, 1000]


@pytest.mark.parametrize("size", SPLITS)
def test_a_stream_is_redacted_whatever_its_pieces(r: Redactor, size: int) -> None:
    text = (
        "step 1 Authorization: Basic cGxhbnRlZDpzdHJlYW0x\n"
        "url https://h.example/o?sig=plantedStreamSig2\n"
        "-----BEGIN RSA PRIVATE KEY-----\nplantedKeyBody3\n-----END RSA PRIVATE KEY-----\n"
        f"db password={ENV['DB_PWD']} done\n"
        + " ".join(f"word{i}" for i in range(60))  # longer than a piece: cut at spaces
        + f" sk-{'q' * 40} "
        + " ".join(f"word{i}" for i in range(60))
        + f"\nno newline at the end hf_{'p' * 30}"
    )
    raw = text.encode()
    stream = StreamRedactor(r, longest=256)
    out = "".join(stream.feed(raw[i : i + size]) for i in range(0, len(raw), size))
    out += stream.close()
    for secret in (
        "cGxhbnRlZDpzdHJlYW0x",
        "plantedStreamSig2",
        "plantedKeyBody3",
        "hunter2",
        "p" * 30,
    ):
        assert secret not in out, (secret, out)
    assert "step 1" in out and "done" in out and "no newline" in out and "word59" in out


def test_a_line_longer_than_a_read_never_cuts_a_secret_in_two(r: Redactor) -> None:
    """One line of several MiB, no spaces where the relay would cut it: known values and
    token formats planted across every 64 KiB boundary of the reads."""
    chunk = 1 << 16
    planted = [ENV["DB_PWD"], ENV["MY_API_KEY"], "hf_" + "Qz7" * 10, "AKIAPLANTEDLONGLINE77"]
    parts: list[str] = []
    size = 0
    for k in range(1, 40):
        value = planted[k % len(planted)]
        filler = "," * (k * chunk - (k % 11) - size - len(value) // 2)
        parts += [filler, value]
        size += len(filler) + len(value)
    raw = ("".join(parts) + ",end\n").encode()
    for longest in (chunk, 4 * chunk):
        stream = StreamRedactor(r, longest=longest)
        out = "".join(stream.feed(raw[i : i + chunk]) for i in range(0, len(raw), chunk))
        out += stream.close()
        leaks = [h for v in planted for h in _halves(v) if h in out]
        assert not leaks and out.count(REDACTED) == 39 and out.endswith(",end\n")
