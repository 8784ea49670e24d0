"""Which ops refuse ``torch.use_deterministic_algorithms(True)``.

``+deterministic`` turns deterministic algorithms on in warn-only mode, so a run goes on
past an op without a deterministic implementation; this recorder collects those ops
from PyTorch's warnings (``"<op> does not have a deterministic implementation..."``).
"""

from __future__ import annotations

import re
import warnings
from types import TracebackType
from typing import Any

_PATTERN = re.compile(r"^(.+?) does not have a deterministic implementation")


class RefusalRecorder:
    """Context manager collecting the names of ops that refused determinism."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.ops: list[str] = []
        self._ctx: Any = None

    def __enter__(self) -> RefusalRecorder:
        if self.enabled:
            self._ctx = warnings.catch_warnings(record=True)
            self._log = self._ctx.__enter__()
            warnings.simplefilter("always")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._ctx is None:
            return
        for w in self._log:
            match = _PATTERN.match(str(w.message))
            if match and match[1] not in self.ops:
                self.ops.append(match[1])
        self._ctx.__exit__(exc_type, exc, tb)
