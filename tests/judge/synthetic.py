"""Synthetic side directories for verdict tests: seeded, fixed, no worker processes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import save_file

from parity.bundle import SCHEMA_VERSION, repeat_name, write_json
from parity.spec import parse_side
from parity.workloads import frozen

PARTS = {
    "config": "c" * 64,
    "weights": "w" * 64,
    "data": "d" * 64,
    "batch_size": 8,
    "seq_len": 64,
    "steps": 40,
    "seed": 0,
    "quality": "q" * 64,
}
LOSSES = [2.3 - 0.03 * i for i in range(40)]


def side_dir(
    root: Path,
    role: str,
    *,
    side: str,
    step_s: float,
    noise: float = 0.02,
    repeats: int = 3,
    seed: int = 0,
    losses: list[float] | None = None,
    logits_scale: float = 1.0,
    parts: dict[str, Any] | None = None,
    device_name: str = "cpu",
) -> Path:
    """A side with ``repeats`` bundles whose steady steps have median ``step_s``."""
    path = root / role
    rng = np.random.default_rng(seed)
    parts = {**PARTS, **(parts or {})}
    fingerprint = frozen.fingerprint(parts)
    logits = torch.linspace(-1, 1, 40).view(4, 10) * logits_scale
    for k in range(repeats):
        b = path / repeat_name(k)
        b.mkdir(parents=True)
        process = float(np.exp(rng.normal(0, noise / 2)))
        steady = (step_s * process * np.exp(rng.normal(0, noise, 39))).tolist()
        samples = [step_s * 20, *steady]
        median = float(np.median(steady))
        write_json(
            b / "manifest.json",
            {
                "schema_version": SCHEMA_VERSION,
                "status": "ok",
                "reason": None,
                "role": role,
                "repeat": k,
                "side": parse_side(side, check_device=False).to_dict(),
                "workload": {
                    "fingerprint": fingerprint,
                    "parts": parts,
                    "description": {
                        "name": "gpt-train",
                        "size": "tiny",
                        "kind": "train",
                        "batch_size": 8,
                    },
                },
                "environment": {
                    "torch": {"version": "2.13.0"},
                    "python": "3.11.7",
                    "device": {"name": device_name, "count": 1},
                },
            },
        )
        write_json(
            b / "metrics.json",
            {
                "step_samples_s": samples,
                "steady_from_step": 1,
                "summary": {"median": median, "iqr": median * noise},
                "throughput": {"samples_per_s": 8 / median, "tokens_per_s": 512 / median},
                "memory": {"steps": {"device": {"allocated": 1 << 20}, "host_peak_rss": 1 << 28}},
                "phases": {"first_step_s": step_s * 20, "warmup_steps": 0},
            },
        )
        write_json(b / "numerics.json", {"losses": losses or LOSSES})
        save_file({"eval_logits": logits}, str(b / "numerics.safetensors"))
    return path
