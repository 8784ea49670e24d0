"""``parity serve`` end to end against scripted servers: one started by parity from its
command, one given by URL; the verdict, the bundles, ``parity diff``, and bad input."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from parity.testing.pace import patience
from tests.conftest import run_cli
from tests.serving.conftest import free_port, scripted_command

LOAD = ("--requests", "40", "--warmup", "2", "--prompt-tokens", "8..16", "--output-tokens", "6..6",
        "--quality-prompts", "8", "--no-ceiling")  # fmt: skip
#: the script: 0.1 s to the first token, 0.04 s a token, 6 tokens: 0.3 s a request, 2 slots
SCRIPT = {"ttft": 0.1, "token": 0.04, "slots": 2}


@pytest.mark.slow
def test_a_command_side_and_a_url_side(scripted: Callable[..., str], tmp_path: Path) -> None:
    target = scripted(**SCRIPT)
    port = free_port()
    cmd = shlex.join(scripted_command(port, **SCRIPT))
    out = tmp_path / "run"
    got = run_cli(
        "serve", "--baseline-url", f"http://127.0.0.1:{port}", "--baseline-cmd", cmd,
        "--target-url", target, *LOAD, "--slo", "e2e_p90=1s", "--max-steps", "4",
        "--client-lag", "200ms",  # a busy test machine: the flag has a test of its own
        "--price", "baseline=2.0", "--price", "target=1.0", "--out", str(out),
    )  # fmt: skip
    assert got.returncode == 0, got.stdout + got.stderr
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["outcome"] == "pass" and verdict["quality_passed"]
    assert [q["exact"] for q in verdict["quality"]] == [q["prompts"] for q in verdict["quality"]]
    base = json.loads((out / "baseline" / "serve.json").read_text())
    assert base["cold_start_s"] > 0 and "parity.testing.scripted" in base["server_command"]
    assert verdict["capacity"]["baseline"]["rate"] > 0 and verdict["cost"]["target"]
    assert "serving verdict: PASS" in got.stdout
    # parity diff of the two bundles gives the same verdict
    again = run_cli("diff", str(out / "baseline"), str(out / "target"),
                    "--price", "baseline=2.0", "--price", "target=1.0")  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert got.stdout.splitlines()[0] == again.stdout.splitlines()[0]
    page = (out / "report.html").read_text()
    assert page.count("<tr>") > 3 and "<svg" in page and "e2e_p90 against the offered rate" in page


@pytest.mark.slow
def test_answers_that_differ_fail_before_speed(
    scripted: Callable[..., str], tmp_path: Path
) -> None:
    """With log-probabilities: the target's are 0.25 lower on every token, and each side
    lists the other's choice 0.2 below its own (``parity.testing.scripted``)."""
    base, target = scripted(**SCRIPT), scripted(**SCRIPT, diverge_at=3, logprob_shift=0.25)
    got = run_cli("serve", "--baseline-url", base, "--target-url", target, *LOAD,
                  "--out", str(tmp_path / "q"))  # fmt: skip
    assert got.returncode == 1, got.stdout + got.stderr
    v = json.loads((tmp_path / "q" / "verdict.json").read_text())
    assert "quality-differs" in v["codes"] and v["quality"][0]["exact"] == 0
    assert v["quality"][0]["first_divergence"][1] == 3
    c1 = v["quality"][0]
    lp = c1["logprobs"]
    assert lp["prompts"] == c1["prompts"] and lp["tokens"] == 3 * c1["prompts"]
    assert lp["mean_abs"] == pytest.approx(0.25) and lp["max_abs"] == pytest.approx(0.25)
    at = lp["at_divergence"]
    assert at["position"] == 3 and at["baseline_piece"] != at["target_piece"]
    assert at["baseline_logprob"] == pytest.approx(-0.5)
    assert at["target_logprob"] == pytest.approx(-0.75)
    assert at["baseline_of_target"] == pytest.approx(-0.7)
    assert at["target_of_baseline"] == pytest.approx(-0.95)
    assert "log-probabilities: |target - baseline| mean 0.25" in got.stdout


@pytest.mark.slow
def test_a_server_that_exits_is_a_side_failure(
    scripted: Callable[..., str], tmp_path: Path
) -> None:
    target = scripted(**SCRIPT)
    port = free_port()
    got = run_cli(
        "serve", "--baseline-url", f"http://127.0.0.1:{port}",
        "--baseline-cmd", "python3 -c 'import sys; sys.exit(3)'", "--target-url", target, *LOAD,
        "--out", str(tmp_path / "f"),
    )  # fmt: skip
    assert got.returncode == 1
    v = json.loads((tmp_path / "f" / "verdict.json").read_text())
    assert v["failed_sides"]["baseline"].startswith("the server exited with code 3")
    assert (tmp_path / "f" / "target" / "events.jsonl").read_text().count("\n") >= 8


@pytest.mark.parametrize(
    ("url_of", "said"),
    [
        (lambda base: "http://127.0.0.1:9", "does not answer"),
        (lambda base: base.replace("http://", "http://user:hunter22@"), "is refused"),
        (lambda base: base + "/?api_key=hunter22", "is refused"),
    ],
)
@pytest.mark.slow
def test_bad_urls_are_one_line_before_measuring(
    scripted: Callable[..., str], tmp_path: Path, url_of: Callable[[str], str], said: str
) -> None:
    base = scripted(**SCRIPT)
    out = tmp_path / "b"
    got = run_cli("serve", "--baseline-url", base, "--target-url", url_of(base), *LOAD,
                  "--out", str(out))  # fmt: skip
    assert got.returncode == 2, got.stdout + got.stderr
    assert said in got.stderr and len(got.stderr.strip().splitlines()) == 1
    assert "hunter22" not in got.stderr + got.stdout
    assert not out.exists()


@pytest.mark.parametrize(
    ("script", "options", "said"),
    [
        ({}, ("--model", "nonesuch"), "does not know the model"),
        ({"no_stream": True}, (), "does not stream"),
    ],
)
@pytest.mark.slow
def test_bad_endpoints_are_one_line_before_measuring(
    scripted: Callable[..., str], tmp_path: Path, script: dict[str, object],
    options: tuple[str, ...], said: str,
) -> None:  # fmt: skip
    base, target = scripted(**SCRIPT), scripted(**SCRIPT, **script)
    got = run_cli("serve", "--baseline-url", base, "--target-url", target, *LOAD, *options,
                  "--out", str(tmp_path / "m"))  # fmt: skip
    assert got.returncode == 2, got.stdout + got.stderr
    assert said in got.stderr and not (tmp_path / "m").exists()


@pytest.mark.slow
def test_an_api_key_is_sent_never_written(scripted: Callable[..., str], tmp_path: Path) -> None:
    """With the client's ceiling measured too: it is in each side's bundle, and the
    no-work server's own logs are not left behind."""
    base, target = scripted(**SCRIPT), scripted(**SCRIPT)
    out = tmp_path / "k"
    load = [a for a in LOAD if a != "--no-ceiling"]
    got = run_cli("serve", "--baseline-url", base, "--target-url", target, *load,
                  "--api-key-env", "PARITY_TEST_KEY", "--out", str(out),
                  env={"PARITY_TEST_KEY": "sk-secretvalue123"})  # fmt: skip
    assert got.returncode in (0, 3), got.stderr
    for path in out.rglob("*"):
        if path.is_file():
            assert "sk-secretvalue123" not in path.read_text(errors="replace"), path
    assert "sk-secretvalue123" not in got.stdout + got.stderr
    side = json.loads((out / "target" / "serve.json").read_text())
    assert side["client_ceiling_rps"] > 10
    assert sorted(p.name for p in out.iterdir()) == [
        "baseline",
        "report.html",
        "target",
        "verdict.json",
    ]


@pytest.mark.slow
@pytest.mark.parametrize("signum", ["SIGTERM", "SIGINT"])
def test_a_signal_stops_the_servers_and_keeps_what_was_measured(
    scripted: Callable[..., str], tmp_path: Path, signum: str
) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    from parity.serving.server import answers

    target = scripted(**SCRIPT)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    cmd = shlex.join(scripted_command(port, **SCRIPT))
    out = tmp_path / "t"
    args = ["serve", "--baseline-url", base, "--baseline-cmd", cmd, "--target-url", target,
            *LOAD, "--requests", "400", "--slo", "e2e_p90=1s", "--out", str(out)]  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "parity", *args], stderr=subprocess.PIPE)
    deadline = time.monotonic() + patience(120)
    while answers(base) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(patience(4))  # into the measuring, which a busy machine reaches later
    os.kill(proc.pid, getattr(signal, signum))
    _, err = proc.communicate(timeout=patience(120))
    assert proc.returncode == 130, err
    assert answers(base) is None  # the server parity started is gone
    side = json.loads((out / "baseline" / "serve.json").read_text())
    assert side["status"] == "failed" and "interrupted" in side["reason"]
    assert (out / "baseline" / "events.jsonl").stat().st_size > 0
    assert json.loads((out / "verdict.json").read_text())["outcome"] == "fail"


@pytest.mark.slow
def test_a_closed_loop_gives_its_throughput_as_the_rate(
    scripted: Callable[..., str], tmp_path: Path
) -> None:
    """Two requests in flight on 2 slots of 0.3 s: about 6.7 requests/s, within the limit.
    The target ignores the log-probability fields, as ``transformers serve`` does."""
    base, target = scripted(**SCRIPT), scripted(**SCRIPT, no_logprobs=True)
    out = tmp_path / "c"
    # the default 25 ms limit on the client's own lag, stretched as a busy machine slows it
    lag = f"{patience(0.025) * 1e3:.0f}ms"
    got = run_cli("serve", "--baseline-url", base, "--target-url", target, *LOAD,
                  "--arrival", "closed", "--concurrency", "2", "--slo", "e2e_p90=1s",
                  "--client-lag", lag, "--out", str(out))  # fmt: skip
    assert got.returncode == 0, got.stdout + got.stderr
    v = json.loads((out / "verdict.json").read_text())
    for role in ("baseline", "target"):
        cap = v["capacity"][role]
        assert cap["stopped"] == "closed-loop" and cap["rate"] == pytest.approx(6.7, rel=0.25)
    assert v["ratio"] == pytest.approx(1.0, rel=0.2)
    for q in v["quality"]:
        assert "logprobs" not in q and q["logprobs_absent"] == ["target"]
    assert "log-probabilities: not available (target server gave none)" in got.stdout


@pytest.mark.slow
def test_a_soak_at_the_highest_rate_ticks_sustained_load(
    scripted: Callable[..., str], tmp_path: Path
) -> None:
    """Eight slots of 0.3 s (about 26 requests/s); a two-step search passes about 3.3 and
    6.6 requests/s, and each side then holds its rate for 8 s: a drift of 1% of the median
    a second (36 an hour) is what so short a soak can exclude. A busy machine's own drift
    (its load rising by some tens of milliseconds of latency) is a slope over the soak's
    length: the soak lasts longer there, by the load. ``parity diff`` judges the soak
    against the bound it ran with."""
    steady = {**SCRIPT, "slots": 8}
    base, target = scripted(**steady), scripted(**steady)
    out = tmp_path / "s"
    soak_s = round(patience(8))
    got = run_cli("serve", "--baseline-url", base, "--target-url", target, *LOAD,
                  "--slo", "e2e_p90=2s", "--max-steps", "2", "--client-lag", "200ms",
                  "--soak", f"{soak_s}s", "--max-drift", "36", "--out", str(out))  # fmt: skip
    assert got.returncode == 0, got.stdout + got.stderr
    v = json.loads((out / "verdict.json").read_text())
    for role in ("baseline", "target"):
        soaked = v["soak"][role]
        why = {k: soaked[k] for k in ("drift", "limits", "failed_windows", "conclusive")}
        assert soaked["passed"] and soaked["rate"] == v["capacity"][role]["rate"], (role, why)
        assert sum(w["sent"] for w in soaked["windows"]) == pytest.approx(
            soak_s * soaked["rate"], abs=1
        )
    assert v["unproven"][0]["item"] == "sustained load" and v["unproven"][0]["checked"]
    assert "sustained load: checked (parity serve --soak" in got.stdout
    again = run_cli("diff", str(out / "baseline"), str(out / "target"))
    assert again.stdout.splitlines()[0] == got.stdout.splitlines()[0], again.stdout
    assert "sustained load: checked" in again.stdout
    # indexed as it was written: parity ls lists it, parity show prints its verdict
    listed = json.loads(run_cli("ls", "--json").stdout)
    [row] = [r for r in listed if r["path"] == str(out.resolve())]
    assert row["type"] == "serve" and row["result"] == "PASS"
    shown = run_cli("show", row["id"])
    assert shown.stdout.splitlines()[0] == got.stdout.splitlines()[0], shown.stdout


def test_a_soak_needs_limits_or_a_rate(tmp_path: Path) -> None:
    got = run_cli("serve", "--baseline-url", "http://127.0.0.1:9", "--target-url",
                  "http://127.0.0.1:9", "--soak", "1h", "--out", str(tmp_path / "x"))  # fmt: skip
    assert got.returncode == 2 and "--soak holds the highest rate" in got.stderr
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_the_chat_api_is_read_from_the_urls(scripted: Callable[..., str], tmp_path: Path) -> None:
    """Both URLs end in /v1/chat/completions: the prompts go as one user message of text,
    the answers come as deltas, log-probabilities in chat's form (the target's 0.25 lower)."""
    base, target = scripted(**SCRIPT), scripted(**SCRIPT, logprob_shift=0.25)
    chat = "/v1/chat/completions"
    out = tmp_path / "chat"
    got = run_cli("serve", "--baseline-url", base + chat, "--target-url", target + chat,
                  *LOAD, "--out", str(out))  # fmt: skip
    assert got.returncode == 3, got.stdout + got.stderr  # no --slo: speed unproven
    v = json.loads((out / "verdict.json").read_text())
    assert v["quality_passed"] and v["codes"] == ["no-limits"]
    c1 = v["quality"][0]
    assert c1["exact"] == c1["prompts"] == 8 and c1["tokens"] == 8 * 6
    assert c1["logprobs"]["mean_abs"] == pytest.approx(0.25) and c1["logprobs"]["tokens"] == 48
    for role in ("baseline", "target"):
        side = json.loads((out / role / "serve.json").read_text())
        assert side["api_path"] == chat and side["prompt_form"] == "text"
