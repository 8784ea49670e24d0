"""parity: move a PyTorch workload between accelerators with evidence."""

from __future__ import annotations

__version__ = "0.1.0"
