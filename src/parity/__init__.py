"""parity: move a PyTorch workload between accelerators with evidence.

    >>> import parity
    >>> result = parity.compare("mlp-train", target="cpu+bf16", repeats=1)
    >>> result.passed, result.to_dataframe()

The public names are in ``__all__``; the API loads lazily, so ``import parity`` stays
light (no torch); modules take the version from ``parity.version``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parity.lazy import lazy_names as _lazy_names
from parity.version import __version__

if TYPE_CHECKING:
    from parity.api import ComparisonResult, CurveResult, RunResult, compare, keep_zygotes, run
    from parity.errors import ParityError, UsageError

_LAZY = {
    "ComparisonResult": "parity.api",
    "CurveResult": "parity.api",
    "ParityError": "parity.errors",
    "RunResult": "parity.api",
    "UsageError": "parity.errors",
    "compare": "parity.api",
    "keep_zygotes": "parity.api",
    "run": "parity.api",
}

__all__ = [
    "ComparisonResult",
    "CurveResult",
    "ParityError",
    "RunResult",
    "UsageError",
    "__version__",
    "compare",
    "keep_zygotes",
    "run",
]


__getattr__ = _lazy_names("parity", _LAZY)
