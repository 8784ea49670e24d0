"""scripts/gpu-check's bookkeeping: one summary line per step, the verdicts in one JSON
file, the logs in one tarball, and the closing RESULT line. Standard library only, so it
starts in a blink on any Python 3.10+.

    gpu_check_report.py compare OUT NAME RC VERDICT STDERR   # a compare's line; keeps its verdict
    gpu_check_report.py pytest XML RC                        # lines from the JUnit XML
    gpu_check_report.py mfu BUNDLE RC LOW HIGH [--dry]       # the MFU line
    gpu_check_report.py skip STEP WHY                        # a step not run
    gpu_check_report.py pack OUT WORK                        # logs.tgz
    gpu_check_report.py result SUMMARY [--dry]               # RESULT line; exit 0 or 1

Every line starts with its status: [PASS], [FAIL], [SKIP] or [DRY] (a dry run's figure,
reported but not judged: the CPU stood in for CUDA).
"""

from __future__ import annotations

import json
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

#: bundle files small enough to carry back and worth reading after a failure
LOG_FILES = ("manifest.json", "events.jsonl", "stdout.log", "stderr.log")
TIMED_OUT = (124, 137)


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:])


def _pct(x: float) -> str:
    return f"{x:.2%}" if x < 0.01 else f"{x:.1%}"


def _mfu_text(flops: dict[str, Any]) -> str:
    if flops.get("mfu") is None:
        return "no peak known"
    peak = flops["peak"]
    per = peak.get("unit") or flops.get("peak_unit") or "device"
    return f"{_pct(flops['mfu'])} of {peak['flops'] / 1e12:.0f} TFLOP/s {peak['dtype']} per {per}"


def compare_line(out: Path, name: str, rc: int, verdict_file: Path, stderr: Path) -> str:
    """Judge one compare by its verdict (both sides ran, quality passed) and keep it."""
    try:
        verdict: dict[str, Any] | None = json.loads(verdict_file.read_text())
    except (OSError, ValueError):
        verdict = None
    store = out / "verdicts.json"
    kept = json.loads(store.read_text()) if store.is_file() else {}
    kept[name] = {"exit": rc, "verdict": verdict, "stderr_tail": _tail(stderr, 20)}
    tmp = store.with_suffix(".tmp")
    tmp.write_text(json.dumps(kept, indent=1))
    tmp.replace(store)
    if rc in TIMED_OUT:
        return f"[FAIL] compare {name}: stopped at its time budget (exit {rc})"
    if verdict is None:
        return f"[FAIL] compare {name}: no verdict (exit {rc}): {_tail(stderr)}"
    failed = [g for g in verdict.get("gates", []) if not g.get("passed")]
    speed = verdict.get("speed") or {}
    interval = speed.get("interval") or {}
    figures = [f"numerics gate {(verdict.get('numerics') or {}).get('precision', '?')}"]
    if speed.get("ratio") is not None:
        figures.append(
            f"time ratio {speed['ratio']:.3g} [{interval.get('low', 0):.3g}, "
            f"{interval.get('high', 0):.3g}]"
        )
    target_flops = (verdict.get("sides", {}).get("target") or {}).get("flops") or {}
    if target_flops.get("achieved_flops"):
        figures.append(f"target MFU {_mfu_text(target_flops)}")
    if failed:
        why = "; ".join(f"{g['name']}: {g.get('detail', '')}" for g in failed)
        return f"[FAIL] compare {name}: {why} ({', '.join(figures)})"
    sides = (verdict.get("sides") or {}).items()
    over = [r for r, s in sides if (((s or {}).get("flops") or {}).get("mfu") or 0) > 1]
    if over:  # faster than the device's peak: the FLOPs or the peak's format are wrong
        return (
            f"[FAIL] compare {name}: MFU above 100% on the {', '.join(over)} ({', '.join(figures)})"
        )
    return f"[PASS] compare {name}: quality passed ({', '.join(figures)})"


def pytest_lines(xml: Path, rc: int) -> list[str]:
    """A line for the run, and one per test that failed or recorded figures."""
    try:
        root = ET.parse(xml).getroot()
    except (OSError, ET.ParseError):
        return [f"[FAIL] pytest -m cuda: no JUnit XML (exit {rc})"]
    cases = root.findall(".//testcase")
    lines, counts = [], {"passed": 0, "failed": 0, "skipped": 0}
    reasons: set[str] = set()
    for case in cases:
        test = case.get("name", "?")
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        skipped = case.find("skipped")
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        if problem is not None:
            counts["failed"] += 1
            message = (problem.get("message") or "").splitlines()[:1]
            lines.append(f"[FAIL] {test}: {' '.join(message)} {_props(props)}".rstrip())
        elif skipped is not None:
            counts["skipped"] += 1
            reasons.add((skipped.get("message") or "").removeprefix("Skipped: "))
        else:
            counts["passed"] += 1
            if props:
                lines.append(f"[PASS] {test}: {_props(props)}")
    head = ", ".join(f"{n} {k}" for k, n in counts.items())
    if counts["failed"] or rc not in (0, 5):
        status = "FAIL"
    elif counts["passed"]:
        status = "PASS"
    else:
        status = "SKIP"
    why = f" ({'; '.join(sorted(reasons))})" if reasons else ""
    return [f"[{status}] pytest -m cuda: {head}{why}", *lines]


def _props(props: dict[str | None, str | None]) -> str:
    return " ".join(f"{k}={v}" for k, v in props.items())


def mfu_line(bundle: Path, rc: int, low: float, high: float, dry: bool) -> str:
    """The MFU of the bundle's run against its device's peak, judged for plausibility."""
    try:
        manifest = json.loads((bundle / "manifest.json").read_text())
        flops = json.loads((bundle / "metrics.json").read_text())["flops"]
    except (OSError, ValueError, KeyError):
        return f"[FAIL] mfu: no bundle at {bundle.name} (exit {rc})"
    side = manifest.get("side", {}).get("spec", "?")
    device = manifest.get("environment", {}).get("device", {}).get("name", "?")
    spec = manifest.get("workload", {}).get("spec", {})
    what = f"mfu {spec.get('name', '?')} {spec.get('size', '?')} on {side} ({device})"
    if dry:
        return f"[DRY] {what}: {_mfu_text(flops)}; a dry run's figure is not judged"
    if flops.get("mfu") is None:
        return f"[FAIL] {what}: no peak known: add its exact name to devices/specs.toml"
    ok = low <= flops["mfu"] <= high
    verdict = "PASS" if ok else "FAIL"
    return f"[{verdict}] {what}: {_mfu_text(flops)} (plausible: {low:.0%} to {high:.0%})"


def pack(out: Path, work: Path) -> str:
    """The compares' stderr and their bundles' small logs, in one tarball."""
    files = sorted(work.glob("*.err"))
    for name in LOG_FILES:
        files += sorted(work.glob(f"runs/**/{name}"))
    with tarfile.open(out / "logs.tgz", "w:gz") as tar:
        for f in files:
            tar.add(f, arcname=str(f.relative_to(work)))
    return f"logs.tgz: {len(files)} files, {(out / 'logs.tgz').stat().st_size / 1024:.0f} KiB"


def result(summary: Path, dry: bool) -> tuple[str, int]:
    lines = summary.read_text().splitlines() if summary.is_file() else []
    count = {s: sum(line.startswith(f"[{s}]") for line in lines) for s in ("PASS", "FAIL", "SKIP")}
    # a dry run skips what needs CUDA; a GPU run that skipped a step did not settle it
    ok = count["FAIL"] == 0 and (dry or count["SKIP"] == 0) and count["PASS"] > 0
    mode = " (dry run: the CPU stood in for CUDA)" if dry else ""
    text = (
        f"RESULT: gpu-check {count['PASS']} passed, {count['FAIL']} failed, "
        f"{count['SKIP']} skipped{mode}"
    )
    return text, 0 if ok else 1


def main(argv: list[str]) -> int:
    cmd, args = argv[0], argv[1:]
    dry = "--dry" in args
    args = [a for a in args if a != "--dry"]
    if cmd == "compare":
        print(compare_line(Path(args[0]), args[1], int(args[2]), Path(args[3]), Path(args[4])))
    elif cmd == "pytest":
        print("\n".join(pytest_lines(Path(args[0]), int(args[1]))))
    elif cmd == "mfu":
        print(mfu_line(Path(args[0]), int(args[1]), float(args[2]), float(args[3]), dry))
    elif cmd == "skip":
        print(f"[SKIP] {args[0]}: {args[1]}")
    elif cmd == "pack":
        print(pack(Path(args[0]), Path(args[1])))
    elif cmd == "result":
        text, status = result(Path(args[0]), dry)
        print(text)
        return status
    else:
        print(f"gpu_check_report.py: unknown command {cmd!r}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
