"""The Python half of ``scripts/neuron-check``: the facts of a Trainium host as parity
reads them, and the report of the whole check.

    python scripts/neuron_check.py facts OUT            # -> OUT/facts.json, printed too
    python scripts/neuron_check.py summarise OUT WORK   # -> OUT/report.md, OUT/summary.txt

``facts`` runs in a process of its own and exits before any comparison starts (the Neuron
runtime reserves every NeuronCore for the process that starts it). Each fact records what
was seen, never what the documentation promises; a fact that could not be read says why.
``summarise`` reads the comparison's and the scan's output under WORK and judges the
checks parity depends on (PASS or FAIL), next to the facts (INFO).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

WATCHED = ("NEURON_", "TORCH_NEURONX_", "TORCH_DEVICE_BACKEND_AUTOLOAD", "COLLECTIVE_")
GIB = 1 << 30


def _watched(environ: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in sorted(environ.items()) if k.startswith(WATCHED)}


def _try(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}


def _started(neuron: Any) -> Any:
    fn = getattr(neuron, "is_initialized", None)
    return _try(fn) if callable(fn) else "torch.neuron has no is_initialized()"


def _runtime_starters(neuron: Any) -> dict[str, Any]:
    """Which of the calls a parent might make start the runtime (REFERENCE.md: unconfirmed):
    ``is_initialized()`` before and after each, in the order a careless parent would call
    them."""
    seen: dict[str, Any] = {"at import": _started(neuron)}
    for name, call in (
        ("get_device_name(0)", lambda: neuron.get_device_name(0)),
        ("is_available()", neuron.is_available),
        ("device_count()", neuron.device_count),
    ):
        value = _try(call)
        seen[name] = {"returned": value, "runtime started after": _started(neuron)}
    return seen


def _memory(torch: Any, neuron: Any) -> dict[str, Any]:
    """The counters after a 1 GiB allocation, after freeing it, and what parity makes of
    them (``MemoryCounters``: which were reported, and what "allocated" means)."""
    from parity.devices import get_device

    device = get_device("neuron", 0)
    device.reset_peak_memory()
    names = ("memory_allocated", "memory_reserved", "max_memory_allocated", "max_memory_reserved")

    def read() -> dict[str, Any]:
        neuron.synchronize()
        found = {n: _try(getattr(neuron, n)) for n in names}
        found["memory_stats"] = _try(neuron.memory_stats)
        return found

    block = torch.empty(GIB, dtype=torch.uint8, device="neuron")
    block.fill_(1)
    held = read()
    peaks = device.memory_peaks()
    del block
    freed = read()
    counters = peaks.counters
    return {
        "after a 1 GiB allocation": held,
        "after freeing it": freed,
        "parity's reading": {
            "allocated peak": peaks.allocated,
            "reserved peak": peaks.reserved,
            "counters": None
            if counters is None
            else {"allocated": counters.allocated, "reserved": counters.reserved},
            "meaning": counters.meaning if counters is not None else None,
        },
    }


def _tracking(torch: Any) -> dict[str, Any]:
    import importlib

    try:
        module = importlib.import_module("torch_neuronx")
    except ImportError as exc:
        return {"error": f"torch_neuronx does not import: {exc}"}
    x = torch.randn(64, 64, device="neuron")
    _ = torch.linalg.qr(x)  # a CPU fallback in the source copy's registrations
    _ = (x @ x).relu().sum()
    torch.neuron.synchronize()
    out: dict[str, Any] = {}
    for name in ("get_fallback_ops", "get_executed_ops"):
        fn = getattr(module, name, None)
        if not callable(fn):
            out[name] = "absent"
            continue
        value = _try(fn)
        out[name] = {
            "type": type(value).__name__,
            "repeats": isinstance(value, list) and len(value) != len(set(value)),
            "names": sorted(map(str, value)) if not isinstance(value, dict | str) else value,
        }
    return out


def _autocast(torch: Any) -> dict[str, Any]:
    from parity.probes.autocast_policy import classify, observe

    seen = observe(torch.device("neuron"), "neuron", torch.bfloat16)
    return {"dtypes": seen, "policy": classify(seen)}


def _compile(torch: Any) -> dict[str, Any]:
    """``dynamic=True`` refused? A mode other than default warned about?"""
    import warnings

    def f(t: Any) -> Any:
        return torch.sin(t) * 2

    out: dict[str, Any] = {}
    torch._dynamo.reset()
    try:
        torch.compile(f, backend="neuron", dynamic=True)(torch.randn(7, device="neuron"))
        out["dynamic=True"] = "compiled"
    except Exception as exc:
        out["dynamic=True"] = "refused: " + " ".join(str(exc).split())[:300]
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        out["mode=max-autotune"] = _try(
            lambda: (
                torch.compile(f, backend="neuron", mode="max-autotune")(
                    torch.ones(3, device="neuron")
                )
                .cpu()
                .tolist()
            )
        )
    out["warnings"] = [str(w.message)[:200] for w in said]
    return out


def _cpu_backward_starts_runtime() -> Any:
    """A CPU-only process that runs a backward pass (a baseline or reference worker on a
    Trainium host): does it start the Neuron runtime (autograd counts every device type's
    devices)? Asked in a fresh process."""
    code = (
        "import torch\n"
        "from parity.plugins import load_plugins\n"
        "load_plugins()\n"
        "x = torch.randn(8, 8, requires_grad=True)\n"
        "(x @ x).sum().backward()\n"
        "n = getattr(torch, 'neuron', None)\n"
        "f = getattr(n, 'is_initialized', None)\n"
        "print(f() if callable(f) else 'unknown')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=False
    )
    return done.stdout.strip().splitlines()[-1] if done.returncode == 0 else done.stderr[-300:]


def _specs() -> dict[str, Any]:
    from parity.devices import get_device, specs

    device = get_device("neuron", 0)
    key = device.spec_key()
    entry = specs.lookup(key)
    price = specs.price_for(key)
    peak = specs.peak_flops(key, "bf16")
    return {
        "key": {"names": list(key.names), "logical_nc_config": key.logical_nc_config},
        "entry": entry.label if entry else None,
        "bf16 peak per framework device": peak.flops if peak else None,
        "unit": peak.unit if peak else None,
        "memory per framework device": specs.device_memory(key),
        "price": None
        if price is None
        else {"source": price.source_text(), "framework devices": price.framework_devices},
    }


def facts(out: Path) -> int:
    before = _watched(dict(os.environ))
    t0 = time.perf_counter()
    import torch

    imported_s = time.perf_counter() - t0
    from parity.plugins import load_plugins

    load_plugins()  # the test device on a dry run; torch_neuronx autoloads on a real host
    after = _watched(dict(os.environ))
    neuron = getattr(torch, "neuron", None)
    found: dict[str, Any] = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "import torch (s)": round(imported_s, 2),
        "packages": _packages(),
        "environment before import": before,
        "environment after import": after,
        "changed by import": {
            k: [before.get(k), v] for k, v in after.items() if before.get(k) != v
        },
        "privateuse1 backend": torch._C._get_privateuse1_backend_name(),
    }
    if neuron is None:
        found["error"] = "torch.neuron does not exist: torch-neuronx (2.13.x/2.14.x) is not loaded"
        _write(out, found)
        return 2
    steps: dict[str, Callable[[], Any]] = {
        "runtime starters": lambda: _runtime_starters(neuron),
        "names": lambda: {
            "get_device_name(0)": neuron.get_device_name(0),
            "properties": _props(neuron),
            "device_count()": neuron.device_count(),
        },
        "spec table": _specs,
        "memory": lambda: _memory(torch, neuron),
        "op tracking": lambda: _tracking(torch),
        "autocast": lambda: _autocast(torch),
        "torch.compile": lambda: _compile(torch),
        "a CPU backward starts the runtime": _cpu_backward_starts_runtime,
    }
    for name, step in steps.items():
        try:
            found[name] = step()
        except Exception:
            found[name] = {"error": traceback.format_exc(limit=3)[-800:]}
        print(f"{name}: {json.dumps(found[name], default=str)[:600]}", flush=True)
    _write(out, found)
    return 0


def _props(neuron: Any) -> dict[str, Any]:
    p = neuron.get_device_properties(0)
    return {"name": getattr(p, "name", None), "total_memory": getattr(p, "total_memory", None)}


def _packages() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in ("torch-neuronx", "neuronx-cc", "nki", "nrtpy", "libneuronxla", "torch-xla"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def _write(out: Path, found: dict[str, Any]) -> None:
    (out / "facts.json").write_text(json.dumps(found, indent=2, default=str) + "\n")


# -- the report ------------------------------------------------------------------------------


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _checks(work: Path) -> list[tuple[str, str, str]]:
    """(result, check, detail) of the comparison and the scan."""
    rows: list[tuple[str, str, str]] = []

    def check(ok: bool, name: str, detail: str) -> None:
        rows.append(("PASS" if ok else "FAIL", name, detail))

    cmp = work / "compare"
    verdict = _load(cmp / "verdict.json")
    check(verdict is not None, "compare gpt-train cpu vs neuron+bf16 wrote a verdict", str(cmp))
    target = _load(cmp / "target" / "r00" / "manifest.json")
    metrics = _load(cmp / "target" / "r00" / "metrics.json")
    if target is None or metrics is None or verdict is None:
        return rows
    device = target["environment"]["device"]
    peak = (metrics.get("flops") or {}).get("peak")
    check(
        peak is not None,
        "MFU against the spec table's per-core peak",
        f"{peak['device']}: {peak['flops']:.4g} FLOP/s per {peak['unit']}, MFU "
        f"{metrics['flops'].get('mfu')}"
        if peak
        else f"none for {device.get('model')!r}/{device['name']!r}: add them to specs.toml",
    )
    counters = metrics["memory"]["steps"]["device"].get("counters")
    check(
        counters is not None and counters.get("allocated") == "reported",
        "device memory counters recorded with their meaning",
        json.dumps(counters),
    )
    rows.append(
        ("INFO", "device memory", f"{device.get('memory_bytes')} B ({device.get('memory_source')})")
    )
    rows.append(
        ("INFO", "launch blocking after import", str(device["flags"].get("launch_blocking")))
    )
    resolved = target.get("resolved") or {}
    expected = _load(cmp / "expected" / "manifest.json")
    policy = resolved.get("autocast_policy")
    want = "cpu+bf16" + (f"+autocast={policy}" if policy not in (None, "cpu") else "")
    got = expected["side"]["spec"] if expected else None
    check(
        got == want,
        "the expected-error run follows the target's autocast",
        f"{got} (target: {policy}, {resolved.get('autocast_observed')})",
    )
    price = ((verdict.get("cost") or {}).get("target") or {}).get("price")
    rows.append(("INFO", "target price", json.dumps(price)))
    rows.append(("INFO", "verdict", "PASS" if verdict.get("passed") else "FAIL (see verdict.json)"))
    ops = _load(work / "scan" / "ops.json")
    check(ops is not None, "scan gpt-train on neuron wrote ops.json", str(work / "scan"))
    if ops is not None:
        fb = ops.get("fallbacks") or {}
        rows.append(("INFO", "fallbacks: backend record", json.dumps(fb.get("backend"))[:400]))
        own = [f["op"] for f in fb.get("no_device_kernel") or []]
        rows.append(
            ("INFO", "fallbacks: the scan's own (no device kernel)", ", ".join(own) or "none")
        )
    return rows


def _parents(work: Path) -> list[tuple[str, str, str]]:
    """Where the device logs which processes started its runtime (the test device: a dry
    run), whether ``parity compare`` or ``parity scan`` itself was one of them."""
    log = work / "starts.log"
    if not log.exists():
        return []
    started = {line.split()[0] for line in log.read_text().splitlines() if line.strip()}
    rows = []
    for command in ("compare", "scan"):
        pid = (
            (work / f"{command}.pid").read_text().strip()
            if (work / f"{command}.pid").exists()
            else None
        )
        ok = pid is not None and pid not in started
        rows.append(
            (
                "PASS" if ok else "FAIL",
                f"parity {command} never started the runtime itself",
                f"pid {pid}; started: {sorted(started)}",
            )
        )
    return rows


def summarise(out: Path, work: Path) -> int:
    found = _load(out / "facts.json") or {}
    rows = _checks(work) + _parents(work)
    lines = ["# neuron-check", "", "## Checks", "", "| result | check | detail |", "|---|---|---|"]
    lines += [f"| {r} | {c} | {d.replace('|', '/')} |" for r, c, d in rows]
    lines += [
        "",
        "## Facts (as read on this host)",
        "",
        "```json",
        json.dumps(found, indent=2, default=str),
        "```",
        "",
    ]
    (out / "report.md").write_text("\n".join(lines))
    failed = [r for r in rows if r[0] == "FAIL"]
    with (out / "summary.txt").open("a") as f:
        for r, c, d in rows:
            f.write(f"[{r}] {c}: {d[:300]}\n")
        result = "FAIL" if failed or "error" in found else "PASS"
        f.write(f"RESULT {result}: {len(failed)} check(s) failed\n")
    return 1 if failed or "error" in found else 0


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "facts":
        return facts(Path(argv[1]))
    if len(argv) >= 3 and argv[0] == "summarise":
        return summarise(Path(argv[1]), Path(argv[2]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
