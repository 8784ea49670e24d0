"""The exception tree of parity.

Every error a user can cause maps to exit code 2 with one line that names the
problem and the fix; a side that fails at run time is not an exception of the
parent but a recorded result (exit code 1 through the verdict).

    ParityError                      base of everything parity raises on purpose
    ├── UsageError                   bad input: exit code 2, one clear line
    │   ├── SpecError                malformed or unknown side/workload spec or option
    │   ├── WorkloadError            unknown workload, bad size knob, broken user workload
    │   ├── BundleError              missing, corrupt, tampered or newer-schema bundle
    │   └── ContractError            the two sides did not run the same frozen workload
    └── SideError                    a worker process failed (crash, timeout, exception)
"""

from __future__ import annotations


class ParityError(Exception):
    """Base class of the errors parity raises on purpose."""


class UsageError(ParityError):
    """Bad input or usage: the CLI prints the message on one line and exits with 2."""


class SpecError(UsageError):
    """A side spec or workload spec that cannot be parsed or names something unknown."""


class WorkloadError(UsageError):
    """An unknown workload, a size knob out of range, or a user workload that is broken."""


class BundleError(UsageError):
    """A run bundle that is missing, unreadable, corrupt, tampered with or too new."""


class ContractError(UsageError):
    """The two bundles did not run the same frozen workload and no difference was allowed."""


class SideError(ParityError):
    """A worker process failed; carries the reason recorded in its bundle."""
