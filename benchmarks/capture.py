"""The numerics probe's cost: file size and peak memory against a plain pass.

For ``gpt-train`` (default size ``base``, ~86M parameters) each measurement runs in its own
fresh process so that peak RSS (VmHWM) belongs to it alone:

- plain: load the frozen model, run the workload's probe forward and its backward;
- capture: the same through ``parity.probes.numerics.capture`` (hooks on every module,
  bounded samples of outputs, gradients and per-module values), then write the files.

Printed: the bytes of capture.json + capture.safetensors, and the peak RSS of both
processes, whole and as growth over the loaded state. Targets (issue 4): files <= 16 MB,
capture peak <= 1.5x the plain pass.

    python benchmarks/capture.py            # gpt-train base (minutes on 2 cores)
    python benchmarks/capture.py --quick    # gpt-train small
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, time
from pathlib import Path
import torch
from parity.probes import memory
from parity.probes.numerics import capture
from parity.bundle import CAPTURE, CAPTURE_TENSORS, write_doc
from parity.runner.load import load_model
from safetensors.torch import save_file
from parity.model.spec import SideSpec, WorkloadSpec
from parity.workloads import resolve
from parity.workloads.base import RunContext
from parity.workloads.frozen import freeze

mode, size, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
w = resolve(WorkloadSpec(name="gpt-train", size=size))
weights, data = freeze(w).load()
ctx = RunContext(device=torch.device("cpu"), side=SideSpec(device="cpu"), autocast_type="cpu")
model = load_model(w, weights)
memory.reset_host_peak()
loaded = memory.host_peak_rss()
t0 = time.perf_counter()
if mode == "plain":
    outs = w.probe(model, data)
    outs["loss"].backward()
else:
    summary, tensors = capture(w, lambda: model, data, ctx)
    write_doc(out / CAPTURE, summary)
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(out / CAPTURE_TENSORS))
seconds = time.perf_counter() - t0
print(json.dumps({"loaded": loaded, "peak": memory.host_peak_rss(), "seconds": seconds}))
"""


def child(mode: str, size: str, out: Path) -> dict[str, float]:
    res = subprocess.run(
        [sys.executable, "-c", CHILD, mode, size, str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(res.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="gpt-train small instead of base")
    args = parser.parse_args()
    size = "small" if args.quick else "base"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        child("plain", size, out)  # warm the frozen-workload cache outside the figures
        plain = child("plain", size, out)
        cap = child("capture", size, out)
        files = sum(p.stat().st_size for p in out.iterdir() if p.name.startswith("capture"))
    mib = 1024 * 1024
    grow_plain = plain["peak"] - plain["loaded"]
    grow_cap = cap["peak"] - cap["loaded"]
    print(f"gpt-train {size}: one probe forward + backward on the CPU")
    print(f"{'':24}{'plain':>12}{'capture':>12}{'ratio':>8}")
    print(
        f"{'peak RSS (MiB)':24}{plain['peak'] / mib:12.1f}{cap['peak'] / mib:12.1f}"
        f"{cap['peak'] / plain['peak']:8.3f}"
    )
    print(
        f"{'growth over loaded (MiB)':24}{grow_plain / mib:12.1f}{grow_cap / mib:12.1f}"
        f"{grow_cap / grow_plain:8.3f}"
    )
    print(f"{'seconds':24}{plain['seconds']:12.1f}{cap['seconds']:12.1f}")
    print(f"capture files: {files / mib:.2f} MiB (target <= 16 MB)")
    ok = files <= 16e6 and cap["peak"] <= 1.5 * plain["peak"]
    print(
        f"RESULT: capture files {files / 1e6:.2f} MB, peak ratio "
        f"{cap['peak'] / plain['peak']:.3f} (targets 16 MB, 1.5) {'PASS' if ok else 'FAIL'}"
    )


if __name__ == "__main__":
    main()
