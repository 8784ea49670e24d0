"""A worker's logs are redacted as they are written (``runner.logs``): at no moment does an
unredacted byte reach a log file, whether the worker writes through the FIFOs' write ends
(spawned) or opens them by path (forked), ends or is killed mid-line."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from parity.runner.logs import LogRelay
from parity.safety.redact import REDACTED, Redactor
from parity.testing.pace import patience

SECRET = "planted-relay-secret-4242"
#: the child prints a secret in pieces (a known value, an Authorization header, a signed
#: URL), then lingers so that it can be killed with the secret's line still open
CHILD = f"""
import os, sys, time
out = sys.stdout if len(sys.argv) < 2 else open(sys.argv[1], "w")
err = sys.stderr if len(sys.argv) < 3 else open(sys.argv[2], "w")
for piece in ("connecting with {SECRET[:9]}", "{SECRET[9:]} now\\n"):
    out.write(piece); out.flush(); time.sleep(0.05)
err.write("Authorization: Basic cGxhbnRlZDpyZWxheQ==\\nGET /o?sig=plantedRelaySig1\\n"); err.flush()
out.write("step 1 done\\nlast words {SECRET}"); out.flush()
if os.environ.get("LINGER"):
    time.sleep(60)
"""
PLANTED = (SECRET, "cGxhbnRlZDpyZWxheQ", "plantedRelaySig1")


@pytest.mark.slow  # starts a process
@pytest.mark.parametrize("attach", ["fds", "path"])
@pytest.mark.parametrize("end", ["exits", "killed"])
def test_logs_hold_only_redacted_text_at_every_moment(
    tmp_path: Path, attach: str, end: str
) -> None:
    redactor = Redactor({"DB_PASSWORD": SECRET})
    env = {"LINGER": "1"} if end == "killed" else {}
    with LogRelay(tmp_path, redactor) as relay:
        if attach == "fds":
            out, err = relay.fds
            args = [sys.executable, "-c", CHILD]
            child = subprocess.Popen(args, stdout=out, stderr=err, env=env)
        else:
            args = [sys.executable, "-c", CHILD, *map(str, relay.paths)]
            child = subprocess.Popen(args, env=env)
        deadline = time.monotonic() + 30
        while b"step 1 done" not in _read(tmp_path / "stdout.log"):
            assert time.monotonic() < deadline, "nothing relayed"
            for log in ("stdout.log", "stderr.log"):  # while it runs, too
                assert not any(s.encode() in _read(tmp_path / log) for s in PLANTED)
            time.sleep(0.02)
        if end == "killed":
            child.send_signal(signal.SIGKILL)
        child.wait(30)
    stdout, stderr = _read(tmp_path / "stdout.log"), _read(tmp_path / "stderr.log")
    assert not any(s.encode() in stdout + stderr for s in PLANTED)
    assert stdout.startswith(f"connecting with {REDACTED} now\nstep 1 done\n".encode())
    assert stdout.endswith(f"last words {REDACTED}".encode())  # the unfinished line too
    assert stderr.count(REDACTED.encode()) == 2
    assert not relay.dir.exists()


@pytest.mark.slow  # starts a process
def test_a_process_left_holding_the_pipes_does_not_hold_up_the_relay(tmp_path: Path) -> None:
    relay = LogRelay(tmp_path, Redactor({}))
    out, err = relay.fds
    held_s = patience(5.0)  # the pipes' holder outlives the bound below on a busy machine too
    sleeper = f"import time; time.sleep({held_s})"
    code = f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {sleeper!r}])"
    subprocess.run([sys.executable, "-c", code], stdout=out, stderr=err, check=True)
    began = time.monotonic()
    relay.close()
    assert time.monotonic() - began < 0.6 * held_s


def _read(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""


UNSHARE = shutil.which("unshare")
#: inside a private mount namespace: a small tmpfs, a comparison whose target floods its
#: stdout (12 MiB) past what the disk holds, then a check of what was left there
FULL_DISK = """
mount -t tmpfs -o size=3m tmpfs "$1" || exit 99
"$2" -m parity compare "$3" --target cpu+bf16 --steps 4 --repeats 1 --no-compliance --out "$1/c"
echo "rc=$?"
"$2" -c 'import sys; from parity.bundle import load_bundle as load
print("baseline", load(sys.argv[1]).status)' "$1/c/baseline/r00"
"""


@pytest.mark.slow
@pytest.mark.skipif(UNSHARE is None, reason="needs unshare(1) for a private tmpfs")
def test_a_full_disk_while_the_logs_are_relayed_is_one_line_and_keeps_the_other_side(
    tmp_path: Path,
) -> None:
    """Issue 53, class 9: the relay thread that writes a worker's logs meets a full disk:
    one line naming the side and the log (no thread traceback), the baseline's bundle,
    written before, complete."""
    from tests.conftest import FIXTURES

    disk = tmp_path / "disk"
    disk.mkdir()
    probe = subprocess.run(
        [str(UNSHARE), "-Urm", "sh", "-c", f'mount -t tmpfs -o size=3m tmpfs "{disk}"'],
        capture_output=True,
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs in a user namespace here: {probe.stderr!r}")
    workload = f"{FIXTURES / 'workloads.py'}:LoudOnReduced"
    env = {**os.environ, "PARITY_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [str(UNSHARE), "-Urm", "sh", "-c", FULL_DISK, "sh", str(disk), sys.executable, workload],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    said = [ln for ln in done.stderr.splitlines() if "phase " not in ln and "steps " not in ln]
    assert "Traceback" not in done.stderr and "Exception in thread" not in done.stderr, said
    assert said[-1] == (
        f"parity: target r00: could not write the bundle's stdout.log in {disk}/c/target: "
        "the disk is full: no space left on device (ENOSPC): free space (or fix the file "
        "system) and run again with --resume"
    ), said
    assert "rc=1" in done.stdout and "baseline ok" in done.stdout, done.stdout
